package hpcg

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpmlgo/dpml/apps/internal/apptest"
	"github.com/dpmlgo/dpml/apps/internal/backend"
	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
)

func TestMain(m *testing.M) { mpitest.Main(m) }

// HistoryTol bounds the relative difference, iteration by iteration, between
// the residual histories of two backends (which sum the ranks' partial dot
// products in different orders). See the README.
const HistoryTol = 1e-10

var layouts = []mpitest.Layout{mpitest.Even(1, 4), mpitest.Even(2, 2)}

// The distributed SpMV (halo exchange with all 26 neighbours) gives, bit
// for bit, the serial SpMV of the global grid.
func TestHaloSpMV(t *testing.T) {
	for _, lay := range layouts {
		mpitest.RunLayout(t, lay, func(t *testing.T, w *mpi.Comm) {
			// 4 ranks as 2x2x1, and as 4x1x1 and 1x1x4: every kind of
			// neighbour, every axis.
			for _, pg := range [][3]int{{0, 0, 0}, {4, 1, 1}, {1, 1, 4}, {1, 2, 2}} {
				p := Params{NX: 6, NY: 4, NZ: 5, PX: pg[0], PY: pg[1], PZ: pg[2], Levels: 1, MaxIters: 1}
				r, err := backend.New(w, backend.Spec{})
				if err != nil {
					t.Fatal(err)
				}
				pr, err := NewProblem(w, p, func(x float64) (float64, error) { return r.Sum(nil, x) })
				if err != nil {
					t.Fatal(err)
				}
				f := pr.Fine
				x, y := f.Vector(), f.Vector()
				fill(f, x, 3)
				if err := pr.SpMV(x, y); err != nil {
					t.Fatal(err)
				}
				g := pr.Grid
				sp, err := NewProblem(nil, Params{NX: f.GNX, NY: f.GNY, NZ: f.GNZ, Levels: 1, MaxIters: 1}, nil)
				if err != nil {
					t.Fatal(err)
				}
				sf := sp.Fine
				sx, sy := sf.Vector(), sf.Vector()
				fill(sf, sx, 3)
				if err := sp.SpMV(sx, sy); err != nil {
					t.Fatal(err)
				}
				for k := 0; k < f.NZ; k++ {
					for j := 0; j < f.NY; j++ {
						for i := 0; i < f.NX; i++ {
							a := y[f.Index(i, j, k)]
							b := sy[sf.Index(f.GX0+i, f.GY0+j, f.GZ0+k)]
							if math.Float64bits(a) != math.Float64bits(b) {
								t.Fatalf("grid %s rank %d point %d,%d,%d: distributed %v, serial %v", g, w.Rank(), i, j, k, a, b)
							}
						}
					}
				}
				// b is A * ones: the same as the serial one.
				for k := 0; k < f.NZ; k++ {
					for j := 0; j < f.NY; j++ {
						for i := 0; i < f.NX; i++ {
							if pr.B()[f.Index(i, j, k)] != sp.B()[sf.Index(f.GX0+i, f.GY0+j, f.GZ0+k)] {
								t.Fatalf("grid %s: b differs at %d,%d,%d", g, i, j, k)
							}
						}
					}
				}
			}
		})
	}
}

var testBackends = []string{"native", "dpml", "dpml-l1", "dpml-l2"}

// relDiff is the largest relative difference between two histories of
// equal length (+Inf when the lengths differ).
func relDiff(a, b []float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	worst := 0.0
	for k := range a {
		worst = max(worst, math.Abs(a[k]-b[k])/math.Abs(b[k]))
	}
	return worst
}

// cgRecord is what rank 0 of a run writes for the parent to compare.
type cgRecord struct {
	Iters   int
	History []float64
}

