package offline

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/costmodel/learn"
)

// SimOptions drive Simulate.
type SimOptions struct {
	Calls int // calls to simulate
	// Noise is the sigma of each rank's slowdown: its time is the true
	// cost times exp(Noise*|N(0,1)|) (0.05: about 4% on average).
	// Interference only slows a call down: no rank runs a plan faster
	// than its cost.
	Noise    float64
	Outliers float64 // probability that a rank's sample is multiplied by 2..5
	// Skew is arrival imbalance, as a multiple of the call's true cost:
	// each rank arrives a uniform 0..Skew*cost late, so every rank's time
	// also holds its wait for the last one (the time the engine sees
	// when it times a call from each rank's own entry).
	Skew float64
	// Gap is the program's own time before each call, in seconds: each
	// rank computes a uniform 0..Gap first, whatever the arm (the skew
	// pattern of dpmlbench-c), so a rank's entry lags by that much more.
	// Unlike Skew it does not grow with the plan's cost.
	Gap float64
	// Spread, if set, makes an arm's ranks leave at different times, as a
	// tree's do (its root first, its deepest leaves last): rank r of n
	// leaves Spread(arm) x (n-1-r)/(n-1) of the call's time early, so
	// rank n-1 leaves at the call's true cost and rank 0 soonest. The
	// true cost (what the regret counts) is the last exit.
	Spread func(costmodel.Arm) float64
	// Tail, if set, makes every rank but the last leave Tail(arm) x the
	// call's time before the last one does (the last leaves at the true
	// cost): a plan whose last rank lags the rest, as the device's trees
	// did at small sizes.
	Tail func(costmodel.Arm) float64
	// B2B chains the calls back to back: each rank enters a call when it
	// left the one before (then Skew adds to that), so a plan's own exit
	// spread becomes the next call's arrival spread, and the program's
	// time per call is the true cost (the last rank's exit after the last
	// entry, which is the last rank's period).
	B2B bool
	// Trail, if set, is the factor a call of arm a costs after a call of
	// arm prev (the first call after the zero Arm: no call before): a plan that leaves the machine as
	// its next call wants it (flag lines in the right caches, ranks
	// arriving in the order it releases them) runs faster after itself
	// than after another plan. The regret's best arm is the best back
	// to back, cost x Trail(x, x).
	Trail func(prev, a costmodel.Arm) float64
	Seed  uint64
	// Overhead is what the tuner costs each rank per recorded call, in
	// seconds (the engine's commit steps and timed trips): before each
	// commit every rank notes it times the calls recorded since the last
	// (Tuner.NoteOverhead).
	Overhead float64
}

// SimResult is the outcome of a simulated run.
type SimResult struct {
	Best      costmodel.Arm   // arm of least true cost at the last call
	BestCost  float64         // its cost
	Final     costmodel.Arm   // the arm chosen after the last call
	FinalCost float64         // its true cost at the last call
	Chosen    []costmodel.Arm // arm of each call
	// Regret[i] is the cumulative regret after call i: the sum over calls
	// 0..i of cost(chosen) - cost(best arm at that call), in seconds.
	Regret         []float64
	SettledAt      int // calls when the key last froze (-1: still exploring)
	FirstSettledAt int // calls when the key first froze (-1: never)
	Explored       int // distinct arms tried
	Commits        int // commit steps (max-allreduces the engine would have run)
	Recorded       int // calls the tuner timed (each costs it Overhead)
	Episodes       int // explorations (1 + re-explorations on drift)
}

// commitAll runs the commit step of the engine on simulated ranks: the
// max-allreduce of every rank's Pending, the sum-allreduce of every rank's
// Exits, and Commit on every rank with both results.
func commitAll(ranks []*learn.Tuner, maxed *[]float64, summed *[]int64) error {
	*maxed = append((*maxed)[:0], ranks[0].Pending()...)
	for _, t := range ranks[1:] {
		p := t.Pending()
		if len(p) != len(*maxed) {
			return fmt.Errorf("pending batches differ in length")
		}
		for i, v := range p {
			(*maxed)[i] = math.Max((*maxed)[i], v)
		}
	}
	*summed = (*summed)[:0]
	for r, t := range ranks {
		if t.Second() == learn.SecondNone {
			break
		}
		x := t.Exits(*maxed)
		if r == 0 {
			*summed = append(*summed, x...)
			continue
		}
		if len(x) != len(*summed) {
			return fmt.Errorf("exit batches differ in length")
		}
		for i, v := range x {
			(*summed)[i] = t.Second().Combine((*summed)[i], v)
		}
	}
	for _, t := range ranks {
		var sum []int64
		if t.Second() != learn.SecondNone {
			sum = append(sum, *summed...)
		}
		if err := t.Commit(append([]float64(nil), *maxed...), sum); err != nil {
			return err
		}
	}
	return nil
}

