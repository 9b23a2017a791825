package main

import (
	"fmt"
	"github.com/dpmlgo/dpml/internal/tools/results"
	"math/rand/v2"
	"os"
	"time"
	"unsafe"

	"github.com/dpmlgo/dpml/costmodel/learn"
	"github.com/dpmlgo/dpml/dpml"
	"github.com/dpmlgo/dpml/internal/tools/bench"
	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/plan"
)

// corruptForTest makes rank 1 flip the first element of every timed DPML
// result (after the call; warm-up and tuning calls stay intact), so tests
// can see that the timed calls' own checks fail.
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
	skew  skewer
	timed bool // inside timeAll (corruptForTest)
}

// sweep runs every size and variant; collective over env.world.
func sweep[T bench.Real](env *runEnv) ([]results.Result, error) {
	cfg := env.cfg
	var zero T
	es := int(unsafe.Sizeof(zero))
	counts := bench.ElementCounts(cfg.sizes, es)
	arena := bench.NewArena(counts[len(counts)-1], es, cfg.rotate, cfg.rotateBytes)
	s := &sweeper[T]{env: env, es: es, arena: arena, send: make([]T, arena.Elems), recv: make([]T, arena.Elems),
		skew: newSkewer(cfg.seed, env.world.Rank(), cfg.skewUS)}
	bench.Fill(s.send, cfg.opName, env.world.Rank(), 0)
	bench.Poison(s.recv) // touch the pages now, not in a timed call
	if cfg.check {
		s.ref = make([]T, arena.Elems)
	}
	var all []results.Result
	for _, count := range counts {
		if cfg.check {
			if err := s.reference(count); err != nil {
				return all, fmt.Errorf("size %s: reference (native) results: %w", results.FormatSize(count*es), err)
			}
		}
		// Every variant is prepared (plan agreed, tuner settled, warmed up,
		// iteration count fixed) before any is timed; the timed iterations
		// then run in rounds across variants (with -interleave), so slow
		// drift of the machine or a noisy neighbour touches all variants
		// alike instead of whichever block it fell on.
		pts := make([]*pointRun[T], len(env.variants))
		for i, v := range env.variants {
			env.progress.Describe(fmt.Sprintf("%7s %-14s", results.FormatSize(count*es), v.label()))
			p, err := s.prepare(count, v)
			if err != nil {
				return all, fmt.Errorf("size %s, %s: %w", results.FormatSize(count*es), v.label(), err)
			}
			pts[i] = p
		}
		if err := s.timeAll(pts); err != nil {
			return all, fmt.Errorf("size %s: %w", results.FormatSize(count*es), err)
		}
		var rs []results.Result
		for _, p := range pts {
			r, err := s.finish(p)
			if err != nil {
				return append(all, rs...), fmt.Errorf("size %s, %s: %w", results.FormatSize(count*es), p.v.label(), err)
			}
			if env.membw != nil {
				r.FloorUS = results.FloorUS(r.Bytes, env.layout.ppnMax, env.membw.CopyGBs)
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
	// b2b rounds the calls up to whole batches: at most batches more.
	n := s.arena.UsedWindows(count, s.env.cfg.tuneCalls+s.env.cfg.warmup+s.env.cfg.policy.Max+s.env.cfg.batches)
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
	case results.VariantNative:
		return func(send, recv []T) error { return mpi.Allreduce(world, send, recv, op) }
	case results.VariantAuto:
		return func(send, recv []T) error { return dpml.Allreduce(d, send, recv, op) }
	}
	o := v.o
	return func(send, recv []T) error { return dpml.AllreduceWith(d, send, recv, op, o) }
}

// pointRun is one (size, variant) point between prepare and finish.
type pointRun[T bench.Real] struct {
	v    variantSpec
	r    results.Result
	dp   bool // a DPML variant (auto or fixed)
	skip bool // the engine rejected the plan: not timed
	n    int  // timed samples: calls, or batches (b2b)
	m    int  // calls per sample: 1, or the batch length (b2b)
	// percall holds this rank's time of every call of the b2b batches.
	percall []float64
	call    func(send, recv []T) error
	local   []float64 // per iteration: time, then the phase times
	mism    int64
	first   string
	last    dpml.Plan // the plan of this point's latest call
	// tuned: the tuner's state of the latest call's key (auto points).
	tuned   learn.Info
	isTuned bool
}

// prepare readies one (size, variant) point: plan agreed on by all ranks,
// the tuner's untimed settling calls (auto), warm-up, and the iteration
// count from rank 0's warm-up times.
func (s *sweeper[T]) prepare(count int, v variantSpec) (*pointRun[T], error) {
	env, cfg, world := s.env, s.env.cfg, s.env.world
	p := &pointRun[T]{v: v, dp: v.name != results.VariantNative, call: s.caller(v)}
	p.r = results.Result{Bytes: count * s.es, Count: count, Variant: v.name, Leaders: v.o.Leaders, Pipeline: v.o.Pipeline, Warmup: cfg.warmup}
	if v.o.Offload != plan.OffloadAuto {
		p.r.Offload = v.o.Offload.String()
	}
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
	// let it settle, untimed, so auto is measured in its steady state. It
	// learns from calls made in the measured pattern.
	if p.dp && v.o == (dpml.Override{}) {
		pre := s.pre()
		for j := 0; j < cfg.tuneCalls; j++ {
			if _, err := s.one(p, count, j, pre); err != nil {
				return nil, fmt.Errorf("tuning %w", err)
			}
		}
	}
	warm := make([]float64, cfg.warmup)
	for j := range warm {
		t, err := s.one(p, count, j, preBarrier)
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
	p.n, p.m = n, 1
	if cfg.pattern == results.PatternB2B {
		nb := min(cfg.batches, n)
		p.n, p.m = nb, (n+nb-1)/nb
		if cfg.perCall {
			p.percall = make([]float64, p.n*p.m)
		}
	}
	p.local = make([]float64, p.n*s.stride())
	return p, nil
}

// wtime is the timed loops' clock: seconds on this process's monotonic
// clock, as MPI_Wtime (the C client's clock) reads it, but without a cgo
// call. mpi.Wtime is one, and in a b2b batch that reads the clock after
// every call it added its cost to every Go call measured, which the C
// client does not pay.
func wtime() float64 { return time.Since(clockEpoch).Seconds() }

var clockEpoch = time.Now()

// What a call does before its timed part (one's pre).
const (
	preNone    = iota // back to back
	preBarrier        // a barrier on the world communicator
	preSkew           // the skew pattern's random busy compute
)

// pre is the step before each call of the measured pattern (b2b batches
// have their own loop: batch).
func (s *sweeper[T]) pre() int {
	switch s.env.cfg.pattern {
	case results.PatternSkew:
		return preSkew
	case results.PatternB2B:
		return preNone
	}
	return preBarrier
}

// stride is the number of values stored per timed iteration.
func (s *sweeper[T]) stride() int {
	if s.env.cfg.phases {
		return 1 + len(phaseNames)
	}
	return 1
}

// timeAll runs the timed iterations of a size's points: in rounds over
// the points with -interleave (each round in its own shuffled order), else each
// point's in one block. Every rank
// runs the same sequence (the counts were broadcast).
func (s *sweeper[T]) timeAll(pts []*pointRun[T]) error {
	s.timed = true
	defer func() { s.timed = false }()
	pre := s.pre()
	iter := func(p *pointRun[T], j int) error {
		if pre == preNone {
			if err := s.batch(p, j); err != nil {
				return fmt.Errorf("%s: %w", p.v.label(), err)
			}
			return nil
		}
		t, err := s.one(p, p.r.Count, s.env.cfg.warmup+j, pre)
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
	if err := s.env.world.Barrier(); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	// Round j runs the points in an order shuffled for that round (seeded
	// by j: the same on every rank), so no variant always runs right after
	// the same other one (after native's memory traffic, say). A rotation
	// would keep the cyclic order: the variant listed after native would
	// follow it in most rounds.
	order := make([]int, len(pts))
	for j := 0; j < most; j++ {
		roundOrder(order, j)
		for _, i := range order {
			p := pts[i]
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

// one runs call j of a point (pre step, timed call, optional check) and
// returns this rank's time.
func (s *sweeper[T]) one(p *pointRun[T], count, j, pre int) (float64, error) {
	env, cfg, world := s.env, s.env.cfg, s.env.world
	off := s.arena.Window(count, j)
	send, recv := s.send[off:off+count], s.recv[off:off+count]
	if cfg.check {
		bench.Poison(recv)
	}
	if p.dp && cfg.phases {
		resetPhases(env.d)
	}
	switch pre {
	case preBarrier:
		if err := world.Barrier(); err != nil {
			return 0, fmt.Errorf("iteration %d: barrier: %w", j, err)
		}
	case preSkew:
		s.skew.busy()
	}
	t0 := wtime()
	err := p.call(send, recv)
	t := wtime() - t0
	if err != nil {
		return 0, fmt.Errorf("iteration %d: %w", j, err)
	}
	if p.dp {
		p.last = env.d.LastPlan()
		if j == p.n-1 { // the tuner's state once per point (Info allocates)
			p.tuned, p.isTuned = env.d.LastTunerInfo()
		}
	}
	if corruptForTest && s.timed && p.dp && world.Rank() == 1 && count > 0 {
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

// batch runs batch j of a b2b point: a barrier, then p.m calls back to
// back (call c on window j*m+c), timed as a whole and, with -percall, one
// by one. The sample is this rank's average per call; with -check the last
// call's result is compared (the calls in between are not touched, which
// is the point of b2b; warm-up calls were each checked).
func (s *sweeper[T]) batch(p *pointRun[T], j int) error {
	env, cfg, world := s.env, s.env.cfg, s.env.world
	count, m := p.r.Count, p.m
	lastOff := s.arena.Window(count, j*m+m-1)
	if cfg.check {
		bench.Poison(s.recv[lastOff : lastOff+count])
	}
	if p.dp && cfg.phases {
		resetPhases(env.d)
	}
	if err := world.Barrier(); err != nil {
		return fmt.Errorf("batch %d: barrier: %w", j, err)
	}
	var pc []float64
	if p.percall != nil {
		pc = p.percall[j*m : (j+1)*m]
	}
	t0 := wtime()
	prev := t0
	for c := 0; c < m; c++ {
		off := s.arena.Window(count, j*m+c)
		if err := p.call(s.send[off:off+count], s.recv[off:off+count]); err != nil {
			return fmt.Errorf("batch %d, call %d: %w", j, c, err)
		}
		if pc != nil {
			t := wtime()
			pc[c], prev = t-prev, t
		}
	}
	if pc == nil {
		prev = wtime()
	}
	st := s.stride()
	p.local[j*st] = (prev - t0) / float64(m)
	if st > 1 && p.dp {
		v := p.local[j*st+1 : (j+1)*st]
		phaseValues(env.d.PhaseTimes(), v)
		for i := range v {
			v[i] /= float64(m)
		}
	}
	if p.dp {
		p.last = env.d.LastPlan()
		if j == p.n-1 { // the tuner's state once per point (Info allocates)
			p.tuned, p.isTuned = env.d.LastTunerInfo()
		}
	}
	recv := s.recv[lastOff : lastOff+count]
	if corruptForTest && s.timed && p.dp && world.Rank() == 1 && count > 0 {
		recv[0]++
	}
	if cfg.check {
		if d := bench.Compare(recv, s.ref[lastOff:lastOff+count]); d != nil {
			p.mism += int64(d.Count)
			if p.first == "" {
				p.first = fmt.Sprintf("rank %d, batch %d: %v", world.Rank(), j, d)
			}
		}
	}
	return nil
}

// finish reduces a point's samples over ranks (max per iteration) and
// summarises them.
func (s *sweeper[T]) finish(p *pointRun[T]) (results.Result, error) {
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
					results.FormatSize(r.Bytes), p.v.label(), tot, where)
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
	r.Iters, r.US = n*p.m, sum.Scale(1e6)
	if cfg.pattern == results.PatternB2B {
		r.Batches = n
	}
	if p.percall != nil {
		// Each rank's own distribution over its calls, then the largest
		// value over ranks of each statistic.
		mine, err := bench.Summarize(p.percall)
		if err != nil {
			return r, fmt.Errorf("per-call times: %w", err)
		}
		v := []float64{mine.Min, mine.Max, mine.Mean, mine.Median, mine.P25, mine.P75, mine.P99, mine.Stddev}
		all := make([]float64, len(v))
		if err := mpi.Allreduce(world, v, all, mpi.OpMax); err != nil {
			return r, fmt.Errorf("per-call times, max over ranks: %w", err)
		}
		pcs := results.Summary{N: len(p.percall), Min: all[0], Max: all[1], Mean: all[2], Median: all[3], P25: all[4], P75: all[5], P99: all[6], Stddev: all[7]}.Scale(1e6)
		r.PerCall = &pcs
	}
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
		if p.isTuned {
			in := p.tuned
			r.Plan.Tuner, r.Plan.Switches, r.Plan.Changes = in.State.String(), int64(in.Switches), int64(in.Changes)
			r.Plan.CostUS, r.Plan.SkewUS = in.Cost*1e6, in.Skew*1e6
		}
	}
	for c := 0; c < np; c++ {
		ps, err := bench.Summarize(col(1 + c))
		if err != nil {
			return r, fmt.Errorf("phase %s: %w", phaseNames[c], err)
		}
		if ps.Max == 0 {
			continue // a phase this plan does not run
		}
		r.Phases = append(r.Phases, results.Phase{Name: phaseNames[c], MedianUS: ps.Median * 1e6, MeanUS: ps.Mean * 1e6})
	}
	return r, nil
}

// planInfo is the part of a plan a result records.
func planInfo(p dpml.Plan) *results.PlanInfo {
	pi := &results.PlanInfo{Variant: p.Variant.String(), Leaders: p.Leaders, Pipeline: p.Pipeline, Segments: p.Segments,
		CMA: p.Intra == dpml.IntraCMA, Intra: p.Intra.String(), Radix: p.Radix, Stream: p.Stream}
	if p.Offload != plan.OffloadAuto {
		pi.Offload = p.Offload.String()
	}
	return pi
}

// skewer draws the skew pattern's delays: splitmix64 seeded by the seed and
// the rank, one draw per call in call order, uniform in [0, skewUS] us
// (dpmlbench-c uses the same generator and seeding).
type skewer struct {
	state uint64
	maxUS float64
	sink  float64
}

func newSkewer(seed uint64, rank int, maxUS float64) skewer {
	return skewer{state: seed*0x9E3779B97F4A7C15 ^ uint64(rank+1)*0xD1B54A32D192ED03, maxUS: maxUS}
}

func (k *skewer) next() uint64 {
	k.state += 0x9E3779B97F4A7C15
	z := k.state
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// delay returns the next delay in seconds.
func (k *skewer) delay() float64 {
	return k.maxUS * 1e-6 * float64(k.next()>>11) * 0x1p-53
}

// busy computes (floating-point work, not sleep: the core stays busy as in
// an application's compute phase) for the next delay.
func (k *skewer) busy() {
	end := wtime() + k.delay()
	x := k.sink
	for {
		for i := 0; i < 64; i++ {
			x = x*1.0000001 + 1e-9
		}
		if wtime() >= end {
			break
		}
	}
	k.sink = x
}

// roundOrder fills order with round j's order of len(order) points: a
// permutation seeded by j alone, the same on every rank.
func roundOrder(order []int, j int) {
	for i := range order {
		order[i] = i
	}
	rand.New(rand.NewPCG(uint64(j), 0x6f72646572)).Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
}
