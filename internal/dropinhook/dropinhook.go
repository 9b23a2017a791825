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
)
