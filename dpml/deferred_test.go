package dpml

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
)

// TestDeferredSetup: New with Deferred runs the calls on the MPI library
// until they are priced at DPML_SETUP_AFTER (5 us plus 1 ns per byte each,
// the drop-in's documented rule, computed here from the numbers, not from
// the code), sets the engine up inside that call on every rank, and runs
// the later calls on it; every result is checked against the closed-form
// sum. A communicator closed before its setup never builds anything;
// SetOverride before the setup holds after it; a DPML_SETUP_AFTER that
// differs between ranks fails New alike on every rank.
//
// Mutation checks: runDeferred never pricing the calls (setupDue always
// false) leaves call 110 not set up; newDeferred skipping Agree lets the
// mismatched ranks through ("New succeeded").
func TestDeferredSetup(t *testing.T) {
	mpitest.Run(t, 2, 2, func(t *testing.T, w *mpi.Comm) {
		size, rank := w.Size(), w.Rank()
		check := func(recv []float32, call int) {
			t.Helper()
			for i, v := range recv {
				want := float32((i%7 + call) * size * (size + 1) / 2)
				if v != want {
					t.Fatalf("call %d: element %d is %v, want %v", call, i, v, want)
				}
			}
		}
		fill := func(send []float32, call int) {
			for i := range send {
				send[i] = float32((i%7 + call) * (rank + 1))
			}
		}

		t.Run("sets-up-when-paid", func(t *testing.T) {
			t.Setenv(config.SetupAfter, "1ms")
			c, err := New(w, Deferred())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			const n = 1024 // 4 KiB of float32: 9.096 us a call
			first := 0
			for k := 1; ; k++ {
				if float64(k)*(5e-6+4096e-9) >= 1e-3 {
					first = k // 110
					break
				}
			}
			send, recv := make([]float32, n), make([]float32, n)
			for k := 1; k <= first+10; k++ {
				fill(send, k)
				if err := Allreduce(c, send, recv, mpi.OpSum); err != nil {
					t.Fatalf("call %d: %v", k, err)
				}
				check(recv, k)
				setUp := c.later == nil && c.world != nil && c.seg != nil
				if setUp != (k >= first) {
					t.Fatalf("call %d: set up %v, want %v (setup due at call %d)", k, setUp, k >= first, first)
				}
				if k < first {
					if p := c.LastPlan(); p.Variant != Native {
						t.Fatalf("call %d before the setup: last plan %v, want the MPI library's", k, p.Variant)
					}
					if _, err := c.Plan(n, 4, Override{}); !errors.Is(err, ErrNotSetUp) {
						t.Fatalf("Plan before the setup: %v, want ErrNotSetUp", err)
					}
				}
			}
			// In place, on the engine now.
			fill(recv, 3)
			if err := AllreduceInPlace(c, recv, mpi.OpSum); err != nil {
				t.Fatal(err)
			}
			check(recv, 3)
		})

		t.Run("closed-before-setup", func(t *testing.T) {
			t.Setenv(config.SetupAfter, "1h")
			c, err := New(w, Deferred())
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]float32, 64)
			for k := 1; k <= 5; k++ {
				fill(buf, k)
				if err := AllreduceInPlace(c, buf, mpi.OpSum); err != nil {
					t.Fatalf("call %d: %v", k, err)
				}
				check(buf, k)
			}
			if err := c.Warm(); err != nil || c.seg != nil {
				t.Fatalf("Warm before the setup: %v, segment %v; want nothing built", err, c.seg != nil)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if c.world != nil || c.seg != nil || c.tuner != nil {
				t.Fatal("a communicator closed before its setup built something")
			}
			if err := AllreduceInPlace(c, buf, mpi.OpSum); !errors.Is(err, ErrClosed) {
				t.Fatalf("call after Close: %v, want ErrClosed", err)
			}
		})

		t.Run("override-kept", func(t *testing.T) {
			t.Setenv(config.SetupAfter, "0")
			c, err := New(w, Deferred())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetOverride(Override{Variant: Native})
			buf := make([]float32, 256)
			fill(buf, 1)
			if err := AllreduceInPlace(c, buf, mpi.OpSum); err != nil {
				t.Fatal(err)
			}
			check(buf, 1)
			if c.later != nil {
				t.Fatal("DPML_SETUP_AFTER=0: not set up at the first call")
			}
			if p := c.LastPlan(); p.Variant != Native {
				t.Fatalf("SetOverride before the setup: the first call on the engine ran %v, want native", p.Variant)
			}
		})

		t.Run("mismatch", func(t *testing.T) {
			t.Setenv(config.SetupAfter, fmt.Sprintf("%dms", 1+rank*2/size))
			c, err := New(w, Deferred())
			if err == nil {
				c.Close()
				t.Fatal("New succeeded with DPML_SETUP_AFTER differing between ranks")
			}
			if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), config.SetupAfter) {
				t.Fatalf("error %v: want ErrMismatch naming %s", err, config.SetupAfter)
			}
		})
	})
}

