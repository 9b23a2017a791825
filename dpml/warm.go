package dpml

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/dpmlgo/dpml/internal/runtime/prefault"
	"github.com/dpmlgo/dpml/mpi"
)

// warmMaxBytes bounds the message sizes Warm runs: above it a call's own
// time dwarfs what its first run costs beyond the next ones (the node
// segment's pages, which Warm maps in whatever the size).
const warmMaxBytes = 4 << 20

// Warm prepares the communicator for a program's first calls, at the cost
// of a few milliseconds now: every rank maps the code and read-only data
// of the program (or of libdpml.so) into its page tables, once per
// process (package internal/runtime/prefault: a code path's first run
// would otherwise fault its pages in, on every rank of the node at once),
// and the node segment's data pages (a call would otherwise fault them
// in, one 4 KiB page at a time, on its first run of each size), and every message size class of
// float32 elements from 4 bytes to 4 MiB runs once, on scratch buffers,
// the plan the tuner starts that size on, which readies the plan's code,
// its shared-memory lines and the leaders' connections. Nothing of it is
// recorded by the tuner. For libdpml.so's C layer it then parks a
// clearance for each size class of float32 and float64 sums that it runs
// without Go (parked.go), so that those sizes' first calls run there.
// Collective over the communicator; libdpml.so
// calls it on MPI_COMM_WORLD inside MPI_Init (DPML_SETUP_WORLD=warm).
func (c *Comm) Warm() error {
	if c == nil {
		return nilCommError("Warm")
	}
	if c.closed {
		return ErrClosed
	}
	if c.err != nil {
		return fmt.Errorf("dpml: communicator unusable after an earlier failure: %w", c.err)
	}
	if c.later != nil {
		return nil // Deferred: nothing to ready before the setup
	}
	if n, d, first := prefault.Self(); first && c.verbose > 0 && c.rank == 0 {
		fmt.Fprintf(os.Stderr, "dpml: rank 0: mapped in %d KiB of the code and read-only data in %.2f ms\n", n>>10, d.Seconds()*1e3)
	}
	if c.seg != nil {
		// Each rank first allocates its own share of the pages (the
		// node's ranks in parallel), then, once every share exists, maps
		// the whole data area into its own page tables.
		b := c.seg.mem.Bytes()
		_, dataOff := segmentLayout(c.ppn, c.segBudget)
		share := (len(b) - dataOff + c.ppn - 1) / c.ppn
		lo := dataOff + c.local*share
		c.seg.mem.Populate(lo, lo+share)
		c.watch.enter(stepSetup)
		err := c.node.Barrier()
		c.watch.leave()
		if err != nil {
			c.failed(err)
			return fmt.Errorf("dpml: warm: %w", err)
		}
		c.seg.mem.Populate(dataOff, len(b))
	}
	// Scratch outside the Go heap: 8 MiB of garbage would start the
	// collector and the scavenger on the ranks' cores just as the
	// program's first calls run.
	mem, err := unix.Mmap(-1, 0, 2*warmMaxBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("dpml: warm: scratch buffers: %w", err)
	}
	defer unix.Munmap(mem)
	// Warm's plans are not the program's: DPML_VERBOSE reports the
	// program's calls only.
	verbose := c.verbose
	c.verbose = 0
	defer func() { c.verbose = verbose }()
	n := warmMaxBytes / 4
	send := unsafe.Slice((*float32)(unsafe.Pointer(&mem[0])), n)
	recv := unsafe.Slice((*float32)(unsafe.Pointer(&mem[warmMaxBytes])), n)
	for bytes := 4; bytes <= warmMaxBytes; bytes *= 4 {
		o, _, _, _ := c.peekPlan(mpi.KindFloat32, mpi.OpSum, bytes/4) // the plan the key starts on
		if err := AllreduceWith(c, send[:bytes/4], recv[:bytes/4], mpi.OpSum, o); err != nil {
			return fmt.Errorf("dpml: warm, %d bytes: %w", bytes, err)
		}
	}
	c.parkReady()
	return nil
}
