package dpml

import (
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/shm"
)

// execute runs plan p: the one executor behind every variant and transport.
//
// Per segment s (generation g, buffer set g mod 2), each rank runs
//
//	contribute(s)  make its input of s available (transport), raise in[me] = g
//	reduce(s)      leader j: await the inputs, fold partition j into the
//	               result area (transport)
//	inter(s)       leader j: allreduce partition j with leader j of the other
//	               nodes by the plan's inter-node algorithm (inter.go; DPML:
//	               run to completion; Pipelined: k steps started, completed
//	               during segment s+1), deliver it (transport), raise out[j] = g
//	collect(s)     wait out[j] >= g for the active leaders, take the result
//	               (transport)
//
// With a pipelined inter-node phase (Plan.Overlap), collect(s) runs after
// contribute(s+1) and reduce(s+1), so the network works while the node does.
// Reusing buffer set b for segment s+2 is safe without further flags: a rank
// writes its slot for s+2 only after its collect of s, which waited for
// every leader to finish s; a leader writes the result of s+2 only after
// every rank's contribution to s+2, which each rank made after its collect
// of s. Which transport moves the data (shared-memory copies, cross-memory
// attach, the reduction tree) is the plan's Intra; the executor does not
// look at it.
func execute[T mpi.Number](c *Comm, pp *prepared, send, recv []T, op mpi.Op, kern kernel) error {
	if !c.timing {
		return executePlan(c, pp, send, recv, op, kern, time.Time{})
	}
	t0 := time.Now()
	c.times.Calls++
	err := executePlan(c, pp, send, recv, op, kern, t0)
	c.times.Total += time.Since(t0)
	return err
}

// executePlan is execute without the call's phase timing. It has no defer:
// a function with defers and as many returns as this one gets them the
// slow way (runtime.deferreturn on every call), which showed in the
// small-message path's profile.
func executePlan[T mpi.Number](c *Comm, pp *prepared, send, recv []T, op mpi.Op, kern kernel, t0 time.Time) error {
	p := &pp.p
	if p.Count == 0 {
		return nil
	}
	if p.Has(PhaseNative) {
		var err error
		c.watch.enter(stepNative)
		if unsafe.SliceData(send) == unsafe.SliceData(recv) {
			err = mpi.AllreduceInPlace(c.world, recv, op)
		} else {
			err = mpi.Allreduce(c.world, send, recv, op)
		}
		c.watch.leave()
		if c.timing {
			c.times.Native += time.Since(t0)
		}
		if err != nil {
			return fmt.Errorf("dpml: native allreduce: %w", err)
		}
		return nil
	}
	if pp.fused && !c.timing && fusedOK[mpi.KindOf[T]()][op] {
		return runFused(c, p, send, recv, op, kern)
	}
	tr := c.transports[p.Intra]
	c.call = call{c: c, p: p, send: unsafe.Pointer(unsafe.SliceData(send)),
		recv: unsafe.Pointer(unsafe.SliceData(recv)), es: p.ElemSize, kern: kern, kind: mpi.KindOf[T](), op: op}
	e := run[T]{c: c, x: &c.call, tr: tr, p: p, pp: pp, send: send, recv: recv, op: op}
	e.lead = c.pos < p.Leaders
	e.inter = p.Has(PhaseInter)
	if e.inter {
		var err error
		if e.alg, err = c.interFor(p); err != nil {
			return err
		}
		if p.Overlap {
			e.lag = 1
		}
	}
	if !tr.pinsBuffers() {
		return e.segments()
	}
	// Peers will read and write these buffers by address: pinning keeps
	// them on the heap (a stack buffer could move if this goroutine's
	// stack grew during the call).
	var pin runtime.Pinner
	pin.Pin(unsafe.SliceData(send))
	pin.Pin(unsafe.SliceData(recv))
	err := e.segments()
	pin.Unpin()
	return err
}