// Simulate runs the tuners of len(ranks) simulated ranks on one key against
// a synthetic cost surface: cost(call, arm) is the true time of arm at call
// number `call` (a surface may change over time to test drift). Each rank
// measures the true time with its own noise; when Record asks for a commit,
// the ranks' Pending vectors are combined by elementwise max, as the
// engine's max-allreduce does, and committed on every rank. It fails if the
// ranks ever choose differently, or disagree on when to commit.
func Simulate(ranks []*learn.Tuner, key costmodel.Key, cost func(call int, a costmodel.Arm) float64, o SimOptions) (SimResult, error) {
	var res SimResult
	if len(ranks) == 0 {
		return res, fmt.Errorf("offline: Simulate with no ranks")
	}
	arms := ranks[0].Arms(key)
	rngs := make([]*rand.Rand, len(ranks))
	for r := range rngs {
		rngs[r] = rand.New(rand.NewPCG(o.Seed, uint64(r)+1))
	}
	skewRng := rand.New(rand.NewPCG(o.Seed, 0))
	var lags []float64
	seen := map[costmodel.Arm]bool{}
	var cum float64
	var maxed []float64
	var summed []int64
	clock := make([]float64, len(ranks)) // B2B: each rank's last exit
	// base: the time the call starts at, without B2B (the calls follow
	// each other, each after the slowest rank of the one before), so
	// that the samples' times run forward as a program's do: the tuner
	// reads a settled key's call rate from them (Config.SamplePeriod).
	base := 0.0
	timed := 0             // calls recorded since the last commit (the same on every rank)
	var prev costmodel.Arm // the arm of the call before (Trail)
	for call := 0; call < o.Calls; call++ {
		a := ranks[0].Choose(key)
		for r := 1; r < len(ranks); r++ {
			if b := ranks[r].Choose(key); b != a {
				return res, fmt.Errorf("offline: call %d: rank 0 chose %v, rank %d chose %v", call, a, r, b)
			}
		}
		seen[a] = true
		best := math.Inf(1)
		for _, x := range arms {
			bx := cost(call, x)
			if o.Trail != nil {
				bx *= o.Trail(x, x)
			}
			best = math.Min(best, bx)
		}
		c := cost(call, a)
		if o.Trail != nil {
			c *= o.Trail(prev, a)
		}
		prev = a
		cum += c - best
		res.Chosen = append(res.Chosen, a)
		res.Regret = append(res.Regret, cum)
		commit := false
		lags = lags[:0]
		last := math.Inf(-1)
		for r := range ranks {
			lag := 0.0
			if o.B2B {
				lag = clock[r]
			}
			if o.Skew > 0 {
				lag += o.Skew * c * skewRng.Float64()
			}
			if o.Gap > 0 {
				lag += o.Gap * skewRng.Float64()
			}
			lags = append(lags, lag)
			last = max(last, lag)
		}
		if ranks[0].Timed(key) {
			timed++
			res.Recorded++
		}
		for r, t := range ranks {
			v := c * math.Exp(o.Noise*math.Abs(rngs[r].NormFloat64()))
			if o.Spread != nil && len(ranks) > 1 {
				v *= 1 - o.Spread(a)*float64(len(ranks)-1-r)/float64(len(ranks)-1)
			}
			if o.Tail != nil && r < len(ranks)-1 {
				v -= o.Tail(a) * c
			}
			if o.Outliers > 0 && rngs[r].Float64() < o.Outliers {
				v *= 2 + 3*rngs[r].Float64()
			}
			// Enters at its lag; leaves once the last rank has
			// arrived and the plan has run (its own noise).
			clock[r] = last + v
			cm := t.RecordSpan(key, a, base+lags[r], base+last+v)
			if r == 0 {
				commit = cm
			} else if cm != commit {
				return res, fmt.Errorf("offline: call %d: ranks disagree on committing", call)
			}
		}
		if !o.B2B {
			base += slices.Max(clock) // the next call starts after the slowest rank's exit
		}
		if !commit {
			continue
		}
		for _, t := range ranks {
			t.NoteOverhead(o.Overhead * float64(timed))
		}
		timed = 0
		if err := commitAll(ranks, &maxed, &summed); err != nil {
			return res, fmt.Errorf("offline: call %d: %w", call, err)
		}
		res.Commits++
	}
	last := max(o.Calls-1, 0)
	res.BestCost = math.Inf(1)
	for _, x := range arms {
		c := cost(last, x)
		if o.Trail != nil {
			c *= o.Trail(x, x)
		}
		if c < res.BestCost {
			res.Best, res.BestCost = x, c
		}
	}
	res.Final = ranks[0].Choose(key)
	res.FinalCost = cost(last, res.Final)
	if o.Trail != nil {
		res.FinalCost *= o.Trail(res.Final, res.Final)
	}
	in, _ := ranks[0].Info(key)
	res.SettledAt = -1
	if in.State == learn.Frozen {
		res.SettledAt = int(in.SettledAt)
	}
	res.FirstSettledAt = int(in.FirstSettledAt)
	res.Explored = len(seen)
	res.Episodes = in.Episodes
	return res, nil
}

// ModelSurface returns a cost surface that prices arms with model m for key
// k's representative size, for Simulate (with segBytes the segment size).
func ModelSurface(m costmodel.Model, k costmodel.Key, segBytes int) func(int, costmodel.Arm) float64 {
	n, lay := k.Bytes(), k.Layout()
	return func(_ int, a costmodel.Arm) float64 {
		a.SegmentBytes = segBytes
		return m.Breakdown(a, n, lay, k.Elem).Total
	}
}

// WriteCSV writes the regret-over-calls series as CSV rows
// "label,call,arm,cum_regret_s,cum_regret_best_calls" (the last column is
// the regret in units of one call of the best arm), with a header when
// header is true: the input of a regret plot.
func (r *SimResult) WriteCSV(w io.Writer, label string, header bool) error {
	bw := bufio.NewWriter(w)
	if header {
		fmt.Fprintln(bw, "label,call,arm,cum_regret_s,cum_regret_best_calls")
	}
	for i, g := range r.Regret {
		fmt.Fprintf(bw, "%s,%d,%s,%g,%g\n", label, i, r.Chosen[i], g, g/r.BestCost)
	}
	return bw.Flush()
}
