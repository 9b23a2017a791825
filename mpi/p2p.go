package mpi

// #include "dpml_mpi.h"
// #cgo noescape dpml_send
// #cgo nocallback dpml_send
// #cgo noescape dpml_recv
// #cgo nocallback dpml_recv
// #cgo nocallback dpml_isend
// #cgo nocallback dpml_irecv
import "C"

import "fmt"

func checkDest(c *Comm, fn string, dest int) error {
	if dest == ProcNull || (dest >= 0 && dest < c.size) {
		return nil
	}
	return fmt.Errorf("%w: %s: dest %d not in [0, %d)", ErrRank, fn, dest, c.size)
}

func checkSource(c *Comm, fn string, src int) error {
	if src == AnySource || src == ProcNull || (src >= 0 && src < c.size) {
		return nil
	}
	return fmt.Errorf("%w: %s: source %d not in [0, %d)", ErrRank, fn, src, c.size)
}

func checkTag(fn string, tag int, recv bool) error {
	if tag >= 0 || (recv && tag == AnyTag) {
		return nil
	}
	return fmt.Errorf("%w: %s: tag %d", ErrTag, fn, tag)
}

func checkP2P(c *Comm, fn string, n, peer, tag int, recv bool) error {
	if err := checkComm(c, fn); err != nil {
		return err
	}
	if err := checkCount(fn, n); err != nil {
		return err
	}
	if recv {
		if err := checkSource(c, fn, peer); err != nil {
			return err
		}
	} else if err := checkDest(c, fn, peer); err != nil {
		return err
	}
	return checkTag(fn, tag, recv)
}

// Send sends buf to rank dest (MPI_Send). It may block until a matching
// receive is posted, so a send to oneself needs Isend/Irecv.
func Send[T Number](c *Comm, buf []T, dest, tag int) error {
	if err := checkP2P(c, "Send", len(buf), dest, tag, false); err != nil {
		return err
	}
	pace()
	if rc := C.dpml_send(cbuf(buf), C.int(len(buf)), hx.dt[KindOf[T]()], C.int(dest), C.int(tag), c.x); rc != C.MPI_SUCCESS {
		return mpiError("MPI_Send", rc)
	}
	return nil
}

// Recv receives at most len(buf) elements from source (or AnySource) with
// tag (or AnyTag). Status.Count says how many arrived; a longer message is
// an MPI truncation error.
func Recv[T Number](c *Comm, buf []T, source, tag int) (Status, error) {
	if err := checkP2P(c, "Recv", len(buf), source, tag, true); err != nil {
		return Status{}, err
	}
	k := KindOf[T]()
	var st C.MPI_Status
	pace()
	if rc := C.dpml_recv(cbuf(buf), C.int(len(buf)), hx.dt[k], C.int(source), C.int(tag), c.x, &st); rc != C.MPI_SUCCESS {
		return Status{}, mpiError("MPI_Recv", rc)
	}
	return statusFrom(&st, handles.dt[k]), nil
}

// Isend starts a non-blocking Send; buf must not change until the Request
// completes.
func Isend[T Number](c *Comm, buf []T, dest, tag int) (*Request, error) {
	r := &Request{}
	if err := IsendReq(c, buf, dest, tag, r); err != nil {
		return nil, err
	}
	return r, nil
}

// IsendReq is Isend started in a Request the caller owns, which must not
// be pending (see IallreduceInPlaceReq): a loop of sends that reuses its
// Requests allocates nothing.
func IsendReq[T Number](c *Comm, buf []T, dest, tag int, r *Request) error {
	if err := checkP2P(c, "Isend", len(buf), dest, tag, false); err != nil {
		return err
	}
	if r == nil || r.active {
		return fmt.Errorf("%w: Isend: the Request is nil or still pending", ErrArg)
	}
	k := KindOf[T]()
	bp := bufPtr(buf)
	r.fn, r.dt = "MPI_Isend", handles.dt[k]
	pin(r, bp)
	pace()
	if rc := C.dpml_isend((*C.char)(bp), C.int(len(buf)), hx.dt[k], C.int(dest), C.int(tag), c.x, r.reqPtr()); rc != C.MPI_SUCCESS {
		r.pin.Unpin()
		return mpiError("MPI_Isend", rc)
	}
	r.active = true
	return nil
}

// Irecv starts a non-blocking Recv; buf must not be touched until the
// Request completes. Request.Status then describes the message.
func Irecv[T Number](c *Comm, buf []T, source, tag int) (*Request, error) {
	r := &Request{}
	if err := IrecvReq(c, buf, source, tag, r); err != nil {
		return nil, err
	}
	return r, nil
}

// IrecvReq is Irecv started in a Request the caller owns, which must not
// be pending (see IallreduceInPlaceReq).
func IrecvReq[T Number](c *Comm, buf []T, source, tag int, r *Request) error {
	if err := checkP2P(c, "Irecv", len(buf), source, tag, true); err != nil {
		return err
	}
	if r == nil || r.active {
		return fmt.Errorf("%w: Irecv: the Request is nil or still pending", ErrArg)
	}
	k := KindOf[T]()
	bp := bufPtr(buf)
	r.fn, r.dt = "MPI_Irecv", handles.dt[k]
	pin(r, bp)
	pace()
	if rc := C.dpml_irecv((*C.char)(bp), C.int(len(buf)), hx.dt[k], C.int(source), C.int(tag), c.x, r.reqPtr()); rc != C.MPI_SUCCESS {
		r.pin.Unpin()
		return mpiError("MPI_Irecv", rc)
	}
	r.active = true
	return nil
}
