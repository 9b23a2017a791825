package main

import (
	"fmt"
	"os"
	"unsafe"

	"github.com/dpmlgo/dpml/dpml"
	"github.com/dpmlgo/dpml/internal/bench"
	"github.com/dpmlgo/dpml/mpi"
)

// corruptForTest makes rank 1 flip the first element of every DPML result
// (after the timed call), so tests can see -check fail.
var corruptForTest bool

// sweeper holds one element type's buffers for the whole sweep: all
// variants of a size run on the same buffers, in the same process.
type sweeper[T bench.Real] struct {
	env   *runEnv
	es    int // element size
	arena bench.Arena
	send  []T // inputs, filled once with exact values (bench.Fill)
	recv  []T
	ref   []T // native results per window (-check)
}

// sweep runs every size and variant; collective over env.world.
func sweep[T bench.Real](env *runEnv) ([]bench.Result, error) {
	cfg := env.cfg
	var zero T
	es := int(unsafe.Sizeof(zero))
	counts := bench.ElementCounts(cfg.sizes, es)
	arena := bench.NewArena(counts[len(counts)-1], es, cfg.rotate, cfg.rotateBytes)
	s := &sweeper[T]{env: env, es: es, arena: arena, send: make([]T, arena.Elems), recv: make([]T, arena.Elems)}
	bench.Fill(s.send, cfg.opName, env.world.Rank(), 0)
	bench.Poison(s.recv) // touch the pages now, not in a timed call
	if cfg.check {
		s.ref = make([]T, arena.Elems)
	}
	var all []bench.Result
	for _, count := range counts {
		if cfg.check {
			if err := s.reference(count); err != nil {
				return all, fmt.Errorf("size %s: reference (native) results: %w", bench.FormatSize(count*es), err)
			}
		}
		// Every variant is prepared (plan agreed, tuner settled, warmed up,
		// iteration count fixed) before any is timed; the timed iterations
		// then run round-robin across variants (with -interleave), so slow
		// drift of the machine or a noisy neighbour touches all variants
		// alike instead of whichever block it fell on.
		pts := make([]*pointRun[T], len(env.variants))
		for i, v := range env.variants {
			env.progress.Describe(fmt.Sprintf("%7s %-14s", bench.FormatSize(count*es), v.label()))
			p, err := s.prepare(count, v)
			if err != nil {
				return all, fmt.Errorf("size %s, %s: %w", bench.FormatSize(count*es), v.label(), err)
			}
			pts[i] = p
		}
		if err := s.timeAll(pts); err != nil {
			return all, fmt.Errorf("size %s: %w", bench.FormatSize(count*es), err)
		}
		var rs []bench.Result
		for _, p := range pts {
			r, err := s.finish(p)
			if err != nil {
				return append(all, rs...), fmt.Errorf("size %s, %s: %w", bench.FormatSize(count*es), p.v.label(), err)
			}
			if env.membw != nil {
				r.FloorUS = bench.FloorUS(r.Bytes, env.layout.ppnMax, env.membw.CopyGBs)
			}
			rs = append(rs, r)
			env.progress.Add(1)
		}
		all = append(all, rs...)
		if env.table != nil {
			env.progress.Clear()
			env.table.Rows(rs)
		}
	}
	return all, nil
}

// reference computes the native result of every window a point of count
// elements can use, outside any timed loop.
func (s *sweeper[T]) reference(count int) error {
	n := s.arena.UsedWindows(count, s.env.cfg.tuneCalls+s.env.cfg.warmup+s.env.cfg.policy.Max)
	for w := 0; w < n; w++ {
		off := w * count
		if err := mpi.Allreduce(s.env.world, s.send[off:off+count], s.ref[off:off+count], s.env.op); err != nil {
			return err
		}
	}
	return nil
}

// caller returns the call a variant times.
func (s *sweeper[T]) caller(v variantSpec) func(send, recv []T) error {
	world, d, op := s.env.world, s.env.d, s.env.op
	switch v.name {
	case bench.VariantNative:
		return func(send, recv []T) error { return mpi.Allreduce(world, send, recv, op) }
	case bench.VariantAuto:
		return func(send, recv []T) error { return dpml.Allreduce(d, send, recv, op) }
	}
	o := v.o
	return func(send, recv []T) error { return dpml.AllreduceWith(d, send, recv, op, o) }
}

