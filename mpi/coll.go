package mpi

// /* The blocking calls do not keep the buffers (noescape lets small stack
//    buffers stay on the stack); the non-blocking ones do, so they are not
//    marked noescape. MPI never calls back into Go (nocallback). */
// #include "dpml_mpi.h"
// #cgo noescape dpml_allreduce
// #cgo nocallback dpml_allreduce
// #cgo noescape dpml_pallreduce
// #cgo nocallback dpml_pallreduce
// #cgo noescape dpml_allreduce_inplace
// #cgo nocallback dpml_allreduce_inplace
// #cgo nocallback dpml_iallreduce
// #cgo nocallback dpml_iallreduce_inplace
// #cgo noescape dpml_reduce
// #cgo nocallback dpml_reduce
// #cgo noescape dpml_reduce_inplace
// #cgo nocallback dpml_reduce_inplace
// #cgo noescape dpml_bcast
// #cgo nocallback dpml_bcast
// #cgo noescape dpml_allgather
// #cgo nocallback dpml_allgather
import "C"

import (
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"
)

// Argument checks shared by the collectives; all run before any MPI call.

func checkComm(c *Comm, fn string) error {
	if c == nil || c.freed {
		return fmt.Errorf("%w: %s", ErrNilComm, fn)
	}
	return nil
}

func checkReduce(c *Comm, fn string, op Op, k Kind, n int) error {
	if c == nil || c.freed {
		return fmt.Errorf("%w: %s", ErrNilComm, fn)
	}
	if !OpValidFor(op, k) {
		return opError(fn, op, k)
	}
	return checkCount(fn, n)
}

func checkCount(fn string, n int) error {
	if n > math.MaxInt32 {
		return fmt.Errorf("%w: %s: %d elements", ErrCount, fn, n)
	}
	return nil
}

func checkRoot(c *Comm, fn string, root int) error {
	if root < 0 || root >= c.size {
		return fmt.Errorf("%w: %s: root %d not in [0, %d)", ErrRank, fn, root, c.size)
	}
	return nil
}

func lengthError(fn, what string, got, want int) error {
	return fmt.Errorf("%w: %s: len(%s) = %d, want %d", ErrLength, fn, what, got, want)
}

func overlapError(fn string) error {
	return fmt.Errorf("%w: %s", ErrOverlap, fn)
}

// Allreduce combines send from every rank with op and stores the result in
// recv on every rank. len(recv) must equal len(send), and the two must not
// share memory (use AllreduceInPlace).
func Allreduce[T Number](c *Comm, send, recv []T, op Op) error {
	const fn = "Allreduce"
	n := len(send)
	k := KindOf[T]()
	if err := checkReduce(c, fn, op, k, n); err != nil {
		return err
	}
	if len(recv) != n {
		return lengthError(fn, "recv", len(recv), n)
	}
	if overlap(send, recv) {
		return overlapError(fn)
	}
	pace()
	var rc C.int
	if interposed.Load() {
		rc = C.dpml_pallreduce(cbuf(send), cbuf(recv), C.int(n), hx.dt[k], hx.op[op], c.x)
	} else {
		rc = C.dpml_allreduce(cbuf(send), cbuf(recv), C.int(n), hx.dt[k], hx.op[op], c.x)
	}
	if rc != C.MPI_SUCCESS {
		return mpiError("MPI_Allreduce", rc)
	}
	return nil
}

// AllreduceInPlace is Allreduce with buf as both input and output
// (MPI_IN_PLACE).
func AllreduceInPlace[T Number](c *Comm, buf []T, op Op) error {
	const fn = "AllreduceInPlace"
	k := KindOf[T]()
	if err := checkReduce(c, fn, op, k, len(buf)); err != nil {
		return err
	}
	pace()
	var rc C.int
	if interposed.Load() {
		rc = C.dpml_pallreduce_inplace(cbuf(buf), C.int(len(buf)), hx.dt[k], hx.op[op], c.x)
	} else {
		rc = C.dpml_allreduce_inplace(cbuf(buf), C.int(len(buf)), hx.dt[k], hx.op[op], c.x)
	}
	if rc != C.MPI_SUCCESS {
		return mpiError("MPI_Allreduce", rc)
	}
	return nil
}

// interposed: SetInterposed was called.
var interposed atomic.Bool

// SetInterposed tells the package that the process's MPI_Allreduce is
// interposed by the code that calls it (a profiling-interface library
// such as libdpml.so, whose MPI_Allreduce runs DPML): Allreduce and
// AllreduceInPlace then call the MPI library's PMPI_Allreduce, so that
// the interposer's own calls through this package do not enter it again.
// Call it before any such call; it cannot be undone.
func SetInterposed() { interposed.Store(true) }

// Iallreduce starts a non-blocking Allreduce. Neither slice may be touched
// until the Request completes.
func Iallreduce[T Number](c *Comm, send, recv []T, op Op) (*Request, error) {
	const fn = "Iallreduce"
	n := len(send)
	k := KindOf[T]()
	if err := checkReduce(c, fn, op, k, n); err != nil {
		return nil, err
	}
	if len(recv) != n {
		return nil, lengthError(fn, "recv", len(recv), n)
	}
	if overlap(send, recv) {
		return nil, overlapError(fn)
	}
	sp, rp := bufPtr(send), bufPtr(recv)
	r := &Request{fn: "MPI_Iallreduce", dt: handles.dt[k]}
	pin(r, sp)
	pin(r, rp)
	pace()
	if rc := C.dpml_iallreduce((*C.char)(sp), (*C.char)(rp), C.int(n), hx.dt[k], hx.op[op], c.x, r.reqPtr()); rc != C.MPI_SUCCESS {
		r.pin.Unpin()
		return nil, mpiError("MPI_Iallreduce", rc)
	}
	r.active = true
	return r, nil
}

