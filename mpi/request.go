package mpi

// #include "dpml_mpi.h"
// #cgo noescape dpml_wait
// #cgo nocallback dpml_wait
// #cgo noescape dpml_test
// #cgo nocallback dpml_test
// #cgo noescape dpml_waitall
// #cgo nocallback dpml_waitall
// #cgo noescape dpml_get_count
// #cgo nocallback dpml_get_count
import "C"

import (
	"runtime"
	"unsafe"
)

// Request is a pending non-blocking operation. The Go memory of its buffers
// is pinned (runtime.Pinner) until Wait, Test or Waitall completes it, so
// MPI may keep using it after the starting call returns; memory that Go did
// not allocate (mmap'd shared memory) needs no pinning and is passed as is.
// A Request must be completed: one dropped while pending leaves its memory
// pinned, which the runtime reports as a leak.
type Request struct {
	req    C.MPI_Request
	status C.MPI_Status
	dt     C.MPI_Datatype
	pin    runtime.Pinner
	fn     string // the MPI function that started it, for errors
	active bool
}

// Status describes a completed receive.
type Status struct {
	Source int // sender's rank
	Tag    int // message tag
	Count  int // elements received (-1 if not a whole number of elements)
}

func statusFrom(st *C.MPI_Status, dt C.MPI_Datatype) Status {
	return Status{
		Source: int(C.dpml_status_source(st)),
		Tag:    int(C.dpml_status_tag(st)),
		Count:  int(C.dpml_get_count(st, dt)),
	}
}

func (r *Request) done() {
	r.active = false
	r.pin.Unpin()
}

// reqPtr is &r.req as the C side takes it (dpml_mpi.h): a char pointer,
// which cgo does not check on each call (package doc, "The call's cost").
func (r *Request) reqPtr() *C.char { return (*C.char)(unsafe.Pointer(&r.req)) }

// Wait blocks until r completes. Waiting on a nil or completed Request
// returns nil at once.
func (r *Request) Wait() error {
	if r == nil || !r.active {
		return nil
	}
	pace()
	rc := C.dpml_wait(r.reqPtr(), &r.status)
	r.done()
	if rc != C.MPI_SUCCESS {
		return mpiError("MPI_Wait("+r.fn+")", rc)
	}
	return nil
}

// Test reports whether r has completed, completing it if so. A nil or
// completed Request reports true.
func (r *Request) Test() (bool, error) {
	if r == nil || !r.active {
		return true, nil
	}
	var flag C.int
	pace()
	rc := C.dpml_test(r.reqPtr(), &flag, &r.status)
	if rc != C.MPI_SUCCESS {
		r.done()
		return true, mpiError("MPI_Test("+r.fn+")", rc)
	}
	if flag == 0 {
		return false, nil
	}
	r.done()
	return true, nil
}

// Status returns the status of a completed Irecv (zero otherwise).
func (r *Request) Status() Status {
	if r == nil || r.active || r.fn != "MPI_Irecv" {
		return Status{}
	}
	return statusFrom(&r.status, r.dt)
}

// Waitall completes every request in reqs (MPI_Waitall); nil and completed
// entries are skipped. On error, the requests that completed are marked so,
// and the first per-request error is returned.
func Waitall(reqs []*Request) error {
	// Small batches stay on the stack: the C function does not keep the
	// arrays (noescape).
	var hbuf [16]C.MPI_Request
	var sbuf [16]C.MPI_Status
	var ibuf [16]int
	hs, sts, idx := hbuf[:0], sbuf[:0], ibuf[:0]
	for i, r := range reqs {
		if r != nil && r.active {
			hs = append(hs, r.req)
			idx = append(idx, i)
		}
	}
	if len(hs) == 0 {
		return nil
	}
	if len(hs) <= len(sbuf) {
		sts = sbuf[:len(hs)]
	} else {
		sts = make([]C.MPI_Status, len(hs))
	}
	pace()
	rc := C.dpml_waitall(C.int(len(hs)), (*C.char)(unsafe.Pointer(&hs[0])), &sts[0])
	if rc == C.MPI_SUCCESS {
		for j, i := range idx {
			r := reqs[i]
			r.req = hs[j]
			r.status = sts[j]
			r.done()
		}
		return nil
	}
	var first error
	for j, i := range idx {
		r := reqs[i]
		r.req = hs[j]
		r.status = sts[j]
		if rc == C.MPI_ERR_IN_STATUS {
			e := C.dpml_status_error(&sts[j])
			if e != C.MPI_SUCCESS && e != C.MPI_ERR_PENDING && first == nil {
				first = mpiError("MPI_Waitall("+r.fn+")", e)
			}
		}
		if C.dpml_request_is_null(hs[j]) != 0 {
			r.done()
		}
	}
	if first == nil {
		first = mpiError("MPI_Waitall", rc)
	}
	return first
}
