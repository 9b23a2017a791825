//go:build dpmltrace && amd64

package dpml

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
)

// TestTrace runs the dpmltrace build's recorder (make test runs it with
// -tags dpmltrace): 4 ranks of one node, 300 tree calls of radix 2 (a root,
// an inner rank and two leaves), then every rank's file is read back. Each
// call must carry its steps in order on its own rank (entered <= plan <=
// input published <= result seen <= returned; a parent's children seen
// before its publication; the root's result published before it saw it),
// the headers must name a tree (one root, every other rank's parent a
// rank), and the calls must be all the calls made. Only one rank's stamps
// are compared with each other: the test does not assume the cores' time
// stamp counters agree.
//
// Mutation check: without c.mark(tpUp) in the executor's contribute, every
// call lacks its "up" stamp and the test fails; likewise without the
// tpKids mark in the tree's contribute (the inner rank's calls).
func TestTrace(t *testing.T) {
	const calls = 300
	mpitest.Run(t, 1, 4, func(t *testing.T, w *mpi.Comm) {
		dir, done := jobTempDir(t, w, "trace")
		defer done()
		t.Setenv("DPML_TRACE", filepath.Join(dir, "trace-%r.csv"))
		c, err := New(w)
		if err != nil {
			t.Fatal(err)
		}
		send, recv := []float64{float64(w.Rank() + 1)}, []float64{0}
		for range calls {
			if err := AllreduceWith(c, send, recv, mpi.OpSum, Override{Intra: IntraTree, Radix: 2}); err != nil {
				t.Fatal(err)
			}
			if recv[0] != 10 {
				t.Fatalf("sum %v, want 10", recv[0])
			}
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := w.Barrier(); err != nil {
			t.Fatal(err)
		}
		if w.Rank() != 0 {
			return
		}
		parents := map[int]int{}
		rows := map[int][]map[string]int64{}
		for r := range 4 {
			parents[r], rows[r] = readTrace(t, filepath.Join(dir, fmt.Sprintf("trace-%d.csv", r)))
			if len(rows[r]) != calls {
				t.Fatalf("rank %d: %d calls recorded, want %d", r, len(rows[r]), calls)
			}
			for i, row := range rows[r] {
				if err := traceRowOrdered(row); err != nil {
					t.Fatalf("rank %d call %d: %v (%v)", r, i, err, row)
				}
			}
		}
		for r, p := range parents {
			if p < 0 || p >= 4 {
				continue
			}
			for i, row := range rows[p] { // a parent sees its children in every call
				if row["kids"] == 0 {
					t.Fatalf("rank %d (parent of %d) call %d: no children seen", p, r, i)
				}
			}
		}
		roots := 0
		for r, p := range parents {
			switch {
			case p == -1:
				roots++
			case p < 0 || p >= 4 || p == r:
				t.Fatalf("rank %d: parent %d", r, p)
			}
		}
		if roots != 1 {
			t.Fatalf("parents %v: %d roots", parents, roots)
		}
	})
}

// readTrace parses one rank's trace file: its parent in the tree and its
// calls' stamps by point name.
func readTrace(t *testing.T, path string) (int, []map[string]int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		t.Fatalf("%s: empty", path)
	}
	head := strings.Fields(sc.Text())
	parent := -3
	for i := 1; i+1 < len(head); i++ {
		if head[i] == "parent" {
			parent, _ = strconv.Atoi(head[i+1])
		}
	}
	if !sc.Scan() {
		t.Fatalf("%s: no column line", path)
	}
	cols := strings.Split(sc.Text(), ",")
	var rows []map[string]int64
	for sc.Scan() {
		f := strings.Split(sc.Text(), ",")
		if len(f) != len(cols) {
			t.Fatalf("%s: %q: %d fields, want %d", path, sc.Text(), len(f), len(cols))
		}
		row := map[string]int64{}
		for i, v := range f[1:] {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			row[cols[i+1]] = n
		}
		rows = append(rows, row)
	}
	return parent, rows
}

// traceRowOrdered checks one call's stamps on one rank.
func traceRowOrdered(r map[string]int64) error {
	seq := []string{"enter", "plan", "up", "seen", "exit"}
	for i, k := range seq {
		if r[k] == 0 {
			return fmt.Errorf("no %q stamp", k)
		}
		if i > 0 && r[k] < r[seq[i-1]] {
			return fmt.Errorf("%q before %q", k, seq[i-1])
		}
	}
	if r["kids"] != 0 && (r["kids"] < r["plan"] || r["kids"] > r["up"] && r["out"] == 0) {
		return fmt.Errorf("children seen out of order")
	}
	if r["out"] != 0 && (r["kids"] == 0 || r["out"] < r["kids"] || r["out"] > r["seen"]) {
		return fmt.Errorf("root's result published out of order")
	}
	return nil
}
