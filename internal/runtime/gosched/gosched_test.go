package gosched_test

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/internal/runtime/gosched"
	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
)

func TestMain(m *testing.M) { mpitest.Main(m) }

// Apply applies DPML_GOSCHED: in a process bound to one CPU it raises
// GOMAXPROCS from 1 to 2 (auto, procs) unless GOMAXPROCS is set in the
// environment, and turns pacing on (auto, pace); a bad value is an error
// and applies nothing. The test re-runs its own binary under taskset(1)
// (util-linux, installed by make deps) and reads what the child prints.
func TestApply(t *testing.T) {
	if os.Getenv("DPML_TEST_GOSCHED_CHILD") != "" {
		before := runtime.GOMAXPROCS(0)
		err := gosched.Apply()
		s := gosched.Sched()
		fmt.Printf("gomaxprocs=%d->%d pace=%v raised=%v mode=%q err=%v\n",
			before, runtime.GOMAXPROCS(0), s.Pace, s.RaisedProcs, s.Mode, err != nil)
		return
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Skip("taskset not installed")
	}
	for _, tc := range []struct{ env, want string }{
		{"", `gomaxprocs=1->2 pace=true raised=true mode="auto" err=false`},
		{config.GoSched + "=auto", `gomaxprocs=1->2 pace=true raised=true mode="auto" err=false`},
		{config.GoSched + "=pace", `gomaxprocs=1->1 pace=true raised=false mode="pace" err=false`},
		{config.GoSched + "=procs", `gomaxprocs=1->2 pace=false raised=true mode="procs" err=false`},
		{config.GoSched + "=off", `gomaxprocs=1->1 pace=false raised=false mode="off" err=false`},
		{"GOMAXPROCS=1", `gomaxprocs=1->1 pace=true raised=false mode="auto" err=false`},
		{"GOMAXPROCS=3", `gomaxprocs=3->3 pace=true raised=false mode="auto" err=false`},
		{config.GoSched + "=fast", `gomaxprocs=1->1 pace=false raised=false mode="" err=true`},
	} {
		cmd := exec.Command(taskset, "-c", "0", os.Args[0], "-test.run", "^TestApply$", "-test.count=1")
		var env []string
		for _, e := range os.Environ() {
			if !strings.HasPrefix(e, "GOMAXPROCS=") && !strings.HasPrefix(e, config.GoSched+"=") {
				env = append(env, e)
			}
		}
		cmd.Env = append(env, "DPML_TEST_GOSCHED_CHILD=1")
		if tc.env != "" {
			cmd.Env = append(cmd.Env, tc.env)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.env, err, out)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("env %q, bound to one CPU: want %s, got\n%s", tc.env, tc.want, out)
		}
	}
}

