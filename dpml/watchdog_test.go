package dpml

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
)

// TestWatchdog: a blocking MPI step whose peer stalls (it sleeps past the
// timeout before calling, as a SIGSTOPped rank would) is reported by the
// watchdog, naming the step, on the ranks stuck in it and on no other. The
// abort is replaced by a hook so that the test keeps its processes: the
// stalled peer then calls and the job finishes. The shared-memory waits
// get a long timeout here, so only the watchdog can fire.
//
// The stalled peer does not guess how long to stall: each report drops a
// file in a directory shared by the job (the emulated nodes share one
// host), and the peer sleeps until every stuck rank has reported, or a
// minute has passed (then the stuck ranks fail below). So the test holds
// on an oversubscribed CI machine, where a fixed 1.2 s stall did not: the
// watchdog loop was still in the 1 s sleep of an earlier Comm's 60 s
// timeout when the test shortened its period (fixed in watchdog.go by
// waking the loop).
//
// Mutation check: without the c.watch.enter(stepNative) before the
// native allreduce (engine.go), the native case reports nothing and the
// test fails; likewise stepInter for the inter-node case.
func TestWatchdog(t *testing.T) {
	mpitest.Run(t, 2, 2, func(t *testing.T, w *mpi.Comm) {
		dir, done := jobTempDir(t, w, "watchdog")
		defer done()
		var mu sync.Mutex
		var got []string
		var caseName string
		testHookWatchAbort = func(c *Comm, msg string) {
			mu.Lock()
			got = append(got, msg)
			name := caseName
			mu.Unlock()
			_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s.%d", name, c.Rank())), nil, 0o600)
		}
		defer func() { testHookWatchAbort = nil }()
		for _, tc := range []struct {
			name    string
			o       Override
			sleeper func(c *Comm) bool // who stalls
			stuck   func(c *Comm) bool // who must report
			step    string
			nStuck  int
		}{
			{"native", Override{Variant: Native}, func(c *Comm) bool { return c.Rank() == 3 },
				func(c *Comm) bool { return c.Rank() != 3 }, "the MPI library's allreduce", 3},
			// Node 2 stalls whole: node 1's leader waits in the inter-node
			// step, node 1's other rank on shared memory.
			{"inter-node", Override{Variant: DPML, Leaders: 1, Intra: IntraShm}, func(c *Comm) bool { return c.Rank() >= 2 },
				func(c *Comm) bool { return c.Rank() < 2 && c.pos == 0 }, "inter-node allreduce", 1},
		} {
			c, err := New(w)
			if err != nil {
				t.Fatal(err)
			}
			c.wait.Timeout, c.waitPoll.Timeout = time.Minute, time.Minute
			watchdog.mu.Lock()
			c.watchTimeout = 300 * time.Millisecond
			shortenWatchPeriodLocked(20 * time.Millisecond)
			watchdog.mu.Unlock()
			c.SetOverride(tc.o)
			mu.Lock()
			got, caseName = nil, tc.name
			mu.Unlock()
			buf := []float64{1}
			if tc.sleeper(c) {
				waitReports(dir, tc.name, tc.nStuck, time.Minute)
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
				t.Errorf("%s: rank %d waited on a stalled peer with a 300 ms timeout: watchdog reported %q, want one report naming %q", tc.name, c.Rank(), msgs, tc.step)
			case !tc.stuck(c) && len(msgs) > 0:
				t.Errorf("%s: rank %d was not stuck in a blocking step, yet the watchdog reported %q", tc.name, c.Rank(), msgs)
			}
			if err := c.Close(); err != nil {
				t.Error(err)
			}
		}
	})
}

// waitReports sleeps until n files name.* exist in dir, or for at most
// limit.
func waitReports(dir, name string, n int, limit time.Duration) {
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(dir, name+".*")); len(m) >= n {
			return
		}
	}
}

