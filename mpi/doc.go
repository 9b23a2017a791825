// Package mpi is a thin cgo binding to the system MPI library: the calls
// DPML needs, typed with Go generics, with Go errors instead of aborts.
//
// # Libraries and ABIs
//
// By default the package builds against Open MPI (pkg-config ompi-c); with
// the build tag mpich it builds against MPICH (pkg-config mpich). The Go code
// is the same for both. The two ABIs differ in what a handle is: Open MPI's
// MPI_Comm, MPI_Datatype, MPI_Op and MPI_Request are pointers, MPICH's are
// ints. Predefined handles, null handles and MPI_IN_PLACE are therefore only
// produced and compared in small C helpers (dpml_mpi.h); Go stores handles as
// the C types but never builds or compares them. The raw handle crosses the
// boundary as a uintptr (Comm.Handle, CommFromC): the pointer value for Open
// MPI, the int value for MPICH.
//
// # Threads
//
// Init requests MPI_THREAD_FUNNELED: only the thread that called Init may
// call MPI. Go moves goroutines between threads, so the package's init
// locks the main goroutine to the main OS thread (runtime.LockOSThread);
// call Init and every MPI function from main, or from one goroutine that has
// locked its thread. Unless InitThread(ThreadMultiple) provided
// ThreadMultiple, never call MPI from two goroutines at once; with
// ThreadSerialized any goroutine may call, one at a time (go test runs each
// test on its own goroutine, so tests use ThreadSerialized).
//
// An open question: on the 32-core device an 8-byte MPI_Allreduce had a
// median of 4.9 us from a C program and 15 us from a Go one
// (bench/results/2026-11-22-h200x2). While a rank waits inside a long MPI
// call (a cgo call) the Go runtime's monitor thread (sysmon) keeps waking
// on the rank's core; bench/diag/sysmon measures it, but on the
// development machine neither GOMAXPROCS 2 nor a runtime.Gosched per call
// lowered the rank's total context switches, so sysmon is not shown to be
// the cause.
//
// # Types and ops
//
// The generic functions take any Number (fixed-size ints, uints, floats and
// complex, named types included), each mapped to its exact MPI datatype
// (MPI_INT32_T, MPI_DOUBLE, MPI_C_DOUBLE_COMPLEX, ...). The type is found
// without reflection or allocation for unnamed types. Every reduction first
// checks the op against the type as the MPI standard defines it (CheckOp):
// min and max are not defined on complex, and the logical and bitwise ops
// only on integers.
//
// # Errors
//
// World, Self and every communicator the package creates use
// MPI_ERRORS_RETURN, so MPI failures return *Error (code, class, MPI
// function, message) instead of aborting. Bad arguments are caught in Go,
// before any MPI call, and wrap one of ErrOp, ErrLength, ErrCount,
// ErrOverlap, ErrRank, ErrTag, ErrArg or ErrNilComm (use errors.Is): an op
// invalid for the type, mismatched buffer lengths, more than MaxInt32
// elements, send and receive buffers sharing memory (use the InPlace
// variant), and roots or peers outside the communicator. Empty slices are
// valid everywhere.
//
// # Memory
//
// Blocking calls pass Go slices to MPI directly. Non-blocking calls
// (Iallreduce, Isend, Irecv) pin the Go memory with runtime.Pinner until
// Wait, Test or Waitall completes the Request; a Request must be completed.
// Slices over memory Go did not allocate, such as mmap'd shared memory, work
// the same way (pinning is a no-op for them).
//
// # Open MPI notes
//
// Open MPI does not replace signal handlers that are already installed, so
// the Go runtime keeps its own (nil dereferences still panic). A singleton
// (a test binary run without mpirun) initializes as a 1-rank World.
package mpi
