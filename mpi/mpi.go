package mpi

// #include "dpml_mpi.h"
import "C"

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

// ThreadLevel is an MPI thread support level.
type ThreadLevel int

const (
	ThreadSingle     ThreadLevel = iota // MPI_THREAD_SINGLE
	ThreadFunneled                      // MPI_THREAD_FUNNELED: only the Init goroutine (locked) calls MPI
	ThreadSerialized                    // MPI_THREAD_SERIALIZED: any goroutine, never two at once
	ThreadMultiple                      // MPI_THREAD_MULTIPLE: any goroutine, concurrently
)

func (l ThreadLevel) String() string {
	switch l {
	case ThreadSingle:
		return "single"
	case ThreadFunneled:
		return "funneled"
	case ThreadSerialized:
		return "serialized"
	case ThreadMultiple:
		return "multiple"
	}
	return fmt.Sprintf("ThreadLevel(%d)", int(l))
}

func (l ThreadLevel) c() C.int {
	switch l {
	case ThreadSingle:
		return C.MPI_THREAD_SINGLE
	case ThreadFunneled:
		return C.MPI_THREAD_FUNNELED
	case ThreadSerialized:
		return C.MPI_THREAD_SERIALIZED
	}
	return C.MPI_THREAD_MULTIPLE
}

func threadLevelFromC(v C.int) ThreadLevel {
	switch v {
	case C.MPI_THREAD_SINGLE:
		return ThreadSingle
	case C.MPI_THREAD_FUNNELED:
		return ThreadFunneled
	case C.MPI_THREAD_SERIALIZED:
		return ThreadSerialized
	}
	return ThreadMultiple
}

// Special rank, tag and color values (they differ between ABIs).
const (
	Undefined = C.MPI_UNDEFINED  // Split color for "not in any new communicator"
	AnySource = C.MPI_ANY_SOURCE // Recv/Irecv source wildcard
	AnyTag    = C.MPI_ANY_TAG    // Recv/Irecv tag wildcard
	ProcNull  = C.MPI_PROC_NULL  // Send/Recv peer that makes the call a no-op
)

func init() {
	// Under MPI_THREAD_SINGLE or FUNNELED (Init's levels) every MPI call
	// must come from the thread that called MPI_Init. Package init runs on the main
	// goroutine, so locking here keeps main on the main OS thread for the
	// program's life, which is where a normal program calls Init and MPI.
	runtime.LockOSThread()
}

const (
	stNone      = iota // not initialized
	stOurs             // initialized by InitThread
	stForeign          // initialized by someone else (drop-in library)
	stFinalized        // finalized by Finalize
)

var (
	stateMu  sync.Mutex
	state    int
	provided ThreadLevel
	world    atomic.Pointer[Comm]
	self     atomic.Pointer[Comm]
)

// Init initializes MPI for a program whose MPI calls all come from the
// goroutine that calls Init (main, normally: this package locks it to its
// OS thread). It asks the library for InitLevel, the cheapest level sound
// for such a program (see the package doc, "Thread level"): ThreadSingle on
// Open MPI, ThreadFunneled on MPICH. It returns the level provided. Use
// InitThread to ask for another level.
func Init() (ThreadLevel, error) { return InitThread(InitLevel) }

// QueryThread returns the thread level the MPI library provides
// (MPI_Query_thread), whoever initialized it.
func QueryThread() (ThreadLevel, error) {
	var p C.int
	if rc := C.MPI_Query_thread(&p); rc != C.MPI_SUCCESS {
		return 0, mpiError("MPI_Query_thread", rc)
	}
	return threadLevelFromC(p), nil
}

