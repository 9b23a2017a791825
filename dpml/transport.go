package dpml

import (
	"fmt"
	"unsafe"

	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/shm"
)

// transport moves one segment's data inside a node: every rank's input to
// the leaders (reduced by them, partition by partition), and the leaders'
// results back to every rank. The executor (execute) runs the same steps
// for every transport and never asks which one it has:
//
//	every rank   contribute(s, g)   make my input of segment s available
//	leader j     await(s, g)        wait until what fold reads is ready
//	leader j     fold(...)          reduce partition j (or a sub-chunk of it)
//	                                into result(g)
//	             (inter-node step on result(g), by the executor)
//	leader j     deliver(s, g)      hand the partition's result to the ranks
//	             (out[j] = g, by the executor)
//	every rank   collect(s, g)      after the active leaders' flags: my result
//
// Implementations: shmCopies (copy-in/copy-out through the node segment),
// cmaAttach (leaders read and write the ranks' buffers by cross-memory
// attach) and treeReduce (a reduction tree over cache-line flags, for small
// messages). They hold no per-call state: what a call needs is in call.
type transport interface {
	contribute(x *call, s int, g uint64) error
	await(x *call, s int, g uint64, w *shm.Waiter) error
	fold(x *call, s int, g uint64, dst unsafe.Pointer, at, n int) error
	result(x *call, g uint64) unsafe.Pointer
	deliver(x *call, s int, g uint64) error
	collect(x *call, s int, g uint64) error
	// pinsBuffers: peers read or write this rank's buffers by address
	// during the call, so they must not move.
	pinsBuffers() bool
}

// call is the type-free state of the call in progress, kept in the Comm so
// that handing it to a transport allocates nothing.
type call struct {
	c          *Comm
	p          *Plan
	send, recv unsafe.Pointer // the caller's buffers
	es         int            // bytes per element
	kern       kernel
	kind       mpi.Kind // the elements' kind and the op, for the tree's C folds
	op         mpi.Op
}

// span returns the address of element i of segment s's part of buf and the
// segment's length in elements.
func (x *call) span(buf unsafe.Pointer, s int) (unsafe.Pointer, int) {
	lo, hi := x.p.segment(s)
	return unsafe.Add(buf, lo*x.es), hi - lo
}

// shmCopies is the paper's intra-node path: every rank copies its input into
// its slot of the node segment, leader j folds partition j of all slots in
// local-rank order, and every rank copies the result out.
type shmCopies struct{}

func (shmCopies) pinsBuffers() bool { return false }

func (shmCopies) contribute(x *call, s int, g uint64) error {
	c := x.c
	src, n := x.span(x.send, s)
	dst := c.seg.slot(g, c.local)
	memmove(dst, src, n*x.es)
	if c.demote {
		demote(dst, n*x.es)
	}
	return nil
}

func (shmCopies) await(x *call, s int, g uint64, w *shm.Waiter) error {
	return w.UntilAllAtLeast(x.c.seg.inSeq, g)
}

func (shmCopies) fold(x *call, s int, g uint64, dst unsafe.Pointer, at, n int) error {
	c := x.c
	srcs := c.scratchSrcs[:c.ppn]
	for i := range srcs {
		srcs[i] = unsafe.Add(c.seg.slot(g, i), at*x.es)
	}
	x.kern(dst, srcs, n)
	if c.demote {
		demote(dst, n*x.es)
	}
	return nil
}

func (shmCopies) result(x *call, g uint64) unsafe.Pointer { return x.c.seg.result(g) }

func (shmCopies) deliver(*call, int, uint64) error { return nil }

func (shmCopies) collect(x *call, s int, g uint64) error { return copyResult(x, x.c.seg.result(g), s) }

// copyResult copies segment s's result from src (the result area of the
// segment's buffer set) into the receive buffer, with streaming stores when
// the plan says the result would only evict the cache.
func copyResult(x *call, src unsafe.Pointer, s int) error {
	dst, n := x.span(x.recv, s)
	if x.p.Stream {
		streamCopy(dst, src, n*x.es)
	} else {
		memmove(dst, src, n*x.es)
	}
	return nil
}