// pointRun is one (size, variant) point between prepare and finish.
type pointRun[T bench.Real] struct {
	v     variantSpec
	r     bench.Result
	dp    bool // a DPML variant (auto or fixed)
	skip  bool // the engine rejected the plan: not timed
	n     int  // timed iterations
	call  func(send, recv []T) error
	local []float64 // per iteration: time, then the phase times
	mism  int64
	first string
	last  dpml.Plan // the plan of this point's latest call
}

// prepare readies one (size, variant) point: plan agreed on by all ranks,
// the tuner's untimed settling calls (auto), warm-up, and the iteration
// count from rank 0's warm-up times.
func (s *sweeper[T]) prepare(count int, v variantSpec) (*pointRun[T], error) {
	env, cfg, world := s.env, s.env.cfg, s.env.world
	p := &pointRun[T]{v: v, dp: v.name != bench.VariantNative, call: s.caller(v)}
	p.r = bench.Result{Bytes: count * s.es, Count: count, Variant: v.name, Leaders: v.o.Leaders, Pipeline: v.o.Pipeline, Warmup: cfg.warmup}
	if p.dp {
		o := v.o // zero for auto
		pl, perr := env.d.Plan(count, s.es, o)
		bad := int64(0)
		if perr != nil {
			bad = 1
		}
		// Plans are deterministic, but agree anyway: a rank skipping a
		// point that others run would hang the job.
		anyBad, err := allreduceInt64(world, bad, mpi.OpMax)
		if err != nil {
			return nil, err
		}
		if anyBad != 0 {
			p.skip = true
			p.r.Skipped = "plan rejected by the engine"
			if perr != nil {
				p.r.Skipped += ": " + perr.Error()
			}
			return p, nil
		}
		p.r.Plan = planInfo(pl)
	}
	// The engine's tuner explores plans during its first calls of a size:
	// let it settle, untimed, so auto is measured in its steady state.
	if p.dp && v.o == (dpml.Override{}) {
		for j := 0; j < cfg.tuneCalls; j++ {
			if _, err := s.one(p, count, j); err != nil {
				return nil, fmt.Errorf("tuning %w", err)
			}
		}
	}
	warm := make([]float64, cfg.warmup)
	for j := range warm {
		t, err := s.one(p, count, j)
		if err != nil {
			return nil, fmt.Errorf("warm-up %w", err)
		}
		warm[j] = t
	}
	n := 0
	if world.Rank() == 0 {
		n = cfg.policy.Iterations(bench.WarmupEstimate(warm))
	}
	n, err := bcastInt(world, n, 0)
	if err != nil {
		return nil, fmt.Errorf("iteration count: %w", err)
	}
	p.n = n
	p.local = make([]float64, n*s.stride())
	return p, nil
}

// stride is the number of values stored per timed iteration.
func (s *sweeper[T]) stride() int {
	if s.env.cfg.phases {
		return 1 + len(phaseNames)
	}
	return 1
}

// timeAll runs the timed iterations of a size's points: round-robin over
// the points with -interleave (each round rotated by one), else each
// point's in one block. Every rank
// runs the same sequence (the counts were broadcast).
func (s *sweeper[T]) timeAll(pts []*pointRun[T]) error {
	iter := func(p *pointRun[T], j int) error {
		t, err := s.one(p, p.r.Count, s.env.cfg.warmup+j)
		if err != nil {
			return fmt.Errorf("%s: %w", p.v.label(), err)
		}
		st := s.stride()
		p.local[j*st] = t
		if st > 1 && p.dp {
			phaseValues(s.env.d.PhaseTimes(), p.local[j*st+1:(j+1)*st])
		}
		return nil
	}
	if !s.env.cfg.interleave {
		for _, p := range pts {
			for j := 0; j < p.n && !p.skip; j++ {
				if err := iter(p, j); err != nil {
					return err
				}
			}
		}
		return nil
	}
	most := 0
	for _, p := range pts {
		if !p.skip {
			most = max(most, p.n)
		}
	}
	// Round j starts at point j mod len(pts): no variant always runs right
	// after the same other one (after native's memory traffic, say).
	for j := 0; j < most; j++ {
		for i := range pts {
			p := pts[(i+j)%len(pts)]
			if p.skip || j >= p.n {
				continue
			}
			if err := iter(p, j); err != nil {
				return err
			}
		}
	}
	return nil
}