// segments runs the plan's segments (see execute).
func (e *run[T]) segments() error {
	c, p := e.c, e.p
	base := c.gen
	e.base = base
	for s := 0; s < p.Segments; s++ {
		g := base + uint64(s) + 1
		if err := e.contribute(s, g); err != nil {
			return err
		}
		if e.lead {
			if err := e.reduce(s, g); err != nil {
				return err
			}
		}
		if e.lag == 0 {
			if err := e.collect(s, g); err != nil {
				return err
			}
			continue
		}
		if s > 0 {
			if err := e.finish(g - 1); err != nil {
				return err
			}
			if err := e.collect(s-1, g-1); err != nil {
				return err
			}
		}
	}
	if e.lag == 1 {
		g := base + uint64(p.Segments)
		if err := e.finish(g); err != nil {
			return err
		}
		if err := e.collect(p.Segments-1, g); err != nil {
			return err
		}
	}
	c.gen = base + uint64(p.Segments)
	return nil
}

// testHookCopiedIn, when set by a test, runs after each contribution (to
// kill a rank mid-call).
var testHookCopiedIn func(c *Comm, seg int)

// run is the typed part of one call: the inter-node MPI calls need T.
type run[T mpi.Number] struct {
	c          *Comm
	x          *call
	tr         transport
	p          *Plan
	pp         *prepared // p with this rank's partitions
	send, recv []T
	op         mpi.Op
	lead       bool // this rank leads partition c.pos
	inter      bool
	alg        interAlgo // the inter-node algorithm (when inter)
	lag        int       // segments between reduce and collect
	base       uint64    // generation before the call's first segment
}

func (e *run[T]) tick() time.Time {
	if e.c.timing {
		return time.Now()
	}
	return time.Time{}
}

func (e *run[T]) tock(acc *time.Duration, t time.Time) {
	if e.c.timing {
		*acc += time.Since(t)
	}
}

func (e *run[T]) contribute(s int, g uint64) error {
	c := e.c
	t := e.tick()
	if err := e.tr.contribute(e.x, s, g); err != nil {
		return err
	}
	shm.StoreRelease(c.seg.inSeq[c.local], g)
	c.mark(tpUp)
	if testHookCopiedIn != nil {
		testHookCopiedIn(c, s)
	}
	e.tock(&c.times.CopyIn, t)
	return nil
}

// reduce folds this leader's partition of segment s and starts (or runs)
// its inter-node step.
func (e *run[T]) reduce(s int, g uint64) error {
	c, p := e.c, e.p
	sp := e.pp.part(s)
	plo, phi := sp.plo, sp.phi
	if plo == phi {
		return nil
	}
	t := e.tick()
	w := &c.wait
	if e.lag == 1 {
		w = &c.waitPoll
	}
	if err := e.tr.await(e.x, s, g, w); err != nil {
		return fmt.Errorf("dpml: leader %d waits for the node's inputs of segment %d: %w", c.pos, s, err)
	}
	c.mark(tpKids)
	e.tock(&c.times.WaitIn, t)
	es := p.ElemSize
	res := unsafe.Add(e.tr.result(e.x, g), plo*es)
	// fold reduces elements [q, q+n) of the segment's partition into res.
	fold := func(q, n int) error {
		t := e.tick()
		err := e.tr.fold(e.x, s, g, unsafe.Add(res, (q-plo)*es), q, n)
		e.tock(&c.times.Reduce, t)
		return err
	}
	switch {
	case !e.inter:
		if err := fold(plo, phi-plo); err != nil {
			return err
		}
		return e.post(s, g)
	case e.lag == 0: // the whole step, blocking
		if err := fold(plo, phi-plo); err != nil {
			return err
		}
		t = e.tick()
		if err := e.alg.run(c, e.step(res, phi-plo)); err != nil {
			return fmt.Errorf("dpml: leader %d inter-node step (%v) of segment %d: %w", c.pos, p.InterAlgorithm(), s, err)
		}
		e.tock(&c.times.Inter, t)
		return e.post(s, g)
	default: // overlapped: reduce a sub-chunk, start its step, next
		b := g & 1
		reqs := c.pending[b][:0]
		for q := 0; q < p.Pipeline; q++ {
			a, z := subchunk(0, phi-plo, p.Pipeline, q, p.Align)
			if a == z {
				continue
			}
			if err := fold(plo+a, z-a); err != nil {
				return err
			}
			t = e.tick()
			r, err := e.alg.start(c, e.step(unsafe.Add(res, a*es), z-a), int(b), q)
			if err != nil {
				return fmt.Errorf("dpml: leader %d starts the inter-node step (%v) of segment %d: %w", c.pos, p.InterAlgorithm(), s, err)
			}
			reqs = append(reqs, r)
			e.tock(&c.times.Inter, t)
		}
		c.pending[b] = reqs
		c.pendingRange[b] = flagPost{valid: true, gen: g}
	}
	return nil
}

