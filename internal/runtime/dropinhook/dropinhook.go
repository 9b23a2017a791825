package dropinhook

import "unsafe"

var (
	// FusedState returns the address of the communicator's fused-call
	// state, which the C layer then follows (nil for none).
	FusedState func(comm any) unsafe.Pointer
	// FusedFailed reports a call the C layer ran through the fused
	// routine that failed with result rc; the communicator fails as
	// with a failed call of its own, and the error is returned.
	FusedFailed func(comm any, rc int) error
	// TraceC records, in a diagnostic build (-tags dpmltrace; nil
	// otherwise), the C layer's time stamps of a call: its entry and
	// hand-over to Go, and the previous call's return from Go and from
	// the C wrapper (dpml's step recorder).
	TraceC func(comm any, enter, toGo, back, leave int64)
	// AgreeDropin is the ranks' agreement on the drop-in's own settings
	// (config.AtDropin) and on local, this rank's error, over comm (an
	// *mpi.Comm), at a communicator's first eligible call: nil on every
	// rank, or the same error on every rank (dpml.Agree).
	AgreeDropin func(comm any, local error) error
)

// OwnCoreSpin, set by libdpml.so once it has moved the Go runtime's
// threads to SCHED_IDLE (internal/runtime/idlethreads), is the polls of a flag
// before a waiting rank yields its core, on a communicator of one node
// whose ranks own their cores, where DPML_SPIN is not set (0: the
// setting's default). Yielding is what lets those threads run: a rank
// that yields within a few microseconds gives them its core in the
// middle of collectives.
var OwnCoreSpin int
