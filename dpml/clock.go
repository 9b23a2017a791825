package dpml

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	_ "unsafe" // go:linkname

	"github.com/dpmlgo/dpml/mpi"
)

// The tuner's clock. A call's cost is the second-to-last rank's exit after
// the last rank's entry (learn.CostSecondExit), so entries and exits must be
// read on one clock for all ranks. CLOCK_MONOTONIC is one clock for every
// process of a host (emulated nodes included: they share the kernel);
// across hosts each has its own epoch, and setupClock estimates every
// rank's offset to rank 0's clock once, when the hosts' boot ids differ.

// nanotime is the Go runtime's CLOCK_MONOTONIC reading (through the vDSO:
// no system call), the same clock in every process of a host. time.Now's
// monotonic reading is relative to the process's start, so it cannot be
// compared across ranks.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// clockRounds is how many barrier exits the offset estimate takes the
// median of.
const clockRounds = 16

// testHookBootID, when set by a test, replaces this host's boot id (to run
// the offset estimate on one host).
var testHookBootID func(rank int) string

// bootHash identifies this host's kernel boot: ranks with the same hash
// read the same CLOCK_MONOTONIC.
func bootHash(rank int) uint64 {
	id := ""
	if testHookBootID != nil {
		id = testHookBootID(rank)
	} else if b, err := bootID(); err == nil {
		id = b
	} else {
		// Unknown: count every rank as its own host, so the offsets are
		// estimated (a harmless, small error where they share one).
		id = fmt.Sprintf("rank %d", rank)
	}
	h := sha256.Sum256([]byte(id))
	return binary.LittleEndian.Uint64(h[:8])
}

// bootID is this host's kernel boot id, read once per process (every
// communicator's setup asks for it).
var bootID = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b)), err
})

// now is the tuner's clock: nanoseconds on rank 0's CLOCK_MONOTONIC
// (this host's, corrected by the estimated offset).
func (c *Comm) now() int64 { return nanotime() - c.clockOffset }

// estimateClockOffset sets c.clockOffset to this rank's clock minus rank
// 0's, the median over clockRounds barriers of the difference between the
// readings taken as each rank leaves the barrier (rank 0's broadcast). Its
// error is about the barrier's release skew (microseconds), the same for
// every plan the tuner compares. Collective over c.world.
func (c *Comm) estimateClockOffset() error {
	var d [clockRounds]int64
	ref := []int64{0}
	for i := range d {
		if err := c.world.Barrier(); err != nil {
			return fmt.Errorf("%w: clock offset: %w", ErrSetup, err)
		}
		t := nanotime()
		ref[0] = t
		if err := mpi.Bcast(c.world, ref, 0); err != nil {
			return fmt.Errorf("%w: clock offset: %w", ErrSetup, err)
		}
		d[i] = t - ref[0]
	}
	slices.Sort(d[:])
	c.clockOffset = d[clockRounds/2]
	return nil
}