// step describes this leader's inter-node step on n elements at buf.
func (e *run[T]) step(buf unsafe.Pointer, n int) interStep {
	return interStep{buf: buf, n: n, kind: mpi.KindOf[T](), op: e.op, es: e.p.ElemSize, align: e.p.Align, kern: e.x.kern}
}

// finish completes the pending inter-node requests of generation g (if this
// rank leads a partition of it) and raises the leader's out flag.
func (e *run[T]) finish(g uint64) error {
	c := e.c
	b := g & 1
	fp := c.pendingRange[b]
	if !e.lead || !fp.valid || fp.gen != g {
		return nil
	}
	t := time.Now()
	err := c.wait.Until(func() (bool, error) { return c.testAll(b) })
	if err != nil {
		return fmt.Errorf("dpml: leader %d waits for the inter-node step: %w", c.pos, err)
	}
	if c.timing {
		c.times.Inter += time.Since(t)
	}
	c.pendingRange[b] = flagPost{}
	return e.post(int(g-e.base-1), g)
}

// post hands this leader's reduced partition of segment s to the transport,
// then raises the leader's "result ready" flag.
func (e *run[T]) post(s int, g uint64) error {
	c := e.c
	t := e.tick()
	if err := e.tr.deliver(e.x, s, g); err != nil {
		return err
	}
	e.tock(&c.times.CopyOut, t)
	shm.StoreRelease(c.seg.outSeq[c.pos], g)
	c.mark(tpOut)
	return nil
}

func (e *run[T]) collect(s int, g uint64) error {
	c := e.c
	t := e.tick()
	active := e.pp.part(s).active
	w := &c.wait
	if e.lag == 1 && e.lead {
		w = &c.waitPoll
	}
	for j := 0; j < active; j++ {
		if err := w.UntilAtLeast(c.seg.outSeq[j], g); err != nil {
			return fmt.Errorf("dpml: rank %d waits for leader %d's result of segment %d: %w", c.local, j, s, err)
		}
	}
	c.mark(tpSeen)
	e.tock(&c.times.WaitOut, t)
	t = e.tick()
	err := e.tr.collect(e.x, s, g)
	e.tock(&c.times.CopyOut, t)
	return err
}

// progress drives outstanding non-blocking requests while a rank waits on
// shared memory: Open MPI's non-blocking collectives advance only inside MPI
// calls.
func (c *Comm) progress() error {
	for b := range c.pending {
		if c.pendingRange[b].valid {
			if _, err := c.testAll(uint64(b)); err != nil {
				return err
			}
		}
	}
	return nil
}

// testAll tests the pending requests of buffer set b, dropping completed ones.
func (c *Comm) testAll(b uint64) (bool, error) {
	reqs := c.pending[b]
	n := 0
	for _, r := range reqs {
		done, err := r.Test()
		if err != nil {
			return false, err
		}
		if !done {
			reqs[n] = r
			n++
		}
	}
	for i := n; i < len(reqs); i++ {
		reqs[i] = nil
	}
	c.pending[b] = reqs[:n]
	return n == 0, nil
}
