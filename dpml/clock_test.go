package dpml

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestNanotimeIsClockMonotonic: the tuner's clock must be CLOCK_MONOTONIC
// itself (shared by the processes of a host), not a process-relative one.
func TestNanotimeIsClockMonotonic(t *testing.T) {
	for i := 0; i < 5; i++ {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			t.Skip(err)
		}
		a := ts.Nano()
		b := nanotime()
		// b is read after a: a few microseconds later, never before and
		// never a different epoch (seconds or more apart).
		if d := b - a; d >= 0 && d < 50e6 {
			return
		}
		t.Logf("clock_gettime %d, nanotime %d", a, b)
	}
	t.Fatal("runtime.nanotime is not CLOCK_MONOTONIC")
}