// CG on 4 ranks, layouts 1x4 and 2x2, each backend: the residual history
// is bit-identical on every rank and, for a fixed plan (native, dpml-lL),
// between two solves in one run and between two separate runs (jobs); it
// agrees with the native backend within HistoryTol, and every backend
// needs the same number of iterations to reach the tolerance. The engine's
// automatic plan (dpml) may change between calls: its repeats are checked
// within HistoryTol only.
func TestCGBackends(t *testing.T) {
	dir := apptest.SharedDir(t)
	params := Params{NX: 8, NY: 8, NZ: 8, Levels: 3, MaxIters: 100, Tol: 1e-9}
	for _, lay := range layouts {
		for run := 1; run <= 2; run++ {
			mpitest.RunLayout(t, lay, func(t *testing.T, w *mpi.Comm) {
				for _, name := range testBackends {
					spec, err := backend.Parse(name)
					if err != nil {
						t.Fatal(err)
					}
					r, err := backend.New(w, spec)
					if err != nil {
						t.Fatal(err)
					}
					ddot := r.Counter("ddot")
					pr, err := NewProblem(w, params, func(x float64) (float64, error) { return r.Sum(ddot, x) })
					if err != nil {
						t.Fatal(err)
					}
					res, err := pr.Solve()
					if err != nil {
						t.Fatal(err)
					}
					if !res.Converged {
						t.Fatalf("%s: not converged in %d iterations (%v)", name, res.Iters, res.Final())
					}
					apptest.SameOnAllRanks(t, w, name+" residual history", apptest.HashFloats(res.History))
					again, err := pr.Solve()
					if err != nil {
						t.Fatal(err)
					}
					// A fixed plan repeats itself bit for bit; the engine's
					// own choice (dpml) may change plans between calls.
					if spec.Fixed() && !sameBits(res.History, again.History) {
						t.Fatalf("%s: the second solve's history differs", name)
					}
					if d := relDiff(res.History, again.History); d > HistoryTol {
						t.Fatalf("%s: the second solve's history differs by %.3g", name, d)
					}
					if got, want := ddot.Calls, int64(2*(1+3*res.Iters)); got != want {
						t.Errorf("%s: %d ddot allreduces, want %d", name, got, want)
					}
					if err := r.Close(); err != nil {
						t.Fatal(err)
					}
					if w.Rank() == 0 {
						b, _ := json.Marshal(cgRecord{res.Iters, res.History})
						f := filepath.Join(dir, fmt.Sprintf("%s-%s-run%d.json", lay, name, run))
						if err := os.WriteFile(f, b, 0o644); err != nil {
							t.Fatal(err)
						}
					}
				}
			})
		}
	}
	if mpitest.InRank() {
		return
	}
	read := func(lay mpitest.Layout, name string, run int) cgRecord {
		var rec cgRecord
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%s-%s-run%d.json", lay, name, run)))
		if err == nil {
			err = json.Unmarshal(b, &rec)
		}
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	for _, lay := range layouts {
		nat := read(lay, "native", 1)
		for _, name := range testBackends {
			a, b := read(lay, name, 1), read(lay, name, 2)
			if spec, _ := backend.Parse(name); spec.Fixed() && !sameBits(a.History, b.History) {
				t.Errorf("%s %s: two runs give different histories", lay, name)
			}
			if d := relDiff(a.History, b.History); d > HistoryTol {
				t.Errorf("%s %s: two runs' histories differ by %.3g", lay, name, d)
			}
			if a.Iters != nat.Iters {
				t.Errorf("%s %s: %d iterations, native %d", lay, name, a.Iters, nat.Iters)
				continue
			}
			worst := relDiff(a.History, nat.History)
			if worst > HistoryTol {
				t.Errorf("%s %s: residual history differs from native by %.3g (relative), more than %g", lay, name, worst, HistoryTol)
			}
			t.Logf("%s %-8s %d iterations, final %.3e, largest relative difference to native %.3g", lay, name, a.Iters, a.History[a.Iters], worst)
		}
	}
}
