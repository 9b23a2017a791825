package mpi_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/dpmlgo/dpml/mpi"
)

const envInitLevelChild = "DPML_TEST_INITLEVEL_CHILD"

// Init's level per library (package doc, "Thread level"), named from the
// library's own version string rather than from the package's constant:
// Open MPI locks at every level above single, MPICH only at multiple.
func wantInitLevel(version string) (mpi.ThreadLevel, bool) {
	switch {
	case strings.Contains(version, "Open MPI"):
		return mpi.ThreadSingle, true
	case strings.Contains(version, "MPICH"):
		return mpi.ThreadFunneled, true
	}
	return 0, false
}

// TestInitLevel runs a fresh singleton process (this test binary again)
// that calls Init and reports what the library says it provides; the other
// tests of this process initialize at ThreadSerialized first.
func TestInitLevel(t *testing.T) {
	if os.Getenv(envInitLevelChild) == "1" {
		p, err := mpi.Init()
		if err != nil {
			t.Fatal(err)
		}
		q, err := mpi.QueryThread()
		if err != nil {
			t.Fatal(err)
		}
		if p != q {
			t.Fatalf("Init returned %v, MPI_Query_thread says %v", p, q)
		}
		want, ok := wantInitLevel(mpi.LibraryVersion())
		if !ok {
			t.Skipf("unknown library %q", mpi.LibraryVersion())
		}
		if q != want {
			t.Fatalf("Init: library provides %v, want %v (%s)", q, want, firstLine(mpi.LibraryVersion()))
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestInitLevel$", "-test.v")
	cmd.Env = append(os.Environ(), envInitLevelChild+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestInitLevel") {
		t.Fatalf("child did not pass:\n%s", out)
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
