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
		var rs []bench.Result
		for _, v := range env.variants {
			env.progress.Describe(fmt.Sprintf("%7s %-14s", bench.FormatSize(count*es), v.label()))
			r, err := s.point(count, v)
			if err != nil {
				return append(all, rs...), fmt.Errorf("size %s, %s: %w", bench.FormatSize(count*es), v.label(), err)
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

// point measures one (size, variant): warm-up, iteration count agreed from
// rank 0's warm-up times, timed iterations each after a barrier, then one
// MPI_MAX reduction of the per-iteration vector (with the phase times).
func (s *sweeper[T]) point(count int, v variantSpec) (bench.Result, error) {
	env, cfg, world := s.env, s.env.cfg, s.env.world
	rank := world.Rank()
	r := bench.Result{Bytes: count * s.es, Count: count, Variant: v.name, Leaders: v.o.Leaders, Pipeline: v.o.Pipeline, Warmup: cfg.warmup}
	dp := v.name != bench.VariantNative
	if dp {
		o := v.o // zero for auto
		p, perr := env.d.Plan(count, s.es, o)
		bad := int64(0)
		if perr != nil {
			bad = 1
		}
		// Plans are deterministic, but agree anyway: a rank skipping a
		// point that others run would hang the job.
		anyBad, err := allreduceInt64(world, bad, mpi.OpMax)
		if err != nil {
			return r, err
		}
		if anyBad != 0 {
			r.Skipped = "plan rejected by the engine"
			if perr != nil {
				r.Skipped += ": " + perr.Error()
			}
			return r, nil
		}
		r.Plan = &bench.PlanInfo{Variant: p.Variant.String(), Leaders: p.Leaders, Pipeline: p.Pipeline, Segments: p.Segments}
	}
	phases := dp && cfg.phases
	call := s.caller(v)
	var mism int64
	var first string
	one := func(j int) (float64, error) {
		off := s.arena.Window(count, j)
		send, recv := s.send[off:off+count], s.recv[off:off+count]
		if cfg.check {
			bench.Poison(recv)
		}
		if phases {
			resetPhases(env.d)
		}
		if err := world.Barrier(); err != nil {
			return 0, fmt.Errorf("iteration %d: barrier: %w", j, err)
		}
		t0 := mpi.Wtime()
		err := call(send, recv)
		t := mpi.Wtime() - t0
		if err != nil {
			return 0, fmt.Errorf("iteration %d: %w", j, err)
		}
		if corruptForTest && dp && rank == 1 && count > 0 {
			recv[0]++
		}
		if cfg.check {
			if m := bench.Compare(recv, s.ref[off:off+count]); m != nil {
				mism += int64(m.Count)
				if first == "" {
					first = fmt.Sprintf("rank %d, iteration %d: %v", rank, j, m)
				}
			}
		}
		return t, nil
	}

	// The engine's tuner explores plans during its first calls of a size:
	// let it settle, untimed, so auto is measured in its steady state.
	if dp && v.o == (dpml.Override{}) {
		for j := 0; j < cfg.tuneCalls; j++ {
			if _, err := one(j); err != nil {
				return r, fmt.Errorf("tuning %w", err)
			}
		}
	}
	warm := make([]float64, cfg.warmup)
	for j := range warm {
		t, err := one(j)
		if err != nil {
			return r, fmt.Errorf("warm-up %w", err)
		}
		warm[j] = t
	}
	n := 0
	if rank == 0 {
		n = cfg.policy.Iterations(bench.WarmupEstimate(warm))
	}
	n, err := bcastInt(world, n, 0)
	if err != nil {
		return r, fmt.Errorf("iteration count: %w", err)
	}
	np := 0
	if phases {
		np = len(phaseNames)
	}
	stride := 1 + np
	local := make([]float64, n*stride)
	for j := 0; j < n; j++ {
		t, err := one(cfg.warmup + j)
		if err != nil {
			return r, err
		}
		local[j*stride] = t
		if phases {
			phaseValues(env.d.PhaseTimes(), local[j*stride+1:(j+1)*stride])
		}
	}
	maxed := make([]float64, len(local))
	if err := mpi.Allreduce(world, local, maxed, mpi.OpMax); err != nil {
		return r, fmt.Errorf("max over ranks: %w", err)
	}
	if cfg.check {
		tot, err := allreduceInt64(world, mism, mpi.OpSum)
		if err != nil {
			return r, fmt.Errorf("check: %w", err)
		}
		r.Check, r.Mismatches, r.MismatchAt = "ok", tot, first
		if tot > 0 {
			r.Check = "mismatch"
			if rank == 0 {
				where := first
				if where == "" {
					where = "on other ranks than 0"
				}
				env.progress.Clear()
				fmt.Fprintf(os.Stderr, "dpmlbench: CHECK FAILED: size %s, %s: %d mismatching elements over all ranks; first %s\n",
					bench.FormatSize(r.Bytes), v.label(), tot, where)
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
	if dp {
		// What ran (the tuner may have moved since the plan above).
		lp := env.d.LastPlan()
		r.Plan = &bench.PlanInfo{Variant: lp.Variant.String(), Leaders: lp.Leaders, Pipeline: lp.Pipeline, Segments: lp.Segments}
	}
	for p := 0; p < np; p++ {
		ps, err := bench.Summarize(col(1 + p))
		if err != nil {
			return r, fmt.Errorf("phase %s: %w", phaseNames[p], err)
		}
		if ps.Max == 0 {
			continue // a phase this plan does not run
		}
		r.Phases = append(r.Phases, bench.Phase{Name: phaseNames[p], MedianUS: ps.Median * 1e6, MeanUS: ps.Mean * 1e6})
	}
	return r, nil
}
