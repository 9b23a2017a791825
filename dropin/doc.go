// Command libdpml is the drop-in DPML allreduce for unmodified C and Fortran
// MPI programs, built as a shared library (make lib, or
// go build -buildmode=c-shared -o bin/libdpml.so ./dropin):
//
//	LD_PRELOAD=$PWD/bin/libdpml.so mpirun -np 8 ./app
//	bin/dpmlrun -nodes 2 -ppn 4 -preload $PWD/bin/libdpml.so -- ./app
//	mpicc -o app app.c -L$PWD/bin -ldpml -Wl,-rpath,$PWD/bin    # or link it
//
// # Interposition
//
// The library defines MPI_Allreduce and MPI_Finalize. Preloaded (or linked
// before libmpi), its definitions are the ones the program's calls bind to;
// calls it does not route go to PMPI_Allreduce, the MPI library's own entry
// of the profiling interface. PMPI_ names are never defined here: a program
// or tool calling PMPI_Allreduce reaches the MPI library directly.
//
// Fortran: Open MPI 4.1's Fortran bindings do not call MPI_Allreduce but
// PMPI_Allreduce (nm -D libmpi_mpifh.so: "U PMPI_Allreduce"), so the C
// symbol alone misses them. The library also defines the Fortran symbols
// mpi_allreduce_, mpi_allreduce__, mpi_allreduce, MPI_ALLREDUCE (mpif.h and
// `use mpi`) and mpi_allreduce_f08_ (`use mpi_f08`), and the same names of
// MPI_Finalize. They convert handles with MPI_Comm_f2c, MPI_Type_f2c and
// MPI_Op_f2c, map the Fortran MPI_IN_PLACE and MPI_BOTTOM (addresses of Open
// MPI's mpi_fortran_in_place_ / mpi_fortran_bottom_ common blocks, looked up
// as weak symbols under every mangling) to the C values, and store the return
// code in ierror (optional in mpi_f08). mpif.h programs need gfortran's
// -fallow-argument-mismatch, as without the library.
//
// MPICH ABI (built with -tags mpich: make build MPI=mpich puts it in
// bin/mpich/libdpml.so): MPICH's Fortran bindings (libmpichfort: mpif.h,
// `use mpi` and `use mpi_f08`) convert handles and MPICH's own MPI_IN_PLACE
// sentinels themselves and call the C MPI_Allreduce, so the C symbol
// catches them and the library defines no Fortran allreduce names there;
// it defines mpi_finalize_f08_ only, the one MPICH Fortran entry that calls
// PMPI_Finalize directly. Tested with MPICH 4.0.2 (go test -tags mpich
// ./dropin); MVAPICH2, Intel MPI and Cray MPICH share the ABI and are
// expected to work (untested here; a library whose Fortran wrappers called
// PMPI_Allreduce would have its Fortran calls pass through, unaccelerated).
//
// # What is routed
//
// A call goes to the DPML engine when all of these hold, and to
// PMPI_Allreduce otherwise:
//
//   - the library is initialized (in MPI_Init or MPI_Init_thread, which it
//     interposes; else at the first MPI_Allreduce) and DPML_DISABLE is off;
//   - count > 0 and the buffers are not NULL or MPI_BOTTOM;
//   - the datatype is a predefined arithmetic type with a fixed-size element
//     kind of the engine (handles compared in C): the C integer types
//     (signed char .. long long, unsigned ones, int8_t .. uint64_t),
//     MPI_FLOAT, MPI_DOUBLE, MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, the
//     C++ complex types, MPI_AINT, MPI_COUNT, MPI_BYTE (bitwise ops), and the
//     Fortran MPI_INTEGER[1248], MPI_REAL[48], MPI_DOUBLE_PRECISION,
//     MPI_COMPLEX[8,16], MPI_DOUBLE_COMPLEX, each mapped by its MPI_Type_size.
//     MPI_LONG_DOUBLE, long double complex, MPI_C_BOOL, MPI_LOGICAL, MPI_CHAR,
//     MPI_OFFSET (Open MPI 4.1 reduces it as unsigned), pair types and
//     derived types pass through;
//   - the op is one of MPI_SUM .. MPI_BXOR and the MPI standard allows it on
//     the type (no MIN/MAX on complex, logical ops only on C integers);
//     user ops, MAXLOC, MINLOC, REPLACE pass through, as do invalid
//     combinations, so the MPI library reports them as usual;
//   - count x element size >= DPML_MIN_BYTES;
//   - the communicator is an intra-communicator of at least 2 ranks (an
//     intercommunicator or a single rank, such as MPI_COMM_SELF, passes
//     through) on which the engine could be set up.
//
// Every condition depends only on arguments the MPI standard requires to be
// equal on all ranks (count, datatype, op, communicator) and on settings
// whose scope is "all ranks", so all ranks of a communicator take the same
// path on every call. The settings are not taken on trust: in MPI_Init
// (or, failing that, at the first call of a communicator whose arguments
// qualify, whatever DPML_DISABLE or DPML_MIN_BYTES say) the ranks compare
// DPML_DISABLE, DPML_MIN_BYTES, DPML_DROPIN_FROM_CALL and DPML_SETUP_AFTER,
// and whether each rank's settings parsed, in one small allreduce
// (dpml.Agree); once the ranks of MPI_COMM_WORLD have agreed, no later
// communicator repeats it (its ranks hold the same process settings); the engine's own settings (DPML_LEADERS,
// DPML_TUNER, ...) are compared the same way by dpml.New at setup. When
// they differ or are invalid on any rank, the communicator's calls pass
// through on every rank (counted as "settings" or "setup-failed"), with
// one warning that names the variable and the values seen on which ranks.
// DPML_CHECK=1 additionally compares every routed call's count, type, op
// and MPI_IN_PLACE use across the ranks; calls that pass through are not
// checked (the MPI library sees them). A send buffer that overlaps the receive buffer without
// MPI_IN_PLACE (erroneous in MPI) is copied before the engine sees it,
// rather than sent down a different path on one rank.
//
// # Per-communicator state
//
// The state of a communicator lives in a C struct attached to it with an MPI
// attribute (keyval created at initialization, copy callback
// MPI_COMM_NULL_COPY_FN so that MPI_Comm_dup does not share it). It is
// created on the communicator's first eligible call; the engine
// (dpml.New, collective: it duplicates and splits the communicator and maps
// the node's shared-memory segment) is built at the first eligible call
// that is at least its DPML_DROPIN_FROM_CALL-th (default 1) and by which
// its eligible calls, priced at 5 us plus 1 ns per byte each, would have
// taken DPML_SETUP_AFTER (default 100 ms) in the MPI library (at once when
// a plan is forced with DPMLX_Set_plan), which every rank reaches together:
// the price depends only on the calls' sizes. If setup fails, it fails on
// every rank (dpml.New agrees), the library prints one warning and the
// communicator passes through from then on. The attribute's delete callback
// closes the engine when the application frees the communicator: Open MPI
// 4.1 runs delete callbacks without holding its attribute lock, so freeing
// the engine's own communicators from inside MPI_Comm_free is allowed (tested
// with MPI_THREAD_MULTIPLE as well). MPI_Finalize (C and Fortran) closes
// every engine still open (World, communicators never freed) before calling
// PMPI_Finalize; engines are kept in creation order by an id that is never
// reused, so a delete callback running later (MPI_COMM_SELF at finalize)
// finds nothing to do. The engine's shared-memory segment has no name in
// /dev/shm (an O_TMPFILE file the other local ranks open through the node
// head's descriptor, closed as soon as all of them mapped it), so no exit,
// crash or MPI_Abort, during setup included, leaves a /dev/shm/dpml-* file
// behind. Where the directory's file system or /proc does not allow that,
// the segment is named and unlinked right after all ranks mapped it: a
// crash inside that window can leave the file.
//
// Setting up costs a few collectives and communicator creations: 4-5 ms
// per communicator at 32 ranks on one node (DPML_VERBOSE=1 prints each
// step's time), which is why a communicator whose calls would take less
// than DPML_SETUP_AFTER in the MPI library never pays it: a program that
// creates 1,000 communicators and reduces a few times on each runs them on
// the MPI library. A setup failure (a bad engine setting, no shared
// memory) is reported once per process.
//
// What a routed call costs beyond the engine: on the 16-core device
// (nvidia-h100-x1, 1x16, 8 B tree, the dpmltrace build) a C caller spends
// 0.5-0.6 us per call between the engine's return and its next entry, of
// which the return from Go into C and the call from C into Go take
// 300-400 ns (an empty C-to-Go call alone: 73-128 ns there); a Go
// caller's loop takes 40 ns. That is most of the gap between the engine
// called from C and from Go (2.07 against 1.68 us at 8 B).
//
// # Recursion guard
//
// The engine reaches MPI through package mpi, whose cgo code calls
// MPI_Allreduce by name, and in this process that name is the library's own.
// Every entry into Go raises a thread-local depth counter; a call made while
// it is raised goes straight to PMPI_Allreduce (counted as "nested"). This is
// exact because a Go function exported to C runs on the calling C thread, and
// the engine makes its MPI calls from the goroutine it was called on (package
// mpi requires that of its callers under MPI_THREAD_FUNNELED), so its nested
// calls happen on the same thread and other application threads are
// unaffected. An engine that made MPI calls from other goroutines would break
// this guard.
//
// # Threads
//
// Each communicator's state has a mutex held for its setup and for every
// routed call, so calls on one communicator are serialized (concurrent
// collectives on one communicator are erroneous in MPI anyway; the mutex only
// keeps the state consistent). Calls on different communicators run the
// engine concurrently, which MPI_THREAD_MULTIPLE allows; no lock is held
// across communicators, since a rank blocked on another communicator's lock
// could deadlock the job. Creating the attribute takes one global lock that
// is never held across a collective call. Under MPI_THREAD_SINGLE, FUNNELED
// and SERIALIZED the application already calls MPI from one thread at a time.
//
// # Settings and output
//
// DPML_DISABLE, DPML_MIN_BYTES and DPML_DROPIN_FROM_CALL are read here;
// DPML_LEADERS, DPML_PIPELINE, DPML_TUNING_FILE, DPML_SEGMENT_BYTES and the
// others by the engine (docs/ENVIRONMENT.md). Bad values, or values that
// differ between ranks, make every communicator's calls pass through on
// all of its ranks, with a warning (see "What is routed"). Messages go to stderr, prefixed
// "libdpml:". DPML_VERBOSE=1 prints the MPI library and the effective
// settings on rank 0 at initialization, and on every rank at MPI_Finalize a
// line of counters:
//
//	libdpml: rank 0: routed 2016 passed 4337 ( nested 4337 ) comms set up 1001 released 1001 fused 0 blocks 0 sampled 0 parked 0 agreed 1
//
// (calls routed to the engine, calls passed to the MPI library by reason,
// engines built and closed, and how many routed calls the C layer ran
// itself: after each call it makes, the engine clears the next calls of
// the same count, type and op whose plan is fixed or settled, a fused
// reduction tree of at most 1 KiB (on several nodes its root makes the
// inter-node allreduce on the engine's leader communicator) or the MPI
// library's own allreduce, and this library runs those without entering
// Go; see dpml/fused.go; and how many of those were the blocks of
// back-to-back calls the tuner's confirmation samples, which the C layer
// runs and times as it runs a settled key's calls; and how many were a
// settled key's stride samples, which it times too, several before the
// engine is entered to record them; and how many it ran
// under a parked clearance: the engine also keeps one per tuning key it
// has cleared, and readies one per size class of float and double sums up
// to 1 KiB in MPI_Init, so that a program alternating between sizes, or
// calling a size for the first time, runs in C too (dpml/parked.go); and how many settings
// agreements ran: one per communicator until a communicator of every rank
// of MPI_COMM_WORLD has agreed, none after). DPML_VERBOSE=2 adds a line per call with its
// decision and a line per engine setup.
//
// # Extension entry points (dpmlx.h)
//
// An unmodified program needs nothing more. A program that wants to choose
// or see the plan itself (a benchmark comparing plans in one run, such as
// bin/dpmlbench-c, or an application that knows a communicator's best plan)
// can call four C functions declared in dpmlx.h, which make copies next to
// the library (bin/dpmlx.h):
//
//	int DPMLX_Check_plan(const char *spec, char *buf, int len);  // parse: canonical spec or the error in buf
//	int DPMLX_Set_plan(MPI_Comm comm, const char *spec);         // the plan of comm's later routed calls
//	int DPMLX_Last_plan(MPI_Comm comm, char *buf, int len);      // what served the thread's latest call on comm
//	const char *DPMLX_Library_version(void);                     // "DPML-Go <commit> (dpmlx 1)"
//
// Specs are dpml.ParseOverride's grammar: "auto" (the engine's choice),
// "native" (every call on comm goes to PMPI_Allreduce without entering the
// engine; a communicator native from its first call never sets one up),
// "dpml:l=2", "pipelined:l=8,k=4", with optional ",intra=shm|cma" and
// ",seg=64K". Set_plan is per communicator and local; like the arguments of
// MPI_Allreduce, it must be equal on all ranks for the same call. A
// benchmark switches plans before every call, so the switch must not
// disturb the calls it times: specs seen before are found in a small C
// cache, the Go side keeps parsed plans by slot, and handing one to the
// engine allocates nothing (no garbage whose collection would run during a
// timed call). It overrides DPML_LEADERS and
// DPML_PIPELINE (dpml.Comm.SetOverride) and leaves calls the library does
// not route (types, ops, sizes) alone. Last_plan reads a thread-local record
// of the latest call (its communicator and how it was served, kept on the
// pass-through path at the cost of two stores), so it must be called on the
// same thread right after the call it describes; for a routed call it adds
// the engine's plan as a spec that forces it again plus " segments=N" and
// " stream", and for a passed call it gives "native reason=WHY" with the
// counters' reason names (native-plan for Set_plan's "native"). The
// functions return MPI error classes and never call an error handler.
// Programs that must also run without the library look them up with
// dlsym(RTLD_DEFAULT, "DPMLX_Set_plan") (dpmlx.h has the pointer types).
//
// # The library's Go runtime
//
// The library carries its own Go runtime. In MPI_Init it moves the
// runtime's threads to SCHED_IDLE (DPML_GOSCHED) and sets the garbage
// collector's target to 400 (GOGC in the environment takes precedence):
// the library's calls allocate nothing once a communicator is set up,
// each setup allocates some tens of KiB, and at Go's default a program
// that sets communicators up as it goes collected every few dozen of
// them, each collection slow on a core the rank keeps busy. The heap's
// goal is then 16 MiB per process while the live heap stays under about
// 3 MiB. DPML_VERBOSE=1 prints the target in effect.
//
// # Signals
//
// The Go runtime starts when the library is loaded, before main, and
// installs its handlers for synchronous signals first; Open MPI does not
// replace handlers that are already installed, so a crash in application code
// ends with the default action instead of Open MPI's backtrace.
package main
