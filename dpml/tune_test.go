package dpml

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/costmodel/learn"
	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
)

// TestTunerSameDecisionsEverywhere: with timings that differ between ranks
// (every rank sleeps a different, varying time inside its measured window
// by delaying its entry), every rank runs the same plan on every call, the
// tuner tries more than one plan, and a saved table brings the next
// communicator up already tuned. The commit steps' cost reaches the tuner,
// the same on every rank.
func TestTunerSameDecisionsEverywhere(t *testing.T) {
	dir := sharedTempDir(t) // the parent's: DPML_TUNING_FILE must be equal on all ranks
	mpitest.Run(t, 2, 2, func(t *testing.T, w *mpi.Comm) {
		file := filepath.Join(dir, "tuning.json")
		os.Setenv("DPML_TUNING_FILE", file)
		os.Setenv("DPML_TUNER", "auto")
		// No budget: the keys explore from their first calls, so that a
		// short run settles and saves them.
		os.Setenv("DPML_TUNER_BUDGET", "-1")
		defer os.Unsetenv("DPML_TUNER_BUDGET")
		defer os.Unsetenv("DPML_TUNING_FILE")
		c, err := New(w, WithSegmentBytes(64<<10))
		if err != nil {
			t.Fatal(err)
		}
		if c.Tuner() == nil {
			t.Fatal("no tuner in auto mode")
		}
		h := fnv.New64a()
		plans := map[string]bool{}
		sizes := []int{16, 4 << 10, 40 << 10}
		buf := make([]float32, 40<<10)
		out := make([]float32, len(buf))
		// 500 calls per key: a key settles after about 5 samples per arm
		// tried (Config.SamplesPerArm), more when the noise of a shared
		// machine sends it on.
		const calls = 1500
		for i := 0; i < calls; i++ {
			n := sizes[i%len(sizes)]
			if (i+w.Rank())%7 == 0 {
				time.Sleep(time.Duration(w.Rank()) * 50 * time.Microsecond)
			}
			if err := Allreduce(c, buf[:n], out[:n], mpi.OpSum); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
			p := c.LastPlan()
			s := fmt.Sprintf("%d:%v/%d/%d/%v;", n, p.Variant, p.Leaders, p.Pipeline, p.Intra)
			h.Write([]byte(s))
			plans[s[len(fmt.Sprint(n))+1:]] = true
		}
		mine := []uint64{h.Sum64(), c.Tuner().Fingerprint()}
		all := make([]uint64, 2*w.Size())
		if err := mpi.Allgather(w, mine, all); err != nil {
			t.Fatal(err)
		}
		for r := 1; r < w.Size(); r++ {
			if all[2*r] != all[0] || all[2*r+1] != all[1] {
				t.Fatalf("rank %d ran other plans (or learned another state) than rank 0", r)
			}
		}
		if len(plans) < 2 {
			t.Errorf("the tuner never explored: plans %v", plans)
		}
		// The commits' time reached the tuner (NoteOverhead), agreed
		// (the fingerprints above hold it): the settled keys' floor.
		if ov := c.Tuner().Overhead(); !(ov > 0 && ov < 1) {
			t.Errorf("tuner overhead per recorded call %g s, want a commit step's share (> 0)", ov)
		}
		// Keys this run learned (the default table holds others).
		learned := map[costmodel.Key]costmodel.Arm{}
		for _, in := range c.Tuner().Infos() {
			if in.State == learn.Frozen && in.Calls > 0 {
				learned[in.Key] = in.Arm
			}
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := w.Barrier(); err != nil { // rank 0 has saved the table
			t.Fatal(err)
		}
		c2, err := New(w, WithSegmentBytes(64<<10)) // same arms as c
		if err != nil {
			t.Fatalf("reload %s: %v", file, err)
		}
		defer c2.Close()
		if len(learned) == 0 {
			t.Fatalf("no key settled in %d calls", calls)
		}
		for k, arm := range learned {
			in, ok := c2.Tuner().Info(k)
			if !ok || in.State != learn.Frozen || in.Arm != arm {
				t.Errorf("key %v settled on %v; reloaded: %+v (found %v)", k, arm, in, ok)
			}
		}
		t.Logf("plans tried %d, keys settled and reloaded %d", len(plans), len(learned))
	})
}

// TestTunerTreeBytes: the learner's tree arms reach 16 KiB on several
// nodes but stop at the fused call's bound on one, and none without the
// tree; the arm sets built from them agree.
func TestTunerTreeBytes(t *testing.T) {
	hasTree := func(tb, nodes, bytes int) bool {
		cfg := learn.DefaultConfig()
		cfg.TreeBytes = tb
		tu, err := learn.NewTuner(cfg, costmodel.DefaultModel())
		if err != nil {
			t.Fatal(err)
		}
		k := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, bytes, costmodel.Layout{Nodes: nodes, PPN: 32 / nodes})
		for _, a := range tu.Arms(k) {
			if a.Intra == IntraTree {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		treeBytes, nodes, bytes int
		want                    bool
	}{
		{64 << 10, 1, 8, true},
		{64 << 10, 1, 1 << 10, true},
		{64 << 10, 1, 4 << 10, false},
		{64 << 10, 1, 16 << 10, false},
		{64 << 10, 4, 4 << 10, true},
		{64 << 10, 4, 16 << 10, true},
		{4 << 10, 4, 16 << 10, true},
		{4 << 10, 4, 64 << 10, false},
		{0, 1, 8, false},
		{0, 4, 8, false},
	} {
		tb := tunerTreeBytes(tc.treeBytes, tc.nodes)
		if got := hasTree(tb, tc.nodes, tc.bytes); got != tc.want {
			t.Errorf("DPML_TREE_BYTES %d, %d node(s), %d B: tree arms %v, want %v (TreeBytes %d)", tc.treeBytes, tc.nodes, tc.bytes, got, tc.want, tb)
		}
	}
}

// TestFirstCallRunsModelPlan: under the default settings every size's
// first calls run the plan DPML_TUNER=model runs, on one node and on
// several: the learner leaves the model's plan only once a size's own
// calls have paid for a trial, and ten calls pay for none. The oracle is
// a second communicator with DPML_TUNER=model taking the same calls.
func TestFirstCallRunsModelPlan(t *testing.T) {
	for _, lay := range [][2]int{{1, 4}, {2, 2}} {
		t.Run(fmt.Sprintf("%dx%d", lay[0], lay[1]), func(t *testing.T) {
			mpitest.Run(t, lay[0], lay[1], func(t *testing.T, w *mpi.Comm) {
				run := func(tuner string) []string {
					os.Setenv("DPML_TUNER", tuner)
					defer os.Unsetenv("DPML_TUNER")
					c, err := New(w, WithSegmentBytes(64<<10))
					if err != nil {
						t.Fatal(err)
					}
					defer c.Close()
					buf := make([]float32, 1<<20)
					var plans []string
					for n := 1; n <= len(buf); n *= 4 {
						for i := range 10 {
							if err := AllreduceInPlace(c, buf[:n], mpi.OpSum); err != nil {
								t.Fatal(err)
							}
							p := c.LastPlan()
							plans = append(plans, fmt.Sprintf("%d floats, call %d: %v", n, i, p.Spec()))
						}
					}
					return plans
				}
				auto, model := run("auto"), run("model")
				for i := range auto {
					if auto[i] != model[i] {
						t.Errorf("default: %s; DPML_TUNER=model: %s", auto[i], model[i])
					}
				}
			})
		})
	}
}

// TestExchangeDeferred: the learner's exchange of its samples runs
// beside the calls (DPML_TUNER_LAG=8): a call that starts it returns with
// the exchange in flight (no blocking collective on it), the exchange
// commits at the same call on every rank (the plans every rank ran, call
// by call, hash alike, so no rank ever ran a call alone), the learner
// still learns (keys committed samples), and results are right. With
// DPML_TUNER_LAG=0 no call returns with one in flight. Lags 8 and 5 (the
// least that folds) go through the node segment, 4 through MPI. Mutations: the
// lag ignored (advanceExchange waiting at once) -> no call sees one in
// flight; the phase ended on the rank's own test result instead of the
// lag -> the ranks' plans part (hashes differ, or a call times out).
func TestExchangeDeferred(t *testing.T) {
	for _, lay := range [][2]int{{1, 4}, {2, 2}} {
		for _, lag := range []string{"8", "5", "4", "0"} {
			t.Run(fmt.Sprintf("%dx%d/lag=%s", lay[0], lay[1], lag), func(t *testing.T) {
				mpitest.Run(t, lay[0], lay[1], func(t *testing.T, w *mpi.Comm) {
					os.Setenv("DPML_TUNER_BUDGET", "-1") // explore first: many commits
					os.Setenv("DPML_TUNER_LAG", lag)
					defer os.Unsetenv("DPML_TUNER_BUDGET")
					defer os.Unsetenv("DPML_TUNER_LAG")
					c, err := New(w, WithSegmentBytes(64<<10))
					if err != nil {
						t.Fatal(err)
					}
					defer c.Close()
					h := fnv.New64a()
					inFlight := 0
					for i := range 3000 {
						n := []int{3, 700, 9000}[i%3]
						send, recv := make([]int32, n), make([]int32, n)
						for j := range send {
							send[j] = int32(w.Rank() + j%7)
						}
						if err := Allreduce(c, send, recv, mpi.OpSum); err != nil {
							t.Fatal(err)
						}
						for j, v := range recv {
							if want := int32(w.Size()*(w.Size()-1)/2 + w.Size()*(j%7)); v != want {
								t.Fatalf("call %d, %d elements: element %d = %d, want %d", i, n, j, v, want)
							}
						}
						fmt.Fprintln(h, c.LastPlan().Spec())
						if c.xchg.phase != 0 {
							inFlight++
						}
					}
					sum := []uint64{h.Sum64(), ^h.Sum64()}
					if err := mpi.AllreduceInPlace(w, sum, mpi.OpMax); err != nil {
						t.Fatal(err)
					}
					if sum[0] != ^sum[1] {
						t.Errorf("the ranks ran different plans")
					}
					if (lag != "0") != (inFlight > 0) {
						t.Errorf("DPML_TUNER_LAG=%s: %d calls returned with the exchange in flight", lag, inFlight)
					}
					// With a lag of minFoldLag or more the commit
					// step goes through the node segment (and the
					// folders' messages across nodes), with less
					// through MPI.
					if fold := lag == "8" || lag == "5"; fold != (c.xchg.folds > 0) {
						t.Errorf("%d commit steps through the node segment, want some: %v", c.xchg.folds, fold)
					}
					var samples uint64
					for _, in := range c.tuner.Infos() {
						samples += in.Samples
					}
					if samples == 0 {
						t.Errorf("no key committed a sample")
					}
					// DPML_VERBOSE's books: this rank's recorded calls,
					// commit steps and their cost per recorded call.
					var out strings.Builder
					c.printTuner(&out, false)
					m := regexp.MustCompile(`this rank over the run: (\d+\.\d\d) us per recorded call \((\d+) calls\): (\d+) commit steps (\d+\.\d\d), and (\d+\.\d\d) more inside waits for peers still not ready \(\d+ of \d+ parts run in waits; both: exchange (\d+\.\d\d), of it reading the stamps in (\d+\.\d\d), verdicts (\d+\.\d\d), MPI waits \d+\.\d\d; commit (\d+\.\d\d)\)`).FindStringSubmatch(out.String())
					if m == nil || m[2] == "0" || m[3] == "0" || m[4] == "0.00" || m[9] == "0.00" {
						t.Errorf("the tuner's books: %q", out.String())
					} else if folds := c.xchg.folds > 0 && c.folder(); folds != (c.books.touchNs > 0 && c.books.verdictNs > 0) {
						t.Errorf("the folder's books (folds through the segment %v): reading the stamps in %d ns, verdicts %d ns", folds, c.books.touchNs, c.books.verdictNs)
					}
				})
			})
		}
	}
}

// exploringComm is a communicator of w whose learner explores from its
// first call, without a budget: many commit steps.
func exploringComm(t *testing.T, w *mpi.Comm) *Comm {
	t.Helper()
	os.Setenv("DPML_TUNER_BUDGET", "-1")
	defer os.Unsetenv("DPML_TUNER_BUDGET")
	c, err := New(w, WithSegmentBytes(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestTunerWorkInWaits: a commit step's parts (the stamps written, the
// fold, the commit) run inside a call's wait for peers when the call
// waits: the last rank arrives a millisecond late at every call, so the
// others wait in every call of a plan the engine runs over shared memory.
// Results are checked, and every rank runs the same plans call by call.
// Mutation: the waits' idle work disabled (tunerIdle.Idle returning false)
// -> "no part ran inside a wait".
func TestTunerWorkInWaits(t *testing.T) {
	mpitest.Run(t, 1, 4, func(t *testing.T, w *mpi.Comm) {
		c := exploringComm(t, w)
		defer c.Close()
		h := fnv.New64a()
		const n = 3000
		send, recv := make([]float64, n), make([]float64, n)
		for i := range 600 {
			for j := range send {
				send[j] = float64(w.Rank()*n + j + i)
			}
			if w.Rank() == w.Size()-1 {
				time.Sleep(time.Millisecond)
			}
			if err := Allreduce(c, send, recv, mpi.OpSum); err != nil {
				t.Fatal(err)
			}
			for j, v := range recv {
				// sum over ranks r of (r*n + j + i), exact in float64
				if want := float64(n*w.Size()*(w.Size()-1)/2 + w.Size()*(j+i)); v != want {
					t.Fatalf("call %d: element %d = %v, want %v", i, j, v, want)
				}
			}
			fmt.Fprintln(h, c.LastPlan().Spec())
		}
		sum := []uint64{h.Sum64(), ^h.Sum64()}
		if err := mpi.AllreduceInPlace(w, sum, mpi.OpMax); err != nil {
			t.Fatal(err)
		}
		if sum[0] != ^sum[1] {
			t.Errorf("the ranks ran different plans")
		}
		if c.xchg.folds == 0 {
			t.Fatalf("no commit step through the node segment")
		}
		if w.Rank() != w.Size()-1 && c.books.idleRuns == 0 {
			t.Errorf("no part ran inside a wait in %d commit steps", c.xchg.folds)
		}
	})
}

// TestFoldExchange: the commit step through the node segment and the
// folders' gather commits, on every rank, the verdicts of every rank's
// stamps: the oracle gathers each step's stamps from all ranks through
// the MPI library and folds them in world rank order. On one node and on
// two. Mutations: the folder folding one local rank fewer -> "step 1:
// verdict 0 ..."; the nodes' folds not merged -> the same on 2x2.
func TestFoldExchange(t *testing.T) {
	for _, lay := range [][2]int{{1, 4}, {2, 2}} {
		t.Run(fmt.Sprintf("%dx%d", lay[0], lay[1]), func(t *testing.T) {
			mpitest.Run(t, lay[0], lay[1], func(t *testing.T, w *mpi.Comm) {
				c := exploringComm(t, w)
				defer c.Close()
				var want []float64 // the step in flight's verdicts, from the oracle
				steps := 0
				for i := 0; i < 3000 && steps < 6; i++ {
					n := []int{3, 700, 9000}[i%3]
					send, recv := make([]float32, n), make([]float32, n)
					folds := c.xchg.folds
					if err := Allreduce(c, send, recv, mpi.OpSum); err != nil {
						t.Fatal(err)
					}
					if c.xchg.folds > folds && want != nil {
						steps++
						got := unsafe.Slice((*float64)(c.seg.verdictArea(c.xchg.gen%2)), len(want))
						for j := range want {
							if got[j] != want[j] {
								t.Fatalf("step %d: verdict %d of %d is %g, the oracle's %g", steps, j, len(want), got[j], want[j])
							}
						}
						want = nil
					}
					if c.xchg.phase == 0 || c.xchg.calls != 0 || !c.xchg.fold {
						continue
					}
					// A step has just started: the same call on every rank.
					st := c.tuner.Stamps()
					all := make([]float64, len(st)*w.Size())
					if err := mpi.Allgather(w, st, all); err != nil {
						t.Fatal(err)
					}
					f := make([]float64, learn.FoldLen(len(st)))
					for r := range w.Size() {
						if err := learn.Fold(f, all[r*len(st):(r+1)*len(st)], r == 0); err != nil {
							t.Fatal(err)
						}
					}
					v, err := c.tuner.Verdicts(f)
					if err != nil {
						t.Fatal(err)
					}
					want = slices.Clone(v)
				}
				if steps < 6 {
					t.Fatalf("%d commit steps checked, want 6", steps)
				}
			})
		})
	}
}
