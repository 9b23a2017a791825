// Package mpi is a thin cgo binding to the system MPI library: the calls
// DPML needs, typed with Go generics, with Go errors instead of aborts.
//
// # Usage
//
//	func main() {
//		if _, err := mpi.Init(); err != nil { // from main: the package locks it to its thread
//			log.Fatal(err)
//		}
//		defer mpi.Finalize()
//		world := mpi.World() // nil before Init
//		x := []float64{float64(world.Rank())}
//		sum := make([]float64, 1)
//		if err := mpi.Allreduce(world, x, sum, mpi.OpSum); err != nil {
//			log.Fatal(err) // an *mpi.Error; the library's errors return, they do not abort
//		}
//	}
//
// Build with cgo and Open MPI's pkg-config file ompi-c (the tag mpich for
// MPICH); run under mpirun, dpmlrun, or alone as one rank.
//
// # Libraries and ABIs
//
// By default the package builds against Open MPI (pkg-config ompi-c); with
// the build tag mpich it builds against MPICH (pkg-config mpich), whose ABI
// MVAPICH2, Intel MPI and Cray MPICH share (make build MPI=mpich; tested
// with MPICH 4.0.2: go test -tags mpich ./mpi). The Go code is the same for
// both. The two ABIs differ in what a handle is: Open MPI's
// MPI_Comm, MPI_Datatype, MPI_Op and MPI_Request are pointers, MPICH's are
// ints. Predefined handles, null handles and MPI_IN_PLACE are therefore only
// produced and compared in small C helpers (dpml_mpi.h); Go stores handles as
// the C types but never builds or compares them. The raw handle crosses the
// boundary as a uintptr (Comm.Handle, CommFromC): the pointer value for Open
// MPI, the int value for MPICH.
//
// # Threads
//
// Only the thread that called Init may call MPI. Go moves goroutines
// between threads, so the package's init locks the main goroutine to the
// main OS thread (runtime.LockOSThread); call Init and every MPI function
// from main, or from one goroutine that has locked its thread. Unless
// InitThread(ThreadMultiple) provided ThreadMultiple, never call MPI from
// two goroutines at once; with ThreadSerialized any goroutine may call, one
// at a time (go test runs each test on its own goroutine, so tests use
// ThreadSerialized).
//
// # Thread level
//
// Init asks the library for InitLevel: MPI_THREAD_SINGLE on Open MPI,
// MPI_THREAD_FUNNELED on MPICH. Funneled describes a Go program exactly
// (the runtime runs threads of its own, but only the locked goroutine's
// thread calls MPI), and it is what Init asked for before. On Open MPI it
// is also slow: Open MPI 4.1 switches its internal locking on at any
// level above single, so every fragment sent, every match and every
// progress step takes and releases a pthread mutex. Measured on the 2-core
// development machine (Open MPI 4.1.4, 2 ranks, --bind-to core, a C loop
// of 500,000 8-byte MPI_Allreduce; three runs each): 0.50-0.57 us per call
// with single against 0.67-0.70 us with funneled; a perf profile of a Go
// rank calling through this package at funneled put 17% of its samples in
// pthread_mutex_lock/unlock (from mca_btl_vader_sendi and the match
// callback), the C loop at single none. Deeper algorithms (recursive
// doubling over 32 ranks: five exchanges) pay it at every step. MPICH
// locks at MPI_THREAD_MULTIPLE only: the same loop took 0.72-0.82 us at
// single and 0.72-0.75 at funneled, so Init keeps funneled there.
//
// Single is, by the letter of the standard, the level of a process with
// one thread. What the two libraries do with it is decide whether their
// own state needs protecting from concurrent MPI callers; neither relies
// on the process having no other threads (each runs helper threads of its
// own at every level, and so does every OpenMP program that calls
// MPI_Init). A Go program that calls MPI from one goroutine meets that.
// InitThread(ThreadFunneled) asks for funneled regardless; a C program
// with libdpml.so keeps whatever level it initialized.
//
// Every call that may wait first calls the hook SetWaitHook installs:
// dpml and libdpml.so install internal/runtime/gosched's pacing there, which keeps
// the Go scheduler off a core-bound rank's core while it waits in MPI
// (that package's doc says why and what it measured).
//
// # The call's cost
//
// With the scheduler quiet, what is left between a Go rank and a C rank
// is the price of each call, paid once per MPI call on every rank and, in
// a collective, on the critical path. cgo checks every argument of a
// pointer type on every call (runtime.cgoCheckPointer: is it a Go pointer,
// to what, does that hold Go pointers), and in Open MPI every handle is a
// pointer: an Allreduce had five checks (two buffers, the datatype, the op,
// the communicator), as much again as the cgo transition itself in a
// profile of a 2-rank back-to-back loop. The calls that carry data or wait
// (Allreduce, Reduce, Bcast, Allgather, Send, Recv, Barrier, their
// non-blocking forms, Wait, Test, Waitall) therefore take their handles as
// integers (the Go side caches them: Comm.x and hx, converted back in
// dpml_mpi.h) and their buffers and request handles as char pointers,
// which cgo does not check because char holds no pointer. They stay
// pointers, so the collector keeps them alive during the call and a stack
// that moves takes them along; the element types (Number) hold no
// pointers, the only thing the check would have verified. A non-blocking
// call's buffers are still pinned (runtime.Pinner) until its Request
// completes: the pin, not the check, is what lets MPI hold them. Package
// dpml's C tree call (dpml/internal/fused) passes its state the same
// way. Measured with bench/diag/gocall clock (an allreduce of one float32
// on MPI_COMM_SELF, no peer to wait for) on the 2-core
// development machine (2 ranks, 3 launches of each build): C 11-12 ns a
// call, mpi.Allreduce 86-97 ns before and 65-70 ns after; an empty cgo
// call costs 29 ns there and the wait hook (internal/runtime/gosched's Pace) 20 ns. On a 16-core node (16 ranks, max
// over ranks, medians of 3 launches): C 40 ns, mpi.Allreduce
// 291 ns before and 178 after (a cgo call 68, Pace 40); the bare 1x16
// loops' Go/C fell from 1.02-1.16 to 1.04-1.08 at 4 B-4 KiB, and
// dpmlbench's (auto, b2b, against the C client with libdpml.so) from at
// most 1.30 to at most 1.15. What remains is that cgo call and Pace, and
// the scheduler's steady rate above. Pace's 40 ns was a clock read every
// fourth call, and in a collective nearly every call has some rank on its
// fourth: hence the counter gate (internal/runtime/gosched), a time stamp counter read
// per call and the clock only past a slot boundary.
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
