package dpml

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/internal/runtime/gosched"
	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
)

// A rank waiting on shared memory for a late peer paces its goroutine like
// an MPI call does (shm.Waiter.Pace = gosched.Pace): on one node the engine
// makes no MPI call inside the call, so the yields of its wait come from
// the waits themselves.
//
// The late peer does not guess how long to be late (a fixed 30 ms sleep
// could end before an oversubscribed rank 0 even reached its wait): rank 0
// drops a file in a directory the ranks share once its process has
// yielded, and rank 1 calls only then, or after 30 s (then rank 0 fails
// below).
//
// Mutation checks: with backoff.round not calling w.Pace (shm/wait.go),
// rank 0 never yields, rank 1 calls after 30 s and rank 0 fails ("waited
// for rank 1 without a yield"); without New's gosched.Apply, "New left
// pacing off".
func TestEngineWaitsPace(t *testing.T) {
	dir := sharedTempDir(t)
	mpitest.Run(t, 1, 2, func(t *testing.T, w *mpi.Comm) {
		c, err := New(w)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// New applies DPML_GOSCHED (auto unless set).
		if !gosched.Sched().Pace {
			if config.IsSet(config.GoSched) {
				t.Skipf("pacing is off (%s)", gosched.Sched())
			}
			t.Fatalf("New left pacing off with DPML_GOSCHED unset: %s", gosched.Sched())
		}
		if c.wait.Pace == nil {
			t.Fatal("the engine's Waiter has no Pace")
		}
		o := Override{Leaders: 1, Pipeline: 1}
		buf := []float64{float64(w.Rank())}
		if err := AllreduceInPlaceWith(c, buf, mpi.OpSum, o); err != nil {
			t.Fatal(err)
		}
		if err := w.Barrier(); err != nil {
			t.Fatal(err)
		}
		yielded := filepath.Join(dir, "rank0-yielded")
		y := gosched.Sched().Yields
		stop := make(chan struct{})
		if w.Rank() == 0 {
			// Rank 0 makes no MPI call until its allreduce returns: a
			// yield of this process is one of the allreduce's waits.
			go func() {
				for gosched.Sched().Yields == y {
					select {
					case <-stop:
						return
					case <-time.After(time.Millisecond):
					}
				}
				_ = os.WriteFile(yielded, nil, 0o600)
			}()
		} else {
			waitForFile(yielded, 30*time.Second) // well within rank 0's 60 s wait timeout
		}
		buf[0] = float64(w.Rank())
		err = AllreduceInPlaceWith(c, buf, mpi.OpSum, o)
		close(stop)
		if err != nil {
			t.Fatal(err)
		}
		if buf[0] != 1 {
			t.Errorf("sum %v, want 1", buf[0])
		}
		if y := gosched.Sched().Yields - y; w.Rank() == 0 && y == 0 {
			t.Error("rank 0 waited for rank 1 without a yield")
		}
	})
}

// waitForFile sleeps until path exists, or for at most limit.
func waitForFile(path string, limit time.Duration) {
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
}
