package dpml

import (
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/shm"
)

// execute runs plan p: the one engine behind every variant.
//
// Per segment s (generation g, buffer set g mod 2), each rank runs
//
//	copy-in(s)   copy its slice of s into its slot, raise in[me] = g
//	reduce(s)    leader j: wait in[*] >= g, fold partition j of all slots
//	             into the result area, in local-rank order
//	inter(s)     leader j: allreduce partition j with leader j of the other
//	             nodes (DPML: blocking; Pipelined: k Iallreduces, completed
//	             during segment s+1), then raise out[j] = g
//	copy-out(s)  wait out[j] >= g for the active leaders, copy the result out
//
// With a pipelined inter-node phase, copy-out(s) runs after copy-in(s+1) and
// reduce(s+1), so the network works while the node does. Reusing buffer set
// b for segment s+2 is safe without further flags: a rank copies into its
// slot for s+2 only after its copy-out of s, which waited for every leader
// to finish s; a leader writes the result of s+2 only after every rank's
// copy-in of s+2, which each rank did after its copy-out of s.
//
// With cross-memory attach (p.CMA) copy-in only publishes the buffers'
// addresses, a leader fetches its partition from every rank's send buffer
// (process_vm_readv) and writes the result into every rank's receive
// buffer (process_vm_writev) before raising its flag, and copy-out only
// waits for the flags.
func execute[T mpi.Number](c *Comm, p *Plan, send, recv []T, op mpi.Op, kern kernel) error {
	var t0 time.Time
	if c.timing {
		t0 = time.Now()
		c.times.Calls++
		defer func() { c.times.Total += time.Since(t0) }()
	}
	if p.Count == 0 {
		return nil
	}
	if p.Has(PhaseNative) {
		var err error
		if unsafe.SliceData(send) == unsafe.SliceData(recv) {
			err = mpi.AllreduceInPlace(c.world, recv, op)
		} else {
			err = mpi.Allreduce(c.world, send, recv, op)
		}
		if c.timing {
			c.times.Native += time.Since(t0)
		}
		if err != nil {
			return fmt.Errorf("dpml: native allreduce: %w", err)
		}
		return nil
	}
	if p.CMA {
		// Peers will read and write these buffers by address: pinning
		// keeps them on the heap (a stack buffer could move if this
		// goroutine's stack grew during the call).
		var pin runtime.Pinner
		pin.Pin(unsafe.SliceData(send))
		pin.Pin(unsafe.SliceData(recv))
		defer pin.Unpin()
	}
	e := run[T]{c: c, p: p, send: send, recv: recv, op: op, kern: kern}
	e.lead = c.pos < p.Leaders
	e.inter = p.Has(PhaseInter)
	e.lag = 0
	if e.inter && p.Variant == Pipelined {
		e.lag = 1
	}
	base := c.gen
	e.base = base
	for s := 0; s < p.Segments; s++ {
		g := base + uint64(s) + 1
		if err := e.copyIn(s, g); err != nil {
			return err
		}
		if e.lead {
			if err := e.reduce(s, g); err != nil {
				return err
			}
		}
		if e.lag == 0 {
			if err := e.copyOut(s, g); err != nil {
				return err
			}
			continue
		}
		if s > 0 {
			if err := e.finish(g - 1); err != nil {
				return err
			}
			if err := e.copyOut(s-1, g-1); err != nil {
				return err
			}
		}
	}
	if e.lag == 1 {
		g := base + uint64(p.Segments)
		if err := e.finish(g); err != nil {
			return err
		}
		if err := e.copyOut(p.Segments-1, g); err != nil {
			return err
		}
	}
	c.gen = base + uint64(p.Segments)
	return nil
}

// testHookCopiedIn, when set by a test, runs after each copy-in (to kill a
// rank mid-call).
var testHookCopiedIn func(c *Comm, seg int)

