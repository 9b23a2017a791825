package mpi

// #include "dpml_mpi.h"
import "C"

import "fmt"

// Comm is an MPI communicator. Rank and Size are cached at creation because
// they sit on hot paths.
type Comm struct {
	h C.MPI_Comm
	// x is h as the calls that carry data take it (dpml_mpi.h,
	// DPML_COMM): an integer, which cgo does not check (package doc, "The
	// call's cost"); Handle gives it out.
	x          C.uintptr_t
	rank, size int
	builtin    bool // World or Self: never freed
	borrowed   bool // wrapped from C or Fortran: the owner frees it
	freed      bool
}

// Rank is this process's rank in c.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of processes in c.
func (c *Comm) Size() int { return c.size }

func (c *Comm) fillRankSize() error {
	var r, s C.int
	if rc := C.MPI_Comm_rank(c.h, &r); rc != C.MPI_SUCCESS {
		return mpiError("MPI_Comm_rank", rc)
	}
	if rc := C.MPI_Comm_size(c.h, &s); rc != C.MPI_SUCCESS {
		return mpiError("MPI_Comm_size", rc)
	}
	c.rank, c.size = int(r), int(s)
	return nil
}

// check rejects nil and freed communicators before they reach MPI.
func (c *Comm) check() error {
	if c == nil || c.freed {
		return ErrNilComm
	}
	return nil
}

// newComm wraps a communicator this package created. It sets
// MPI_ERRORS_RETURN explicitly: new communicators inherit the parent's
// handler, but the parent may be a borrowed C communicator with another one.
func newComm(h C.MPI_Comm) (*Comm, error) {
	c := &Comm{h: h, x: C.dpml_comm_to_uintptr(h)}
	if rc := C.dpml_set_errors_return(h); rc != C.MPI_SUCCESS {
		C.MPI_Comm_free(&c.h)
		return nil, mpiError("MPI_Comm_set_errhandler", rc)
	}
	if err := c.fillRankSize(); err != nil {
		C.MPI_Comm_free(&c.h)
		return nil, err
	}
	return c, nil
}

// Split is MPI_Comm_split. A process passing color Undefined gets (nil, nil):
// it belongs to no new communicator. Other colors must be non-negative.
func (c *Comm) Split(color, key int) (*Comm, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if color < 0 && color != Undefined {
		return nil, fmt.Errorf("%w: Split color %d (must be >= 0 or Undefined)", ErrArg, color)
	}
	h := C.dpml_comm_null()
	pace()
	if rc := C.MPI_Comm_split(c.h, C.int(color), C.int(key), &h); rc != C.MPI_SUCCESS {
		return nil, mpiError("MPI_Comm_split", rc)
	}
	if C.dpml_comm_is_null(h) != 0 {
		return nil, nil
	}
	return newComm(h)
}

// SplitShared splits c into communicators of processes that can share memory
// (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED): one per node.
func (c *Comm) SplitShared(key int) (*Comm, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	h := C.dpml_comm_null()
	pace()
	if rc := C.dpml_split_shared(c.h, C.int(key), &h); rc != C.MPI_SUCCESS {
		return nil, mpiError("MPI_Comm_split_type", rc)
	}
	if C.dpml_comm_is_null(h) != 0 {
		return nil, nil
	}
	return newComm(h)
}

// Dup is MPI_Comm_dup: same group, separate message space.
func (c *Comm) Dup() (*Comm, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	h := C.dpml_comm_null()
	pace()
	if rc := C.MPI_Comm_dup(c.h, &h); rc != C.MPI_SUCCESS {
		return nil, mpiError("MPI_Comm_dup", rc)
	}
	return newComm(h)
}

// Free releases a communicator created by Split, SplitShared or Dup and makes
// c unusable. It is a no-op on World and Self and on nil or already freed
// communicators. On a communicator wrapped by CommFromC or CommFromFint it
// only forgets the handle: the owner frees it.
func (c *Comm) Free() error {
	if c == nil || c.freed || c.builtin {
		return nil
	}
	c.freed = true
	c.x = C.dpml_comm_to_uintptr(C.dpml_comm_null())
	if c.borrowed {
		c.h = C.dpml_comm_null()
		return nil
	}
	if rc := C.MPI_Comm_free(&c.h); rc != C.MPI_SUCCESS {
		c.h = C.dpml_comm_null()
		return mpiError("MPI_Comm_free", rc)
	}
	c.h = C.dpml_comm_null() // MPI_Comm_free already did; be explicit
	return nil
}

// Barrier is MPI_Barrier.
func (c *Comm) Barrier() error {
	if err := c.check(); err != nil {
		return err
	}
	pace()
	if rc := C.dpml_barrier(c.x); rc != C.MPI_SUCCESS {
		return mpiError("MPI_Barrier", rc)
	}
	return nil
}

// Fint returns the Fortran handle (MPI_Comm_c2f), an int that can cross
// language boundaries and be turned back with CommFromFint.
func (c *Comm) Fint() int {
	if c == nil || c.freed {
		return int(C.dpml_comm_fint(C.dpml_comm_null()))
	}
	return int(C.dpml_comm_fint(c.h))
}

// CommFromFint wraps the communicator with Fortran handle f (MPI_Comm_f2c).
// It returns nil for MPI_COMM_NULL or an invalid handle. The result is
// borrowed: Free does not free the underlying communicator.
func CommFromFint(f int) *Comm {
	return wrap(C.dpml_comm_from_fint(C.int(f)))
}

// CommFromC wraps a C MPI_Comm received from C code (for a library called
// from C). Pass the handle as an integer: with Open MPI, MPI_Comm is a
// pointer, pass its address value, uintptr(unsafe.Pointer(p)); with MPICH,
// MPI_Comm is an int, pass uintptr(uint32(h)) (a sign-extended value works
// too; only the low 32 bits are used). It returns nil for MPI_COMM_NULL or a
// handle MPI rejects. The result is borrowed: Free does not free it, and its
// error handler is left as the owner set it.
func CommFromC(h uintptr) *Comm {
	return wrap(C.dpml_comm_from_uintptr(C.uintptr_t(h)))
}

// Handle returns c's C MPI_Comm as an integer, in the form CommFromC takes,
// for passing to C code.
func (c *Comm) Handle() uintptr {
	if c == nil || c.freed {
		return uintptr(C.dpml_comm_to_uintptr(C.dpml_comm_null()))
	}
	return uintptr(c.x)
}

func wrap(h C.MPI_Comm) *Comm {
	if C.dpml_comm_is_null(h) != 0 {
		return nil
	}
	c := &Comm{h: h, x: C.dpml_comm_to_uintptr(h), borrowed: true}
	if c.fillRankSize() != nil {
		return nil
	}
	return c
}

// String describes c for logs.
func (c *Comm) String() string {
	if c == nil || c.freed {
		return "mpi.Comm(nil)"
	}
	return fmt.Sprintf("mpi.Comm(rank %d of %d)", c.rank, c.size)
}
