// Package apptest holds helpers for the mini-apps' multi-rank tests.
package apptest

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/dpmlgo/dpml/apps/internal/report"
	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
)

// HashFloats is report.HashFloats.
func HashFloats(v []float64) uint64 { return report.HashFloats(v) }

// SameOnAllRanks fails the test unless every rank of w passes the same
// value (allgather, then compare).
func SameOnAllRanks(t *testing.T, w *mpi.Comm, what string, v uint64) {
	t.Helper()
	all := make([]uint64, w.Size())
	if err := mpi.Allgather(w, []uint64{v}, all); err != nil {
		t.Fatal(err)
	}
	for r, x := range all {
		if x != all[0] {
			t.Fatalf("%s differs between ranks: rank 0 has %#x, rank %d has %#x", what, all[0], r, x)
		}
	}
}

// SharedDir is a directory that the test process and the ranks it launches
// (mpitest.Run re-executes the same binary) agree on: next to the test
// binary, named after the test. The parent (outside any rank) empties it
// at the first call and removes it when the test ends.
func SharedDir(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(t.Name(), "_")
	dir := filepath.Join(filepath.Dir(exe), "apptest-"+name)
	if !mpitest.InRank() {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
	}
	return dir
}