// run is the state of one call.
type run[T mpi.Number] struct {
	c          *Comm
	p          *Plan
	send, recv []T
	op         mpi.Op
	kern       kernel
	lead       bool // this rank leads partition c.pos
	inter      bool
	lag        int    // segments between reduce and copy-out
	base       uint64 // generation before the call's first segment
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

func (e *run[T]) copyIn(s int, g uint64) error {
	c := e.c
	t := e.tick()
	if !e.p.CMA {
		lo, hi := e.p.segment(s)
		dst := unsafe.Slice((*T)(c.slot(g&1, c.local)), hi-lo)
		copy(dst, e.send[lo:hi])
		if c.demote {
			demote(c.slot(g&1, c.local), (hi-lo)*e.p.ElemSize)
		}
	} else if s == 0 {
		// Publish the buffers; the leaders fetch the data themselves.
		c.sendAddr[c.local].Store(uint64(uintptr(unsafe.Pointer(unsafe.SliceData(e.send)))))
		c.recvAddr[c.local].Store(uint64(uintptr(unsafe.Pointer(unsafe.SliceData(e.recv)))))
	}
	c.inFlag[c.local].Store(g)
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
	lo, hi := p.segment(s)
	plo, phi := p.partition(hi-lo, c.pos)
	if plo == phi {
		return nil
	}
	t := e.tick()
	w := c.wait
	if e.lag == 1 {
		w.Poll = c.progress
	}
	if err := w.UntilAllAtLeast(c.inFlag, g); err != nil {
		return fmt.Errorf("dpml: leader %d waits for the node's inputs of segment %d: %w", c.pos, s, err)
	}
	e.tock(&c.times.WaitIn, t)
	b := g & 1
	es := p.ElemSize
	res := unsafe.Add(c.result(b), plo*es)
	resT := unsafe.Slice((*T)(res), phi-plo)
	// fold reduces elements [q, q+n) of the segment's partition into res.
	fold := func(q, n int) error {
		t := e.tick()
		defer e.tock(&c.times.Reduce, t)
		if p.CMA {
			return e.foldCMA(unsafe.Add(res, (q-plo)*es), lo+q, n)
		}
		srcs := c.scratchSrcs[:c.ppn]
		for i := range srcs {
			srcs[i] = unsafe.Add(c.slot(b, i), q*es)
		}
		e.kern(unsafe.Add(res, (q-plo)*es), srcs, n)
		if c.demote {
			demote(unsafe.Add(res, (q-plo)*es), n*es)
		}
		return nil
	}
	switch {
	case !e.inter:
		if err := fold(plo, phi-plo); err != nil {
			return err
		}
		return e.post(s, g)
	case e.lag == 0: // DPML: one blocking allreduce
		if err := fold(plo, phi-plo); err != nil {
			return err
		}
		t = e.tick()
		if err := mpi.AllreduceInPlace(c.leaderComm, resT, e.op); err != nil {
			return fmt.Errorf("dpml: leader %d inter-node allreduce of segment %d: %w", c.pos, s, err)
		}
		e.tock(&c.times.Inter, t)
		return e.post(s, g)
	default: // Pipelined: reduce a sub-chunk, start its allreduce, next
		reqs := c.pending[b][:0]
		// Requests of set b are reused: the previous segment of set b
		// completed all of them before this one started.
		if len(c.reqPool[b]) < p.Pipeline {
			c.reqPool[b] = make([]mpi.Request, p.Pipeline)
		}
		for q := 0; q < p.Pipeline; q++ {
			a, z := subchunk(0, phi-plo, p.Pipeline, q, p.Align)
			if a == z {
				continue
			}
			if err := fold(plo+a, z-a); err != nil {
				return err
			}
			t = e.tick()
			r := &c.reqPool[b][q]
			if err := mpi.IallreduceInPlaceReq(c.leaderComm, resT[a:z], e.op, r); err != nil {
				return fmt.Errorf("dpml: leader %d inter-node iallreduce of segment %d: %w", c.pos, s, err)
			}
			reqs = append(reqs, r)
			e.tock(&c.times.Inter, t)
		}
		c.pending[b] = reqs
		c.pendingRange[b] = flagPost{valid: true, gen: g}
	}
	return nil
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
	for {
		done, err := c.testAll(b)
		if err != nil {
			return fmt.Errorf("dpml: leader %d inter-node step: %w", c.pos, err)
		}
		if done {
			break
		}
		if err := c.backoff(t); err != nil {
			return fmt.Errorf("dpml: leader %d waits for the inter-node step: %w", c.pos, err)
		}
	}
	if c.timing {
		c.times.Inter += time.Since(t)
	}
	c.pendingRange[b] = flagPost{}
	return e.post(int(g-e.base-1), g)
}

// post delivers this leader's reduced partition of segment s: with CMA it
// writes it into every local rank's receive buffer; then it raises the
// leader's "result ready" flag.
func (e *run[T]) post(s int, g uint64) error {
	c, p := e.c, e.p
	if p.CMA {
		t := e.tick()
		lo, hi := p.segment(s)
		plo, phi := p.partition(hi-lo, c.pos)
		es := p.ElemSize
		src := unsafe.Add(c.result(g&1), plo*es)
		off := uintptr((lo + plo) * es)
		for i := 0; i < c.ppn; i++ {
			if i == c.local {
				copy(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(e.recv[lo+plo:]))), (phi-plo)*es),
					unsafe.Slice((*byte)(src), (phi-plo)*es))
				continue
			}
			if err := cmaWrite(c.pids[i], src, uintptr(c.recvAddr[i].Load())+off, (phi-plo)*es); err != nil {
				return fmt.Errorf("dpml: leader %d delivers segment %d to local rank %d: %w", c.pos, s, i, err)
			}
		}
		e.tock(&c.times.CopyOut, t)
	}
	c.outFlag[c.pos].Store(g)
	return nil
}

