package dpml

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestNanotimeIsClockMonotonic: the tuner's clock must be CLOCK_MONOTONIC
// itself (shared by the processes of a host), not a process-relative one.
// nanotime is read between two CLOCK_MONOTONIC readings, so on that clock
// it lies between them however long the thread was off the CPU in
// between; a clock with another epoch is off by seconds or more.
//
// Mutation check: nanotime as a process-relative clock (time.Since of a
// package-level time.Now()) fails.
func TestNanotimeIsClockMonotonic(t *testing.T) {
	var before, after unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &before); err != nil {
		t.Skip(err)
	}
	n := nanotime()
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &after); err != nil {
		t.Skip(err)
	}
	if a, b := before.Nano(), after.Nano(); n < a || n > b {
		t.Fatalf("runtime.nanotime is not CLOCK_MONOTONIC: %d read between clock_gettime's %d and %d", n, a, b)
	}
}