// Every MPI call that may wait paces the calling goroutine: with the
// interval at 0 each one yields exactly once (a Test loop once per Test).
// Then, at the real interval, a long loop of checked reductions, polled
// non-blocking ones and barriers, with a goroutine forcing garbage
// collections all along (each stops the world while this goroutine is
// between or inside MPI calls) and one rank late by more than the
// runtime's 10 ms forced-preemption slice once, so the others sit in a
// blocking call long enough for the runtime to take their P away.
func TestMultiRankPace(t *testing.T) {
	forLayouts(t, func(t *testing.T, w *mpi.Comm, nodes, ppn int) {
		if err := gosched.Apply(); err != nil {
			t.Fatal(err)
		}
		if !gosched.Sched().Pace {
			t.Skipf("pacing is off (%s): nothing to test", gosched.Sched())
		}
		rank, size := w.Rank(), w.Size()
		restore := gosched.SetPaceEvery(0)
		yields := func(what string, want int64, f func() error) {
			t.Helper()
			y := gosched.Sched().Yields
			if err := f(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if got := gosched.Sched().Yields - y; got != want {
				t.Errorf("%s: %d yields, want %d", what, got, want)
			}
		}
		sum := float64(size * (size - 1) / 2)
		one := []float64{float64(rank)}
		out := make([]float64, 1)
		yields("Allreduce", 1, func() error { return mpi.Allreduce(w, one, out, mpi.OpSum) })
		yields("AllreduceInPlace", 1, func() error { out[0] = float64(rank); return mpi.AllreduceInPlace(w, out, mpi.OpSum) })
		yields("Reduce", 1, func() error { return mpi.Reduce(w, one, out, mpi.OpSum, 0) })
		yields("ReduceInPlace", 1, func() error { out[0] = float64(rank); return mpi.ReduceInPlace(w, out, mpi.OpSum, 0) })
		yields("Bcast", 1, func() error { return mpi.Bcast(w, out, 0) })
		if out[0] != sum {
			t.Errorf("Reduce then Bcast: %v, want %v", out[0], sum)
		}
		all := make([]float64, size)
		yields("Allgather", 1, func() error { return mpi.Allgather(w, one, all) })
		yields("Barrier", 1, w.Barrier)
		yields("Wtime", 1, func() error { mpi.Wtime(); return nil })
		var r *mpi.Request
		yields("Iallreduce", 1, func() (err error) { r, err = mpi.Iallreduce(w, one, out, mpi.OpSum); return })
		yields("Wait", 1, r.Wait)
		out[0] = float64(rank)
		yields("IallreduceInPlace", 1, func() (err error) { r, err = mpi.IallreduceInPlace(w, out, mpi.OpSum); return })
		for done := false; !done; {
			yields("Test", 1, func() (err error) { done, err = r.Test(); return })
		}
		if out[0] != sum {
			t.Errorf("IallreduceInPlace: %v, want %v", out[0], sum)
		}
		next, prev := (rank+1)%size, (rank+size-1)%size
		got := make([]float64, 1)
		yields("Irecv+Isend+Waitall", 3, func() error {
			rr, err := mpi.Irecv(w, got, prev, 7)
			if err != nil {
				return err
			}
			sr, err := mpi.Isend(w, one, next, 7)
			if err != nil {
				return err
			}
			return mpi.Waitall([]*mpi.Request{rr, sr})
		})
		if got[0] != float64(prev) {
			t.Errorf("ring: got %v from %d", got[0], prev)
		}
		if rank == 0 {
			yields("Send", 1, func() error { return mpi.Send(w, one, 1, 8) })
		} else if rank == 1 {
			yields("Recv", 1, func() error { _, err := mpi.Recv(w, got, 0, 8); return err })
		}
		yields("Dup", 1, func() error {
			d, err := w.Dup()
			if err == nil {
				err = d.Free()
			}
			return err
		})
		restore()

		// The real interval, with collections running.
		stop := make(chan struct{})
		gcs := make(chan int)
		go func() {
			n := 0
			for i := 0; ; i++ {
				select {
				case <-stop:
					gcs <- n
					return
				default:
				}
				sink = make([]byte, 1<<16)
				if i%8 == 0 {
					runtime.GC()
					n++
				}
				time.Sleep(100 * time.Microsecond)
			}
		}()
		y0 := gosched.Sched().Yields
		t0 := time.Now()
		buf := make([]float64, 64)
		for i := range 1000 {
			if i == 300 && rank == size-1 {
				time.Sleep(15 * time.Millisecond)
			}
			for j := range buf {
				buf[j] = float64(rank + i + j)
			}
			if err := mpi.AllreduceInPlace(w, buf, mpi.OpSum); err != nil {
				t.Fatal(err)
			}
			for j, v := range buf {
				if want := sum + float64(size*(i+j)); v != want {
					t.Fatalf("iteration %d: element %d is %v, want %v", i, j, v, want)
				}
			}
			if i%100 == 0 {
				if err := w.Barrier(); err != nil {
					t.Fatal(err)
				}
			}
		}
		el := time.Since(t0)
		close(stop)
		n := <-gcs
		if n == 0 {
			t.Error("no garbage collection completed during the MPI loop")
		}
		y := gosched.Sched().Yields - y0
		// The loop's last calls come more than PaceEvery after its first.
		if el > 2*gosched.PaceEvery && y == 0 {
			t.Errorf("no yield in %v of MPI calls", el)
		}
		t.Logf("%v: %d yields, %d collections", el, y, n)
	})
}

var sink []byte

// forLayouts runs body on 2 ranks on two fake nodes and on 2 x 2.
func forLayouts(t *testing.T, body func(t *testing.T, w *mpi.Comm, nodes, ppn int)) {
	for _, l := range [][2]int{{2, 1}, {2, 2}} {
		nodes, ppn := l[0], l[1]
		t.Run(fmt.Sprintf("%dx%d", nodes, ppn), func(t *testing.T) {
			mpitest.Run(t, nodes, ppn, func(t *testing.T, w *mpi.Comm) {
				body(t, w, nodes, ppn)
			})
		})
	}
}