// IallreduceInPlace starts a non-blocking AllreduceInPlace.
func IallreduceInPlace[T Number](c *Comm, buf []T, op Op) (*Request, error) {
	r := &Request{}
	if err := IallreduceInPlaceReq(c, buf, op, r); err != nil {
		return nil, err
	}
	return r, nil
}

// IallreduceInPlaceReq is IallreduceInPlace started in a Request the caller
// owns, which must not be pending (its zero value, or one completed by
// Wait, Test or Waitall): a loop of non-blocking calls that reuses its
// Requests allocates nothing.
func IallreduceInPlaceReq[T Number](c *Comm, buf []T, op Op, r *Request) error {
	const fn = "IallreduceInPlace"
	k := KindOf[T]()
	if err := checkReduce(c, fn, op, k, len(buf)); err != nil {
		return err
	}
	if r == nil || r.active {
		return fmt.Errorf("%w: %s: the Request is nil or still pending", ErrArg, fn)
	}
	bp := bufPtr(buf)
	r.fn, r.dt = "MPI_Iallreduce", handles.dt[k]
	pin(r, bp)
	pace()
	if rc := C.dpml_iallreduce_inplace((*C.char)(bp), C.int(len(buf)), hx.dt[k], hx.op[op], c.x, r.reqPtr()); rc != C.MPI_SUCCESS {
		r.pin.Unpin()
		return mpiError("MPI_Iallreduce", rc)
	}
	r.active = true
	return nil
}

// pin pins p for the life of r; nil (empty slice) needs nothing, and
// non-Go memory is ignored by the Pinner.
func pin(r *Request, p unsafe.Pointer) {
	if p != nil {
		r.pin.Pin(p)
	}
}

// Reduce combines send from every rank with op into recv on root. On root,
// len(recv) must equal len(send) and they must not overlap (use
// ReduceInPlace); elsewhere recv is ignored and may be nil.
func Reduce[T Number](c *Comm, send, recv []T, op Op, root int) error {
	const fn = "Reduce"
	n := len(send)
	k := KindOf[T]()
	if err := checkReduce(c, fn, op, k, n); err != nil {
		return err
	}
	if err := checkRoot(c, fn, root); err != nil {
		return err
	}
	var rp *C.char
	if c.rank == root {
		if len(recv) != n {
			return lengthError(fn, "recv", len(recv), n)
		}
		if overlap(send, recv) {
			return overlapError(fn)
		}
		rp = cbuf(recv)
	}
	pace()
	if rc := C.dpml_reduce(cbuf(send), rp, C.int(n), hx.dt[k], hx.op[op], C.int(root), c.x); rc != C.MPI_SUCCESS {
		return mpiError("MPI_Reduce", rc)
	}
	return nil
}

// ReduceInPlace is Reduce where buf is the input on every rank and, on root,
// also the output (MPI_IN_PLACE on root). Non-root buffers are unchanged.
func ReduceInPlace[T Number](c *Comm, buf []T, op Op, root int) error {
	const fn = "ReduceInPlace"
	k := KindOf[T]()
	if err := checkReduce(c, fn, op, k, len(buf)); err != nil {
		return err
	}
	if err := checkRoot(c, fn, root); err != nil {
		return err
	}
	pace()
	var rc C.int
	if c.rank == root {
		rc = C.dpml_reduce_inplace(cbuf(buf), C.int(len(buf)), hx.dt[k], hx.op[op], C.int(root), c.x)
	} else {
		rc = C.dpml_reduce(cbuf(buf), nil, C.int(len(buf)), hx.dt[k], hx.op[op], C.int(root), c.x)
	}
	if rc != C.MPI_SUCCESS {
		return mpiError("MPI_Reduce", rc)
	}
	return nil
}

// Bcast copies buf from root to every rank; every rank passes the same length.
func Bcast[T Number](c *Comm, buf []T, root int) error {
	const fn = "Bcast"
	if err := checkComm(c, fn); err != nil {
		return err
	}
	if err := checkCount(fn, len(buf)); err != nil {
		return err
	}
	if err := checkRoot(c, fn, root); err != nil {
		return err
	}
	pace()
	if rc := C.dpml_bcast(cbuf(buf), C.int(len(buf)), hx.dt[KindOf[T]()], C.int(root), c.x); rc != C.MPI_SUCCESS {
		return mpiError("MPI_Bcast", rc)
	}
	return nil
}

// Allgather concatenates send from every rank, in rank order, into recv on
// every rank: len(recv) must be len(send)*Size, and they must not overlap.
func Allgather[T Number](c *Comm, send, recv []T) error {
	const fn = "Allgather"
	if err := checkComm(c, fn); err != nil {
		return err
	}
	n := len(send)
	if err := checkCount(fn, n); err != nil {
		return err
	}
	if len(recv) != n*c.size {
		return lengthError(fn, "recv", len(recv), n*c.size)
	}
	if overlap(send, recv) {
		return overlapError(fn)
	}
	pace()
	if rc := C.dpml_allgather(cbuf(send), cbuf(recv), C.int(n), hx.dt[KindOf[T]()], c.x); rc != C.MPI_SUCCESS {
		return mpiError("MPI_Allgather", rc)
	}
	return nil
}
