package miniamr

import (
	"fmt"
	"math"
	"time"

	"github.com/dpmlgo/dpml/mpi"
)

// Stats are this rank's counters and timers.
type Stats struct {
	RefineRounds  int
	BalanceSweeps int
	Splits        int
	Merges        int
	MinRankBlocks int64 // fewest blocks on one rank (last adaptation)
	MaxRankBlocks int64 // most blocks on one rank (over the run)
	// Times: ghost exchange and fill, stencil, checksums (local sums and
	// allreduce), adaptation (everything in Adapt).
	Comm, Stencil, Checksum, Refine time.Duration
}

// Result is the outcome of a run, equal on every rank.
type Result struct {
	// Checksums are the last per-variable sums; Checks the number of
	// checksum allreduces; Hash an FNV-1a hash over every checksum vector
	// of the run, in order.
	Checksums []float64
	Checks    int
	Hash      uint64
	// MaxDrift is the largest relative change of a variable's sum between
	// two consecutive checksums (conserved: rounding only).
	MaxDrift float64
	// BlocksPerLevel is the final global count of blocks per level;
	// BlockStages sums the global block count over all stages.
	BlocksPerLevel []int64
	BlockStages    int64
	MinBlocks      int64 // fewest global blocks over the run
	MaxBlocks      int64 // most global blocks over the run
}

// Run performs the initial refinement and the time steps (miniAMR's
// driver).
func (m *Mesh) Run() (Result, error) {
	var res Result
	p := &m.P
	timed := func(d *time.Duration, f func() error) error {
		t := time.Now()
		err := f()
		*d += time.Since(t)
		return err
	}
	if err := timed(&m.Stats.Refine, func() error { return m.Adapt(p.MaxLevel) }); err != nil {
		return res, err
	}
	if p.MaxLevel == 0 {
		// No refinement happened: count the blocks once.
		counts := m.countsCopy()
		if err := m.red.Int64("blocks", counts, mpi.OpSum); err != nil {
			return res, err
		}
		copy(m.GlobalCount, counts)
		m.GlobalBlocks = 0
		for _, c := range counts {
			m.GlobalBlocks += c
		}
	}
	res.MinBlocks, res.MaxBlocks = m.GlobalBlocks, m.GlobalBlocks
	sum := make([]float64, p.Vars)
	prev := make([]float64, p.Vars)
	hash := newHasher()
	for ts := 1; ts <= p.Steps; ts++ {
		for stage := 0; stage < p.Stages; stage++ {
			res.BlockStages += m.GlobalBlocks
			err := timed(&m.Stats.Comm, func() error {
				if err := m.exchangeData(); err != nil {
					return err
				}
				m.fillGhosts()
				return nil
			})
			if err != nil {
				return res, err
			}
			timed(&m.Stats.Stencil, func() error { m.stencil(); return nil })
			if p.ChecksumFreq > 0 && stage%p.ChecksumFreq == 0 {
				err := timed(&m.Stats.Checksum, func() error {
					m.localSums(sum)
					return m.red.Float64("checksum", sum, mpi.OpSum)
				})
				if err != nil {
					return res, err
				}
				hash.add(sum)
				if res.Checks > 0 {
					for v := range sum {
						d := math.Abs(sum[v]-prev[v]) / math.Abs(prev[v])
						if !(d <= p.Tol) {
							return res, fmt.Errorf("miniamr: step %d stage %d: the sum of variable %d changed from %.17g to %.17g (relative %.3g > tolerance %g)", ts, stage, v, prev[v], sum[v], d, p.Tol)
						}
						res.MaxDrift = max(res.MaxDrift, d)
					}
				}
				copy(prev, sum)
				res.Checks++
			}
		}
		for i := range m.objects {
			m.objects[i].move()
		}
		if p.RefineFreq > 0 && ts%p.RefineFreq == 0 && p.MaxLevel > 0 {
			if err := timed(&m.Stats.Refine, func() error { return m.Adapt(p.RefineRounds) }); err != nil {
				return res, err
			}
			res.MinBlocks = min(res.MinBlocks, m.GlobalBlocks)
			res.MaxBlocks = max(res.MaxBlocks, m.GlobalBlocks)
		}
	}
	res.Checksums = append([]float64(nil), prev...)
	if res.Checks == 0 {
		res.Checksums = nil
	}
	res.Hash = hash.sum()
	res.BlocksPerLevel = append([]int64(nil), m.GlobalCount...)
	return res, nil
}

// Sums returns the current global per-variable sums (one allreduce,
// counted as "checksum").
func (m *Mesh) Sums() ([]float64, error) {
	s := make([]float64, m.P.Vars)
	m.localSums(s)
	err := m.red.Float64("checksum", s, mpi.OpSum)
	return s, err
}

// hasher is FNV-1a over float64 bits.
type hasher struct{ h uint64 }

func newHasher() *hasher { return &hasher{h: 14695981039346656037} }

func (h *hasher) add(v []float64) {
	for _, x := range v {
		b := math.Float64bits(x)
		for i := 0; i < 8; i++ {
			h.h ^= b & 0xff
			h.h *= 1099511628211
			b >>= 8
		}
	}
}

func (h *hasher) sum() uint64 { return h.h }
