package miniamr

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

// ChecksumTol is the relative agreement required between the checksums of
// two backends (miniAMR's usual checksum tolerance). The measured
// differences are rounding-level (1e-15).
const ChecksumTol = 1e-8

var layouts = []mpitest.Layout{mpitest.Even(1, 4), mpitest.Even(2, 2)}

var testBackends = []string{"native", "dpml", "dpml-l2"}

// mpiParams is a small problem on 4 ranks (2x2x1), 2x2x2 root blocks in
// all, the same global problem as smallParams on one process.
func mpiParams() Params {
	p := smallParams()
	p.InitX, p.InitY, p.InitZ = 1, 1, 2
	return p
}

type amrRecord struct {
	Checksums []float64
	Hash      uint64
	Blocks    []int64
	Squares   []float64
}

// squares is sum over all cells of every variable squared (not conserved,
// so it catches misplaced data that the conserved sums would not).
func squares(t *testing.T, w *mpi.Comm, m *Mesh) []float64 {
	s := make([]float64, m.P.Vars)
	for _, b := range m.leaves {
		for v := 0; v < m.P.Vars; v++ {
			for k := 0; k < m.n; k++ {
				for j := 0; j < m.n; j++ {
					for i := 0; i < m.n; i++ {
						x := b.Data[v*m.s3+m.cell(i, j, k)]
						s[v] += x * x
					}
				}
			}
		}
	}
	if w != nil {
		if err := mpi.AllreduceInPlace(w, s, mpi.OpSum); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// A run on 4 ranks (layouts 1x4 and 2x2) with each backend: the checksums
// are bit-identical on every rank, equal between two runs (jobs) of the
// same fixed plan (native, dpml-lL; the engine's automatic choice may
// change plans, so its runs agree within ChecksumTol), within ChecksumTol
// of the native backend's, and within
// rounding of the same global problem run on one process; the block counts
// are exactly the one-process counts.
func TestRunBackends(t *testing.T) {
	dir := apptest.SharedDir(t)
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
					m, err := NewMesh(w, mpiParams(), r)
					if err != nil {
						t.Fatal(err)
					}
					if m.Grid.String() != "2x2x1" {
						t.Fatalf("process grid %s", m.Grid)
					}
					res, err := m.Run()
					if err != nil {
						t.Fatal(err)
					}
					apptest.SameOnAllRanks(t, w, name+" checksums", apptest.HashFloats(res.Checksums))
					apptest.SameOnAllRanks(t, w, name+" checksum history", res.Hash)
					if res.MaxDrift > 1e-13 {
						t.Errorf("%s: checksums drift by %v", name, res.MaxDrift)
					}
					st := r.Stats()
					if len(st) == 0 || r.Counter("checksum").Calls != int64(res.Checks) || r.Counter("balance").Calls == 0 {
						t.Errorf("%s: allreduce counters %+v", name, st)
					}
					sq := squares(t, w, m)
					if err := r.Close(); err != nil {
						t.Fatal(err)
					}
					if w.Rank() == 0 {
						b, _ := json.Marshal(amrRecord{res.Checksums, res.Hash, res.BlocksPerLevel, sq})
						if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%s-run%d.json", lay, name, run)), b, 0o644); err != nil {
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
	// The same global problem on one process.
	sm := newSerial(t, smallParams())
	sres, err := sm.Run()
	if err != nil {
		t.Fatal(err)
	}
	ssq := squares(t, nil, sm)
	read := func(lay mpitest.Layout, name string, run int) amrRecord {
		var rec amrRecord
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%s-%s-run%d.json", lay, name, run)))
		if err == nil {
			err = json.Unmarshal(b, &rec)
		}
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	worst := func(a, b []float64) float64 {
		d := 0.0
		for i := range a {
			d = max(d, math.Abs(a[i]-b[i])/math.Abs(b[i]))
		}
		return d
	}
	for _, lay := range layouts {
		nat := read(lay, "native", 1)
		for _, name := range testBackends {
			a, b := read(lay, name, 1), read(lay, name, 2)
			if spec, _ := backend.Parse(name); spec.Fixed() && a.Hash != b.Hash {
				t.Errorf("%s %s: two runs give different checksums", lay, name)
			}
			if d := worst(a.Checksums, b.Checksums); d > ChecksumTol {
				t.Errorf("%s %s: two runs' checksums differ by %.3g", lay, name, d)
			}
			if d := worst(a.Checksums, nat.Checksums); d > ChecksumTol {
				t.Errorf("%s %s: checksums differ from native by %.3g (relative)", lay, name, d)
			}
			if d := worst(a.Checksums, sres.Checksums); d > 1e-13 {
				t.Errorf("%s %s: checksums differ from the one-process run by %.3g", lay, name, d)
			}
			if d := worst(a.Squares, ssq); d > 1e-13 {
				t.Errorf("%s %s: sums of squares differ from the one-process run by %.3g", lay, name, d)
			}
			if fmt.Sprint(a.Blocks) != fmt.Sprint(sres.BlocksPerLevel) {
				t.Errorf("%s %s: blocks per level %v, one process %v", lay, name, a.Blocks, sres.BlocksPerLevel)
			}
			t.Logf("%s %-8s blocks %v, checksum[0] %.17g, vs native %.3g, vs one process %.3g",
				lay, name, a.Blocks, a.Checksums[0], worst(a.Checksums, nat.Checksums), worst(a.Checksums, sres.Checksums))
		}
	}
}
