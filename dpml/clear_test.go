package dpml

import (
	"os"
	"testing"
	"time"

	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
)

// TestGoClearance: a Go caller's calls that the engine cleared (settled
// tuned keys, fixed plans: goClearance) skip the engine's per-call work
// and still give exact results, the learner counts every call of every
// key (the cleared ones credited at the engine's next call), and every
// rank ends in the same learner state. Calls of another size or op in
// between end a clearance; the oracle is a scalar fold of the inputs.
// With the confirmation brought forward (DPML_TUNER_CONFIRM=100) and the
// main size alone after the first 100 calls, its blocks of the tree run
// cleared too and fill the tree arm's samples.
// Mutations: no block clearance in clearGo fails the block count; the
// block's exit not read (runCleared) fails the samples' check.
func TestGoClearance(t *testing.T) {
	for _, tc := range []struct {
		name        string
		nodes, ppn  int
		tuner       string
		wantCleared bool
		confirm     string // DPML_TUNER_CONFIRM ("": the default)
	}{
		{"1x4/auto", 1, 4, "auto", true, ""},
		{"2x2/auto", 2, 2, "auto", true, ""},
		{"1x4/static", 1, 4, "static", true, ""},
		{"1x4/confirm", 1, 4, "auto", true, "100"},
		{"2x2/confirm", 2, 2, "auto", true, "100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mpitest.Run(t, tc.nodes, tc.ppn, func(t *testing.T, w *mpi.Comm) {
				os.Setenv("DPML_TUNER", tc.tuner)
				defer os.Unsetenv("DPML_TUNER")
				// No budget: exploration and the confirmation's
				// blocks come within the test's calls.
				os.Setenv("DPML_TUNER_BUDGET", "-1")
				defer os.Unsetenv("DPML_TUNER_BUDGET")
				if tc.confirm != "" {
					os.Setenv("DPML_TUNER_CONFIRM", tc.confirm)
					defer os.Unsetenv("DPML_TUNER_CONFIRM")
				}
				// The learner must settle on a plan that can be
				// cleared whatever this machine's load: every other
				// plan costs 300 us more per call.
				testHookPlanCost = func(p *Plan) time.Duration {
					if p.Variant != Native && p.Intra == IntraTree && p.Leaders == 1 {
						return 0
					}
					return 300 * time.Microsecond
				}
				defer func() { testHookPlanCost = nil }()
				c, err := New(w, WithSegmentBytes(64<<10))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				type shape struct {
					n  int
					op mpi.Op
				}
				// Mostly 8 float64 (64 B) back to back, which settles
				// and gets cleared; every 97th call another size, every
				// 211th another op.
				main, other, maxOp := shape{8, mpi.OpSum}, shape{3, mpi.OpSum}, shape{8, mpi.OpMax}
				const calls = 6000
				counts := map[shape]uint64{}
				send, recv := make([]float64, 8), make([]float64, 8)
				for i := 0; i < calls; i++ {
					s := main
					switch {
					case tc.confirm != "" && i > 100:
						// Back to back: every block of the
						// confirmation runs cleared, whole.
					case i%211 == 0:
						s = maxOp
					case i%97 == 0:
						s = other
					}
					counts[s]++
					for j := 0; j < s.n; j++ {
						send[j] = float64((w.Rank()*7 + j + i) % 11)
					}
					if err := Allreduce(c, send[:s.n], recv[:s.n], s.op); err != nil {
						t.Fatalf("call %d: %v", i, err)
					}
					for j := 0; j < s.n; j++ {
						want := 0.0
						for r := 0; r < w.Size(); r++ {
							v := float64((r*7 + j + i) % 11)
							if s.op == mpi.OpMax {
								want = max(want, v)
							} else {
								want += v
							}
						}
						if recv[j] != want {
							t.Fatalf("call %d (%d x float64, %v), element %d: %v, want %v", i, s.n, s.op, j, recv[j], want)
						}
					}
				}
				if got := c.fz.clearedCalls; (got > 0) != tc.wantCleared {
					t.Errorf("%d calls ran cleared, want some: %v", got, tc.wantCleared)
				}
				if c.fz.calls == 0 {
					t.Errorf("no call ran the fused tree")
				}
				if tn := c.Tuner(); tn != nil && tc.tuner == "auto" {
					c.settleClear()
					for s, n := range counts {
						k := c.tunerKey(mpi.KindFloat64, s.op, s.n)
						in, ok := tn.Info(k)
						if !ok || in.Calls != n {
							t.Errorf("%d x float64 %v: the learner counted %d calls (found %v), want %d", s.n, s.op, in.Calls, ok, n)
						}
					}
					mine := []uint64{tn.Fingerprint()}
					all := make([]uint64, w.Size())
					if err := mpi.Allgather(w, mine, all); err != nil {
						t.Fatal(err)
					}
					for r := range all {
						if all[r] != all[0] {
							t.Fatalf("rank %d learned another state than rank 0", r)
						}
					}
				}
				if tc.confirm != "" {
					// The confirmation's blocks of the tree ran cleared
					// and reached the learner: its arm has the
					// confirmation's 8 samples (a block timed wrong is
					// no sample).
					if c.fz.blockCalls == 0 {
						t.Errorf("no confirmation block ran cleared")
					}
					in, _ := c.Tuner().Info(c.tunerKey(mpi.KindFloat64, mpi.OpSum, 8))
					full := false
					for _, m := range in.Measured {
						full = full || m.Arm.Intra == IntraTree && m.Samples == 8
					}
					if !in.Confirmed || !full {
						t.Errorf("8 x float64: confirmed %v, no tree arm with the confirmation's 8 samples: %+v", in.Confirmed, in.Measured)
					}
				}
				t.Logf("%d of %d calls cleared (%d in confirmation blocks), %d fused", c.fz.clearedCalls, calls, c.fz.blockCalls, c.fz.calls)
			})
		})
	}
}
