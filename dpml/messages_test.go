package dpml

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
)

// TestSetupMessages: setup errors print their numbers as numbers (a %c
// verb printed an integer as a character: "DPML_TREE_RADIX=\x00: want
// 1..@", "segment bytes d", a garbled segment size) and say what is wrong,
// the same on every rank; a positive DPML_TIMEOUT too short for any wait
// is refused at New.
func TestSetupMessages(t *testing.T) {
	segSize, _ := segmentLayout(2, 64<<10)
	mpitest.Run(t, 2, 2, func(t *testing.T, w *mpi.Comm) {
		runMixed(t, w, []mixedCase{
			{name: "tree radix 0", env: map[string][2]string{config.TreeRadix: {"0", "0"}},
				want: []error{ErrConfig}, mentions: []string{"DPML_TREE_RADIX=0: want 1..64"}},
			{name: "tree radix 65 on half", env: map[string][2]string{config.TreeRadix: {"", "65"}},
				want: []error{ErrConfig}, mentions: []string{"DPML_TREE_RADIX=65: want 1..64"}},
			{name: "segment option 100", seg: [2]int{100, 100},
				want: []error{ErrConfig}, mentions: []string{"segment bytes 100 (DPML_SEGMENT_BYTES or WithSegmentBytes): out of range [4K, 256M]"}},
			{name: "segment directory missing", env: map[string][2]string{config.ShmDir: {"/nonexistent/dpml", "/nonexistent/dpml"}}, seg: [2]int{64 << 10, 64 << 10},
				want: []error{ErrSetup}, mentions: []string{fmt.Sprintf("create node segment of %d bytes", segSize), "/nonexistent/dpml"}},
			{name: "timeout 1e-9", env: map[string][2]string{config.Timeout: {"1e-9", "1e-9"}},
				want: []error{ErrConfig}, mentions: []string{"timeout 1ns (DPML_TIMEOUT or WithTimeout): below the 1ms minimum"}},
			{name: "timeout 999us on half", env: map[string][2]string{config.Timeout: {"", "999us"}},
				want: []error{ErrConfig}, mentions: []string{"ranks 2-3: ", "timeout 999µs (DPML_TIMEOUT or WithTimeout): below the 1ms minimum"}},
			{name: "timeout 1ms, forever and default", env: map[string][2]string{config.Timeout: {"1ms", "-1"}}, wantClean: true, noCall: true},
			{name: "timeout 0 (the default)", env: map[string][2]string{config.Timeout: {"0", "0"}}, wantClean: true},
		})
	})
}

// TestUnknownSettingNamed: a misspelt DPML_* name is named once, on rank
// 0, with the nearest setting (New's warning; libdpml.so has its own).
// Mutation: the warning loop in New removed -> no line on rank 0.
func TestUnknownSettingNamed(t *testing.T) {
	mpitest.Run(t, 1, 2, func(t *testing.T, w *mpi.Comm) {
		t.Setenv("DPML_LEADER", "2")
		r, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		stderr := os.Stderr
		os.Stderr = pw
		c, err := New(w)
		os.Stderr = stderr
		pw.Close()
		out, _ := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		want := 0
		if w.Rank() == 0 {
			want = 1
		}
		if n := strings.Count(string(out), "dpml: warning: DPML_LEADER is not a DPML setting (nearest: DPML_LEADERS)"); n != want {
			t.Errorf("rank %d: the warning appears %d times, want %d:\n%s", w.Rank(), n, want, out)
		}
	})
}