// jobTempDir makes a temporary directory that every rank of w names alike
// (rank 0's clock, broadcast), for files the ranks of one test exchange;
// done, called by every rank, removes it once all are through.
func jobTempDir(t *testing.T, w *mpi.Comm, name string) (dir string, done func()) {
	t.Helper()
	token := []int64{time.Now().UnixNano()}
	if err := mpi.Bcast(w, token, 0); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(os.TempDir(), fmt.Sprintf("dpml-%s-test-%d", name, token[0]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir, func() {
		_ = w.Barrier()
		if w.Rank() == 0 {
			_ = os.RemoveAll(dir)
		}
	}
}

// TestSetupWatched: a rank that stops during New (here the second node's
// head, right after it created its node's segment) leaves its peers in
// setup's collectives; the watchdog reports them within DPML_TIMEOUT, as it
// does a peer stopped during a call, naming setup. The stalled rank waits
// until the three others have reported (or a minute); the abort is the
// test's hook, so the job goes on.
// Mutation check: without the watch.enter(stepSetup) in New nothing
// reports and the test fails.
func TestSetupWatched(t *testing.T) {
	mpitest.Run(t, 2, 2, func(t *testing.T, w *mpi.Comm) {
		dir, done := jobTempDir(t, w, "setupwatch")
		defer done()
		var mu sync.Mutex
		var got []string
		testHookWatchAbort = func(c *Comm, msg string) {
			mu.Lock()
			got = append(got, msg)
			mu.Unlock()
			if c.Rank() != 2 { // the stalled rank's own watchdog fires too: not a peer's report
				_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("setup.%d", c.Rank())), nil, 0o600)
			}
		}
		defer func() { testHookWatchAbort = nil }()
		testHookSegmentCreated = func(c *Comm) {
			if c.Rank() == 2 {
				waitReports(dir, "setup", 3, time.Minute)
			}
		}
		defer func() { testHookSegmentCreated = nil }()
		t.Setenv("DPML_TIMEOUT", "300ms")
		c, err := New(w)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		mu.Lock()
		msgs := got
		mu.Unlock()
		if w.Rank() == 2 {
			return // stalled in-process, its own watchdog may report it; a stopped process's would not run
		}
		if len(msgs) != 1 || !strings.Contains(msgs[0], "setup") || !strings.Contains(msgs[0], "DPML_TIMEOUT=300ms") {
			t.Errorf("rank %d: reports %q, want one naming setup and DPML_TIMEOUT=300ms", w.Rank(), msgs)
		}
	})
}

// TestAgreeWatched: Agree (the drop-in's agreement at a communicator's
// first call, New's with Deferred) is bounded by DPML_TIMEOUT: rank 2
// comes 1 s late with a 300 ms timeout, and every other rank's watchdog
// reports the agreement (the test's hook stands in for the abort); then
// rank 2 arrives and the agreement completes.
//
// Mutation check: Agree without watchAgreement reports nothing ("reports
// [], want one naming the agreement").
func TestAgreeWatched(t *testing.T) {
	mpitest.Run(t, 2, 2, func(t *testing.T, w *mpi.Comm) {
		var mu sync.Mutex
		var got []string
		testHookWatchAbort = func(c *Comm, msg string) {
			mu.Lock()
			got = append(got, msg)
			mu.Unlock()
		}
		defer func() { testHookWatchAbort = nil }()
		t.Setenv("DPML_TIMEOUT", "300ms")
		if w.Rank() == 2 {
			time.Sleep(time.Second)
		}
		if err := Agree(w, nil, []Setting{{Name: "x", Value: "1"}}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		msgs := got
		mu.Unlock()
		if w.Rank() == 2 {
			return // late itself: nobody waited on it
		}
		if len(msgs) != 1 || !strings.Contains(msgs[0], "agreement") || !strings.Contains(msgs[0], "DPML_TIMEOUT=300ms") {
			t.Errorf("rank %d: reports %q, want one naming the agreement and DPML_TIMEOUT=300ms", w.Rank(), msgs)
		}
	})
}
