package dpml

import (
	"testing"
	"time"

	"github.com/dpmlgo/dpml/internal/mpitest"
	"github.com/dpmlgo/dpml/mpi"
)

// A rank waiting on shared memory for a late peer paces its goroutine like
// an MPI call does (shm.Waiter.Pace = mpi.Pace): on one node the engine
// makes no MPI call inside the call, so the yields of a 30 ms wait come
// from the waits themselves.
func TestEngineWaitsPace(t *testing.T) {
	mpitest.Run(t, 1, 2, func(t *testing.T, w *mpi.Comm) {
		if !mpi.Sched().Pace {
			t.Skipf("pacing is off (%s)", mpi.Sched())
		}
		c, err := New(w)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
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
		y := mpi.Sched().Yields
		if w.Rank() == 1 {
			time.Sleep(30 * time.Millisecond)
		}
		buf[0] = float64(w.Rank())
		if err := AllreduceInPlaceWith(c, buf, mpi.OpSum, o); err != nil {
			t.Fatal(err)
		}
		if buf[0] != 1 {
			t.Errorf("sum %v, want 1", buf[0])
		}
		if y := mpi.Sched().Yields - y; w.Rank() == 0 && y == 0 {
			t.Error("rank 0 waited 30 ms for rank 1 without a yield")
		}
	})
}