// foldCMA folds elements [at, at+n) of every local rank's send buffer into
// dst, in local-rank order like the shared-memory path: own data is read in
// place, the others' is fetched in groups of up to three into private
// staging buffers, then folded (dst = ((dst op x) op y) op z).
func (e *run[T]) foldCMA(dst unsafe.Pointer, at, n int) error {
	// Work in blocks so the staging buffers stay in the leader's L2.
	blk := max(1, cmaBlockBytes/e.p.ElemSize)
	for q := 0; q < n; q += blk {
		m := min(blk, n-q)
		if err := e.foldCMABlock(unsafe.Add(dst, q*e.p.ElemSize), at+q, m); err != nil {
			return err
		}
	}
	return nil
}

// cmaBlockBytes is the block of a partition fetched from each rank at once.
const cmaBlockBytes = 64 << 10

func (e *run[T]) foldCMABlock(dst unsafe.Pointer, at, n int) error {
	c := e.c
	es := e.p.ElemSize
	bytes := n * es
	if need := 3 * bytes; len(c.scratch) < need {
		c.scratch = make([]byte, 3*cmaBlockBytes)
	}
	fetch := func(i int, into unsafe.Pointer) (unsafe.Pointer, error) {
		if i == c.local {
			return unsafe.Pointer(&e.send[at]), nil
		}
		err := cmaRead(c.pids[i], into, uintptr(c.sendAddr[i].Load())+uintptr(at*es), bytes)
		return into, err
	}
	var bufs [3]unsafe.Pointer
	for k := range bufs {
		bufs[k] = unsafe.Pointer(&c.scratch[k*bytes])
	}
	// Rank 0's data becomes the accumulator.
	if c.local == 0 {
		copy(unsafe.Slice((*byte)(dst), bytes), unsafe.Slice((*byte)(unsafe.Pointer(&e.send[at])), bytes))
	} else if err := cmaRead(c.pids[0], dst, uintptr(c.sendAddr[0].Load())+uintptr(at*es), bytes); err != nil {
		return fmt.Errorf("dpml: leader %d fetches from local rank 0: %w", c.pos, err)
	}
	srcs := c.scratchSrcs[:0]
	for i := 1; i < c.ppn; {
		srcs = append(srcs[:0], dst)
		for k := 0; k < 3 && i < c.ppn; k, i = k+1, i+1 {
			p, err := fetch(i, bufs[k])
			if err != nil {
				return fmt.Errorf("dpml: leader %d fetches from local rank %d: %w", c.pos, i, err)
			}
			srcs = append(srcs, p)
		}
		e.kern(dst, srcs, n)
	}
	return nil
}

func (e *run[T]) copyOut(s int, g uint64) error {
	c, p := e.c, e.p
	lo, hi := p.segment(s)
	t := e.tick()
	active := p.activeLeaders(hi - lo)
	w := c.wait
	if e.lag == 1 && e.lead {
		w.Poll = c.progress
	}
	for j := 0; j < active; j++ {
		if err := w.UntilAtLeast(c.outFlag[j], g); err != nil {
			return fmt.Errorf("dpml: rank %d waits for leader %d's result of segment %d: %w", c.local, j, s, err)
		}
	}
	e.tock(&c.times.WaitOut, t)
	if p.CMA {
		return nil // the leaders wrote the result into recv
	}
	t = e.tick()
	if p.Stream {
		streamCopy(unsafe.Pointer(unsafe.SliceData(e.recv[lo:hi])), c.result(g&1), (hi-lo)*p.ElemSize)
	} else {
		src := unsafe.Slice((*T)(c.result(g&1)), hi-lo)
		copy(e.recv[lo:hi], src)
	}
	e.tock(&c.times.CopyOut, t)
	return nil
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

// backoff paces a polling loop on MPI requests like shm.Waiter paces flag
// waits, and bounds it by the same timeout.
func (c *Comm) backoff(since time.Time) error {
	if c.abort.Load() != 0 {
		return fmt.Errorf("aborted by a local peer")
	}
	to := c.wait.Timeout
	if to == 0 {
		to = shm.DefaultTimeout
	}
	if to > 0 && time.Since(since) > to {
		return fmt.Errorf("timed out after %v", to)
	}
	mpi.Pace()
	shm.Yield()
	return nil
}
