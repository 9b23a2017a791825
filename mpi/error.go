package mpi

// #include "dpml_mpi.h"
import "C"

import (
	"errors"
	"fmt"
)

// Error is an error returned by the MPI library. World, Self and every
// communicator this package creates use MPI_ERRORS_RETURN, so failures come
// back as *Error instead of aborting the job.
type Error struct {
	Code  int    // the return code
	Class int    // MPI_Error_class(Code)
	Op    string // the MPI function, e.g. "MPI_Allreduce"
	Msg   string // MPI_Error_string(Code)
}

func (e *Error) Error() string {
	return fmt.Sprintf("mpi: %s: %s (code %d, class %d)", e.Op, e.Msg, e.Code, e.Class)
}

// Errors for arguments rejected in Go, before any MPI call. They come
// wrapped with the function and the details; test with errors.Is.
var (
	ErrOp        = errors.New("mpi: invalid op for datatype")
	ErrLength    = errors.New("mpi: buffer length mismatch")
	ErrCount     = errors.New("mpi: count exceeds MaxInt32")
	ErrOverlap   = errors.New("mpi: send and receive buffers overlap (use the InPlace variant)")
	ErrRank      = errors.New("mpi: invalid rank")
	ErrTag       = errors.New("mpi: invalid tag")
	ErrArg       = errors.New("mpi: invalid argument")
	ErrNilComm   = errors.New("mpi: nil or freed communicator")
	ErrNotInit   = errors.New("mpi: MPI is not initialized")
	ErrFinalized = errors.New("mpi: MPI is already finalized")
)

// mpiError converts a non-success return code; it is only called on failure.
func mpiError(op string, rc C.int) error {
	var buf [C.MPI_MAX_ERROR_STRING + 1]C.char
	n := C.dpml_error_string(rc, &buf[0], C.int(len(buf)))
	msg := C.GoStringN(&buf[0], n)
	return &Error{Code: int(rc), Class: int(C.dpml_error_class(rc)), Op: op, Msg: msg}
}

// ErrorFromCode is the *Error for the failure rc of MPI function op made
// by C code (libdpml.so's C layer runs some calls without Go and reports
// their failures through the engine). rc must not be MPI_SUCCESS.
func ErrorFromCode(op string, rc int) error { return mpiError(op, C.int(rc)) }
