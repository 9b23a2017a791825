package bench

import (
	"fmt"
	"github.com/dpmlgo/dpml/internal/tools/results"
	"math"
	"sort"
	"time"
)

// Summarize computes the summary of xs without modifying it. NaN samples are
// an error: they mean a timer or a reduction went wrong.
func Summarize(xs []float64) (results.Summary, error) {
	if len(xs) == 0 {
		return results.Summary{}, fmt.Errorf("summarize: no samples")
	}
	s := make([]float64, len(xs))
	copy(s, xs)
	sum := 0.0
	for i, x := range s {
		if math.IsNaN(x) {
			return results.Summary{}, fmt.Errorf("summarize: sample %d is NaN", i)
		}
		sum += x
	}
	sort.Float64s(s)
	n := len(s)
	mean := sum / float64(n)
	var ss float64
	for _, x := range s {
		d := x - mean
		ss += d * d
	}
	sd := 0.0
	if n > 1 {
		sd = math.Sqrt(ss / float64(n-1))
	}
	return results.Summary{
		N:      n,
		Min:    s[0],
		Max:    s[n-1],
		Mean:   mean,
		Median: quantileSorted(s, 0.5),
		P25:    quantileSorted(s, 0.25),
		P75:    quantileSorted(s, 0.75),
		P99:    quantileSorted(s, 0.99),
		Stddev: sd,
	}, nil
}

// Quantile returns the q-quantile (0 <= q <= 1) of xs by linear
// interpolation between closest ranks; xs need not be sorted. It returns NaN
// for an empty slice.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := make([]float64, len(xs))
	copy(s, xs)
	sort.Float64s(s)
	return quantileSorted(s, q)
}

func quantileSorted(s []float64, q float64) float64 {
	if q <= 0 {
		return s[0]
	}
	if q >= 1 {
		return s[len(s)-1]
	}
	h := q * float64(len(s)-1)
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (h-lo)*(s[i+1]-s[i])
}

// MaxOverRanks is the reference (single-process) form of what the sweep does
// with MPI_Allreduce(MPI_MAX): perRank[r][i] is rank r's time for iteration
// i; the result's element i is the slowest rank's time for iteration i. All
// rows must have the same length.
func MaxOverRanks(perRank [][]float64) ([]float64, error) {
	if len(perRank) == 0 {
		return nil, fmt.Errorf("max over ranks: no ranks")
	}
	n := len(perRank[0])
	out := make([]float64, n)
	copy(out, perRank[0])
	for r, row := range perRank[1:] {
		if len(row) != n {
			return nil, fmt.Errorf("max over ranks: rank %d has %d samples, rank 0 has %d", r+1, len(row), n)
		}
		for i, x := range row {
			if x > out[i] {
				out[i] = x
			}
		}
	}
	return out, nil
}

// Policy decides the number of timed iterations of one (size, variant)
// point from the warm-up timing.
type Policy struct {
	Target time.Duration // wanted total timed duration per point
	Min    int           // at least this many iterations
	Max    int           // at most this many iterations
}

// DefaultPolicy is small enough for the 2-node x 2-rank emulated default
// sweep on a 2-core machine to finish within about two minutes.
var DefaultPolicy = Policy{Target: 100 * time.Millisecond, Min: 10, Max: 1000}

// Validate reports an unusable policy.
func (p Policy) Validate() error {
	switch {
	case p.Min < 1:
		return fmt.Errorf("iteration policy: min iterations %d < 1", p.Min)
	case p.Max < p.Min:
		return fmt.Errorf("iteration policy: max iterations %d < min %d", p.Max, p.Min)
	case p.Target < 0:
		return fmt.Errorf("iteration policy: negative time target %v", p.Target)
	}
	return nil
}

// Iterations returns ceil(Target / perIter) clamped to [Min, Max]; perIter
// is the estimated duration of one iteration in seconds (from the warm-up).
// A non-positive or NaN estimate gives Max (the call is too fast to time).
func (p Policy) Iterations(perIter float64) int {
	if math.IsNaN(perIter) || perIter <= 0 {
		return p.Max
	}
	n := math.Ceil(p.Target.Seconds() / perIter)
	if n < float64(p.Min) {
		return p.Min
	}
	if n > float64(p.Max) {
		return p.Max
	}
	return int(n)
}

// WarmupEstimate turns rank 0's warm-up iteration times (seconds) into a
// per-iteration estimate: the median of all but the first (cold) iteration,
// or the only sample when there is one. It returns 0 for no samples.
func WarmupEstimate(times []float64) float64 {
	switch len(times) {
	case 0:
		return 0
	case 1, 2:
		return times[len(times)-1]
	}
	return Quantile(times[1:], 0.5)
}