// InitThread initializes MPI, requesting thread level required, and returns
// the level the library provides (which may be lower). It sets
// MPI_ERRORS_RETURN on World and Self. Call it from the goroutine that will
// make the MPI calls (normally main, which this package locks to its OS
// thread); unless ThreadMultiple is provided, MPI must be called only from
// that goroutine (Funneled) or from one goroutine at a time (Serialized).
//
// Calling it again returns the level provided the first time. If MPI was
// already initialized by other code in the process (a C host program using
// this package as a library), it adopts that initialization: it returns
// MPI_Query_thread, leaves the error handlers alone, and Finalize will not
// finalize.
func InitThread(required ThreadLevel) (ThreadLevel, error) {
	if required < ThreadSingle || required > ThreadMultiple {
		return 0, fmt.Errorf("%w: thread level %d", ErrArg, int(required))
	}
	stateMu.Lock()
	defer stateMu.Unlock()
	switch state {
	case stOurs, stForeign:
		return provided, nil
	case stFinalized:
		return 0, ErrFinalized
	}
	var flag C.int
	C.MPI_Finalized(&flag)
	if flag != 0 {
		return 0, ErrFinalized
	}
	C.MPI_Initialized(&flag)
	if flag != 0 {
		p, err := QueryThread()
		if err != nil {
			return 0, err
		}
		provided = p
		if err := adoptBuiltins(false); err != nil {
			return 0, err
		}
		state = stForeign
		return provided, nil
	}
	var p C.int
	if rc := C.dpml_init_thread(required.c(), &p); rc != C.MPI_SUCCESS {
		return 0, mpiError("MPI_Init_thread", rc)
	}
	provided = threadLevelFromC(p)
	if err := adoptBuiltins(true); err != nil {
		return 0, err
	}
	state = stOurs
	return provided, nil
}

func adoptBuiltins(setErrors bool) error {
	w := &Comm{h: handles.world, x: C.dpml_comm_to_uintptr(handles.world), builtin: true}
	s := &Comm{h: handles.self, x: C.dpml_comm_to_uintptr(handles.self), builtin: true}
	for _, c := range []*Comm{w, s} {
		if setErrors {
			if rc := C.dpml_set_errors_return(c.h); rc != C.MPI_SUCCESS {
				return mpiError("MPI_Comm_set_errhandler", rc)
			}
		}
		if err := c.fillRankSize(); err != nil {
			return err
		}
	}
	world.Store(w)
	self.Store(s)
	return nil
}

// Finalize finalizes MPI. Communicators created by this package need not be
// freed first. It is a no-op if MPI was initialized by other code (see
// InitThread) or is already finalized. Call it from the goroutine that
// called Init.
func Finalize() error {
	stateMu.Lock()
	defer stateMu.Unlock()
	switch state {
	case stNone:
		return ErrNotInit
	case stForeign, stFinalized:
		return nil
	}
	state = stFinalized
	if rc := C.MPI_Finalize(); rc != C.MPI_SUCCESS {
		return mpiError("MPI_Finalize", rc)
	}
	return nil
}

// Initialized reports whether MPI has been initialized (by anyone).
func Initialized() bool {
	var flag C.int
	C.MPI_Initialized(&flag)
	return flag != 0
}

// Finalized reports whether MPI has been finalized.
func Finalized() bool {
	var flag C.int
	C.MPI_Finalized(&flag)
	return flag != 0
}

// World returns MPI_COMM_WORLD, or nil before Init.
func World() *Comm { return world.Load() }

// Self returns MPI_COMM_SELF, or nil before Init.
func Self() *Comm { return self.Load() }

// Wtime returns MPI_Wtime, in seconds.
func Wtime() float64 {
	pace() // a loop polling the clock spends its time in cgo calls too
	return float64(C.MPI_Wtime())
}

// Abort aborts every process of c (World if c is nil) with the given code.
// It normally does not return.
func Abort(c *Comm, code int) error {
	if c == nil || c.freed {
		c = World()
	}
	if c == nil {
		return ErrNotInit
	}
	if rc := C.MPI_Abort(c.h, C.int(code)); rc != C.MPI_SUCCESS {
		return mpiError("MPI_Abort", rc)
	}
	return nil
}

// ProcessorName returns MPI_Get_processor_name.
func ProcessorName() (string, error) {
	var buf [C.MPI_MAX_PROCESSOR_NAME + 1]C.char
	var n C.int
	if rc := C.MPI_Get_processor_name(&buf[0], &n); rc != C.MPI_SUCCESS {
		return "", mpiError("MPI_Get_processor_name", rc)
	}
	return C.GoStringN(&buf[0], n), nil
}

// LibraryVersion returns MPI_Get_library_version, trimmed; it works before
// Init.
func LibraryVersion() string {
	var buf [C.MPI_MAX_LIBRARY_VERSION_STRING + 1]C.char
	var n C.int
	if rc := C.MPI_Get_library_version(&buf[0], &n); rc != C.MPI_SUCCESS {
		return ""
	}
	return strings.TrimRight(C.GoStringN(&buf[0], n), " \t\r\n\x00")
}
