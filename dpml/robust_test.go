package dpml

import (
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/plan"
)

// shmEntries lists /dev/shm names with the given prefix.
func shmEntries(t *testing.T, prefix string) []string {
	t.Helper()
	ents, err := os.ReadDir("/dev/shm")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		// Directories are the launcher's (Open MPI's vader files live
		// there, and dpmlrun removes them); segments are plain files.
		if strings.HasPrefix(e.Name(), prefix) && !e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestManyCallsNoLeak: 10,000 back-to-back calls with random sizes and
// plans on two communicators alive at once, then Close: the Go heap does not
// grow and no segment is left in /dev/shm (not even while the communicators
// are open: segments are unlinked once mapped).
func TestManyCallsNoLeak(t *testing.T) {
	mpitest.Run(t, 2, 2, func(t *testing.T, w *mpi.Comm) {
		job := os.Getenv("DPML_JOB")
		a, err := New(w, WithSegmentBytes(8<<10))
		if err != nil {
			t.Fatal(err)
		}
		b, err := New(w)
		if err != nil {
			t.Fatal(err)
		}
		if job != "" {
			if left := shmEntries(t, "dpml-"+job); len(left) > 0 {
				t.Errorf("segments still linked after setup: %v", left)
			}
		}
		// Same seed on every rank: plans must agree.
		rng := rand.New(rand.NewPCG(42, 42))
		buf := make([]float64, 1<<14)
		out := make([]float64, 1<<14)
		var heap0 uint64
		const calls = 10000
		for i := 0; i < calls; i++ {
			if i == 1000 {
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				heap0 = ms.HeapAlloc
			}
			n := rng.IntN(len(buf) + 1)
			if rng.IntN(8) != 0 {
				n = rng.IntN(64) // mostly small: many calls, quickly
			}
			o := Override{Leaders: 1 + rng.IntN(2), Pipeline: 1 + rng.IntN(3), Intra: Intra(1 + rng.IntN(2)), Inter: plan.Inter(1 + rng.IntN(2))}
			c := a
			if i%2 == 1 {
				c = b
			}
			for j := range n {
				buf[j] = float64(w.Rank() + j%5)
			}
			if err := AllreduceWith(c, buf[:n], out[:n], mpi.OpSum, o); err != nil {
				t.Fatalf("call %d (n=%d, %+v): %v", i, n, o, err)
			}
			for j := range n {
				// sum over ranks of rank + j%5
				if want := float64(6 + 4*(j%5)); out[j] != want {
					t.Fatalf("call %d: out[%d] = %v, want %v", i, j, out[j], want)
				}
			}
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if grow := int64(ms.HeapAlloc) - int64(heap0); grow > 1<<20 {
			t.Errorf("heap grew by %d bytes over %d calls", grow, calls-1000)
		}
		if err := a.Close(); err != nil {
			t.Error(err)
		}
		if err := b.Close(); err != nil {
			t.Error(err)
		}
		if err := AllreduceWith(a, buf[:1], out[:1], mpi.OpSum, Override{}); err != ErrClosed {
			t.Errorf("call after Close: %v, want ErrClosed", err)
		}
	})
}

// TestKilledRank kills one rank in the middle of a call. The job must end
// within a bound — survivors return an error after DPML_TIMEOUT or the MPI
// runtime aborts them. Nothing can be left in /dev/shm: the child checks
// that its segments are already unlinked when the rank dies (a check of
// /dev/shm from here would race with other packages' jobs, and dpmlrun
// sweeps the job's names afterwards anyway).
func TestKilledRank(t *testing.T) {
	if mpitest.InRank() {
		t.Skip("parent-only test")
	}
	start := time.Now()
	rep, err := mpitest.Exec(mpitest.Options{
		Test:    "TestKilledRankChild",
		Layout:  mpitest.Even(2, 2),
		Timeout: 90 * time.Second,
		Env:     []string{"DPML_TEST_KILL=1", "DPML_TIMEOUT=3s"},
	})
	if err == nil {
		t.Fatalf("the job with a killed rank succeeded:\n%v", rep)
	}
	if rep != nil && rep.TimedOut {
		t.Fatalf("the job hung until the harness timeout: %v", err)
	}
	t.Logf("job ended in %v: %v", time.Since(start).Round(time.Millisecond), err)
	if rep != nil && !strings.Contains(rep.AllOutput(), "segments unlinked before the kill") {
		t.Fatalf("the ranks did not confirm their segments were unlinked:\n%s", rep.AllOutput())
	}
}

func TestKilledRankChild(t *testing.T) {
	if os.Getenv("DPML_TEST_KILL") == "" {
		t.Skip("run by TestKilledRank")
	}
	mpitest.Run(t, 2, 2, func(t *testing.T, w *mpi.Comm) {
		c, err := New(w, WithSegmentBytes(4<<10))
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]float64, 4096)
		for range 3 {
			if err := AllreduceInPlace(c, buf, mpi.OpSum); err != nil {
				t.Fatal(err)
			}
		}
		if left := shmEntries(t, "dpml-"+os.Getenv("DPML_JOB")+"-"); len(left) > 0 {
			t.Fatalf("segments still in /dev/shm when a rank dies: %v", left)
		}
		t.Log("segments unlinked before the kill")
		victim := w.Size() - 1
		testHookCopiedIn = func(_ *Comm, seg int) {
			if w.Rank() == victim && seg == 1 {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}
		err = AllreduceWith(c, buf, make([]float64, len(buf)), mpi.OpSum, Override{Leaders: 2, Pipeline: 2})
		testHookCopiedIn = nil
		if err == nil {
			t.Fatal("allreduce with a dead peer succeeded")
		}
		t.Logf("rank %d: %v", w.Rank(), err)
		t.Fail() // the job has failed; report it
	})
}
