package mpi

import "sync/atomic"

// waitHook is what SetWaitHook installed (nil: nothing).
var waitHook atomic.Pointer[func()]

// SetWaitHook makes every call of the package that may wait (collectives,
// point-to-point, Wait, Test, Waitall, Barrier, communicator creation,
// Wtime) first call f, in Go, on the calling goroutine; nil removes it.
// internal/runtime/gosched installs its pacing here (dpml.New, libdpml.so).
func SetWaitHook(f func()) {
	if f == nil {
		waitHook.Store(nil)
		return
	}
	waitHook.Store(&f)
}

// pace calls the wait hook, if any.
func pace() {
	if f := waitHook.Load(); f != nil {
		(*f)()
	}
}