// cmaAttach: copy-in only publishes the buffers' addresses; a leader fetches
// its partition from every rank's send buffer (process_vm_readv) and writes
// the result into every rank's receive buffer (process_vm_writev) before
// raising its flag; collect has nothing left to do.
type cmaAttach struct{}

func (cmaAttach) pinsBuffers() bool { return true }

func (cmaAttach) contribute(x *call, s int, g uint64) error {
	if s == 0 {
		l := x.c.seg.in[x.c.local]
		l.payload[cmaSendWord] = uint64(uintptr(x.send))
		l.payload[cmaRecvWord] = uint64(uintptr(x.recv))
	}
	return nil
}

func (cmaAttach) await(x *call, s int, g uint64, w *shm.Waiter) error {
	return w.UntilAllAtLeast(x.c.seg.inSeq, g)
}

func (cmaAttach) result(x *call, g uint64) unsafe.Pointer { return x.c.seg.result(g) }

func (cmaAttach) collect(*call, int, uint64) error { return nil }

// fold folds elements [at, at+n) of segment s of every local rank's send
// buffer into dst, in local-rank order like the shared-memory path: own
// data is read in place, the others' is fetched in groups of up to three
// into private staging buffers, then folded (dst = ((dst op x) op y) op z).
// It works in blocks so the staging buffers stay in the leader's L2.
func (cmaAttach) fold(x *call, s int, g uint64, dst unsafe.Pointer, at, n int) error {
	lo, _ := x.p.segment(s)
	blk := max(1, cmaBlockBytes/x.es)
	for q := 0; q < n; q += blk {
		m := min(blk, n-q)
		if err := foldCMABlock(x, unsafe.Add(dst, q*x.es), lo+at+q, m); err != nil {
			return err
		}
	}
	return nil
}

// cmaBlockBytes is the block of a partition fetched from each rank at once.
const cmaBlockBytes = 64 << 10

func foldCMABlock(x *call, dst unsafe.Pointer, at, n int) error {
	c := x.c
	bytes := n * x.es
	if need := 3 * bytes; len(c.scratch) < need {
		c.scratch = make([]byte, 3*cmaBlockBytes)
	}
	remote := func(i int) uintptr { return uintptr(c.seg.in[i].payload[cmaSendWord]) + uintptr(at*x.es) }
	own := unsafe.Add(x.send, at*x.es)
	// Rank 0's data becomes the accumulator.
	if c.local == 0 {
		memmove(dst, own, bytes)
	} else if err := cmaRead(c.pids[0], dst, remote(0), bytes); err != nil {
		return fmt.Errorf("dpml: leader %d fetches from local rank 0: %w", c.pos, err)
	}
	srcs := c.scratchSrcs[:0]
	for i := 1; i < c.ppn; {
		srcs = append(srcs[:0], dst)
		for k := 0; k < 3 && i < c.ppn; k, i = k+1, i+1 {
			if i == c.local {
				srcs = append(srcs, own)
				continue
			}
			into := unsafe.Pointer(&c.scratch[k*bytes])
			if err := cmaRead(c.pids[i], into, remote(i), bytes); err != nil {
				return fmt.Errorf("dpml: leader %d fetches from local rank %d: %w", c.pos, i, err)
			}
			srcs = append(srcs, into)
		}
		x.kern(dst, srcs, n)
	}
	return nil
}

// deliver writes this leader's reduced partition of segment s into every
// local rank's receive buffer.
func (cmaAttach) deliver(x *call, s int, g uint64) error {
	c, p := x.c, x.p
	lo, hi := p.segment(s)
	plo, phi := p.partition(hi-lo, c.pos)
	src := unsafe.Add(c.seg.result(g), plo*x.es)
	off := uintptr((lo + plo) * x.es)
	n := (phi - plo) * x.es
	for i := 0; i < c.ppn; i++ {
		if i == c.local {
			memmove(unsafe.Add(x.recv, off), src, n)
			continue
		}
		addr := uintptr(c.seg.in[i].payload[cmaRecvWord]) + off
		if err := cmaWrite(c.pids[i], src, addr, n); err != nil {
			return fmt.Errorf("dpml: leader %d delivers segment %d to local rank %d: %w", c.pos, s, i, err)
		}
	}
	return nil
}
