package dpml

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpmlgo/dpml/internal/mpitest"
	"github.com/dpmlgo/dpml/mpi"
)

// TestWatchdog: a blocking MPI step whose peer stalls (it sleeps past the
// timeout before calling, as a SIGSTOPped rank would) is reported by the
// watchdog, naming the step, on the ranks stuck in it and on no other. The
// abort is replaced by a hook so that the test keeps its processes: the
// stalled peer then calls and the job finishes. The shared-memory waits
// get a long timeout here, so only the watchdog can fire.
//
// Mutation check: without the c.watch.enter(stepNative) before the
// native allreduce (engine.go), the native case reports nothing and the
// test fails; likewise stepInter for the inter-node case.
func TestWatchdog(t *testing.T) {
	mpitest.Run(t, 2, 2, func(t *testing.T, w *mpi.Comm) {
		var mu sync.Mutex
		var got []string
		testHookWatchAbort = func(c *Comm, msg string) {
			mu.Lock()
			got = append(got, msg)
			mu.Unlock()
		}
		defer func() { testHookWatchAbort = nil }()
		for _, tc := range []struct {
			name    string
			o       Override
			sleeper func(c *Comm) bool // who stalls
			stuck   func(c *Comm) bool // who must report
			step    string
		}{
			{"native", Override{Variant: Native}, func(c *Comm) bool { return c.Rank() == 3 },
				func(c *Comm) bool { return c.Rank() != 3 }, "the MPI library's allreduce"},
			// Node 2 stalls whole: node 1's leader waits in the inter-node
			// step, node 1's other rank on shared memory.
			{"inter-node", Override{Variant: DPML, Leaders: 1, Intra: IntraShm}, func(c *Comm) bool { return c.Rank() >= 2 },
				func(c *Comm) bool { return c.Rank() < 2 && c.pos == 0 }, "inter-node allreduce"},
		} {
			c, err := New(w)
			if err != nil {
				t.Fatal(err)
			}
			c.wait.Timeout, c.waitPoll.Timeout = time.Minute, time.Minute
			watchdog.mu.Lock()
			c.watchTimeout = 300 * time.Millisecond
			watchdog.period = 20 * time.Millisecond
			watchdog.mu.Unlock()
			c.SetOverride(tc.o)
			mu.Lock()
			got = nil
			mu.Unlock()
			buf := []float64{1}
			if tc.sleeper(c) {
				time.Sleep(1200 * time.Millisecond)
			}
			if err := AllreduceInPlace(c, buf, mpi.OpSum); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if buf[0] != 4 {
				t.Errorf("%s: sum %v, want 4", tc.name, buf[0])
			}
			mu.Lock()
			msgs := got
			mu.Unlock()
			switch {
			case tc.stuck(c) && (len(msgs) != 1 || !strings.Contains(msgs[0], tc.step) || !strings.Contains(msgs[0], "DPML_TIMEOUT")):
				t.Errorf("%s: rank %d waited 1.2 s on a stalled peer with a 300 ms timeout: watchdog reported %q, want one report naming %q", tc.name, c.Rank(), msgs, tc.step)
			case !tc.stuck(c) && len(msgs) > 0:
				t.Errorf("%s: rank %d was not stuck in a blocking step, yet the watchdog reported %q", tc.name, c.Rank(), msgs)
			}
			if err := c.Close(); err != nil {
				t.Error(err)
			}
		}
	})
}
