package shm

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// testPrefix starts every segment name the tests create in DefaultDir, so
// that TestMain can check none is left behind.
var testPrefix = fmt.Sprintf("dpmlshmtest%d", os.Getpid())

// childEnv, when set, makes the test binary act as the child of
// TestCrossProcess (see crossChild).
const childEnv = "DPML_SHM_TEST_CHILD"

func TestMain(m *testing.M) {
	code := m.Run()
	if os.Getenv(childEnv) == "" {
		if left := leftovers(DefaultDir, testPrefix); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: segments left in %s: %s\n", DefaultDir, strings.Join(left, " "))
			_, _ = Sweep(testPrefix)
			code = 1
		}
	}
	os.Exit(code)
}

func leftovers(dir, prefix string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return []string{"(cannot read " + dir + ": " + err.Error() + ")"}
	}
	var left []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			left = append(left, e.Name())
		}
	}
	return left
}

// newName returns a fresh test segment name.
func newName(t *testing.T) string {
	t.Helper()
	n, err := Name(testPrefix)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// mustCreate creates a segment in DefaultDir and closes it at test end.
func mustCreate(t *testing.T, size int) *Segment {
	t.Helper()
	s, err := Create(newName(t), size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