// one runs call j of a point (barrier, timed call, optional check) and
// returns this rank's time.
func (s *sweeper[T]) one(p *pointRun[T], count, j int) (float64, error) {
	env, cfg, world := s.env, s.env.cfg, s.env.world
	off := s.arena.Window(count, j)
	send, recv := s.send[off:off+count], s.recv[off:off+count]
	if cfg.check {
		bench.Poison(recv)
	}
	if p.dp && cfg.phases {
		resetPhases(env.d)
	}
	if err := world.Barrier(); err != nil {
		return 0, fmt.Errorf("iteration %d: barrier: %w", j, err)
	}
	t0 := mpi.Wtime()
	err := p.call(send, recv)
	t := mpi.Wtime() - t0
	if err != nil {
		return 0, fmt.Errorf("iteration %d: %w", j, err)
	}
	if p.dp {
		p.last = env.d.LastPlan()
	}
	if corruptForTest && p.dp && world.Rank() == 1 && count > 0 {
		recv[0]++
	}
	if cfg.check {
		if m := bench.Compare(recv, s.ref[off:off+count]); m != nil {
			p.mism += int64(m.Count)
			if p.first == "" {
				p.first = fmt.Sprintf("rank %d, iteration %d: %v", world.Rank(), j, m)
			}
		}
	}
	return t, nil
}

// finish reduces a point's samples over ranks (max per iteration) and
// summarises them.
func (s *sweeper[T]) finish(p *pointRun[T]) (bench.Result, error) {
	env, cfg, world := s.env, s.env.cfg, s.env.world
	r := p.r
	if p.skip {
		return r, nil
	}
	n, stride := p.n, s.stride()
	np := 0
	if p.dp && cfg.phases {
		np = len(phaseNames)
	}
	maxed := make([]float64, len(p.local))
	if err := mpi.Allreduce(world, p.local, maxed, mpi.OpMax); err != nil {
		return r, fmt.Errorf("max over ranks: %w", err)
	}
	if cfg.check {
		tot, err := allreduceInt64(world, p.mism, mpi.OpSum)
		if err != nil {
			return r, fmt.Errorf("check: %w", err)
		}
		r.Check, r.Mismatches, r.MismatchAt = "ok", tot, p.first
		if tot > 0 {
			r.Check = "mismatch"
			if world.Rank() == 0 {
				where := p.first
				if where == "" {
					where = "on other ranks than 0"
				}
				env.progress.Clear()
				fmt.Fprintf(os.Stderr, "dpmlbench: CHECK FAILED: size %s, %s: %d mismatching elements over all ranks; first %s\n",
					bench.FormatSize(r.Bytes), p.v.label(), tot, where)
			}
		}
	}
	col := func(c int) []float64 {
		out := make([]float64, n)
		for j := range out {
			out[j] = maxed[j*stride+c]
		}
		return out
	}
	times := col(0)
	sum, err := bench.Summarize(times)
	if err != nil {
		return r, err
	}
	r.Iters, r.US = n, sum.Scale(1e6)
	if cfg.samples {
		r.SamplesUS = make([]float64, n)
		for j, t := range times {
			r.SamplesUS[j] = t * 1e6
		}
	}
	if p.dp {
		// What ran last (the tuner may have moved since prepare).
		lp := p.last
		r.Plan = planInfo(lp)
	}
	for c := 0; c < np; c++ {
		ps, err := bench.Summarize(col(1 + c))
		if err != nil {
			return r, fmt.Errorf("phase %s: %w", phaseNames[c], err)
		}
		if ps.Max == 0 {
			continue // a phase this plan does not run
		}
		r.Phases = append(r.Phases, bench.Phase{Name: phaseNames[c], MedianUS: ps.Median * 1e6, MeanUS: ps.Mean * 1e6})
	}
	return r, nil
}

// planInfo is the part of a plan a result records.
func planInfo(p dpml.Plan) *bench.PlanInfo {
	return &bench.PlanInfo{Variant: p.Variant.String(), Leaders: p.Leaders, Pipeline: p.Pipeline, Segments: p.Segments,
		CMA: p.Intra == dpml.IntraCMA, Stream: p.Stream}
}