// TestDeferredChurn: 1,000 communicators made, used 1-5 times with mixed
// sizes and freed, as a program that makes one per phase would, with
// Deferred (DPML_SETUP_AFTER=2ms: the 400 that make 4-5 calls of 1 MiB
// are set up at their second, the others never): every result checked,
// nothing left in /dev/shm, and the open file descriptors and the Go heap
// as before.
//
// Mutation check: Close skipping the release of a communicator its calls
// set up ("heap grew by 116666264 bytes over 900 communicators").
func TestDeferredChurn(t *testing.T) {
	mpitest.Run(t, 2, 2, func(t *testing.T, w *mpi.Comm) {
		t.Setenv(config.SetupAfter, "2ms")
		job := os.Getenv("DPML_JOB")
		size, rank := w.Size(), w.Rank()
		fds := func() int {
			ents, err := os.ReadDir("/proc/self/fd")
			if err != nil {
				t.Skip("no /proc/self/fd")
			}
			return len(ents)
		}
		heap := func() uint64 {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			return ms.HeapAlloc
		}
		buf := make([]float64, 1<<17)
		const comms = 1000
		var fd0 int
		var heap0 uint64
		setUp := 0
		for i := range comms {
			if i == 100 {
				fd0, heap0 = fds(), heap()
			}
			d, err := w.Dup()
			if err != nil {
				t.Fatal(err)
			}
			c, err := New(d, Deferred())
			if err != nil {
				t.Fatalf("communicator %d: %v", i, err)
			}
			for k := range 1 + i%5 {
				n := 1 + (i*7+k*13)%64
				if i%5 >= 3 {
					n = len(buf) // 1 MiB: the 4th and 5th calls pay for the setup
				}
				for j := range n {
					buf[j] = float64((rank + 1) * (j%3 + k))
				}
				if err := AllreduceInPlace(c, buf[:n], mpi.OpSum); err != nil {
					t.Fatalf("communicator %d, call %d: %v", i, k, err)
				}
				for j := range n {
					if want := float64(size * (size + 1) / 2 * (j%3 + k)); buf[j] != want {
						t.Fatalf("communicator %d, call %d: element %d is %v, want %v", i, k, j, buf[j], want)
					}
				}
			}
			if c.later == nil {
				setUp++
			}
			if err := c.Close(); err != nil {
				t.Fatalf("communicator %d: close: %v", i, err)
			}
			if err := d.Free(); err != nil {
				t.Fatal(err)
			}
		}
		if setUp == 0 || setUp == comms {
			t.Errorf("%d of %d communicators set up; want some, not all", setUp, comms)
		}
		if n := fds(); n > fd0+4 {
			t.Errorf("file descriptors: %d after the churn, %d before", n, fd0)
		}
		if grow := int64(heap()) - int64(heap0); grow > 2<<20 {
			t.Errorf("heap grew by %d bytes over %d communicators", grow, comms-100)
		}
		if job != "" {
			if left := shmEntries(t, "dpml-"+job); len(left) > 0 {
				t.Errorf("left in /dev/shm: %v", left)
			}
		}
	})
}
