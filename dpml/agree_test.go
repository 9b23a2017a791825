package dpml

import (
	"errors"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
)

// Settings that differ between ranks, or are bad on some ranks only. If
// New returned a config error before its first collective on the failing
// ranks only, the others would wait in MPI_Comm_dup forever (the job hangs
// until the harness's timeout), or the ranks would run different plans
// (wrong sums, SIGSEGV in libnbc, crashes).

// mixedCase sets env on every rank (low: ranks 0..size/2-1, high: the
// others; "" unsets) and expects New to fail alike on every rank.
type mixedCase struct {
	name      string
	env       map[string][2]string // variable -> {low ranks, high ranks}
	seg       [2]int               // WithSegmentBytes per half (0: none)
	want      []error              // sentinels the error must wrap
	mentions  []string             // the message must name these
	wantClean bool                 // New must succeed instead
	// noCall: after a clean New make no call (a timeout of 1 ms is a
	// valid setting, but on a loaded machine a call may outwait it).
	noCall bool
}

func runMixed(t *testing.T, w *mpi.Comm, cases []mixedCase) {
	t.Helper()
	half := 0
	if w.Rank() >= w.Size()/2 {
		half = 1
	}
	for _, tc := range cases {
		for name, vals := range tc.env {
			if vals[half] == "" {
				os.Unsetenv(name)
			} else {
				os.Setenv(name, vals[half])
			}
		}
		var opts []Option
		if s := tc.seg[half]; s > 0 {
			opts = append(opts, WithSegmentBytes(s))
		}
		c, err := New(w, opts...)
		for name := range tc.env {
			os.Unsetenv(name)
		}
		if tc.wantClean {
			if err != nil {
				t.Fatalf("%s: New: %v", tc.name, err)
			}
			buf := []float64{float64(w.Rank())}
			if tc.noCall {
				// Close is collective: no rank may skip ahead alone.
			} else if err := AllreduceInPlace(c, buf, mpi.OpSum); err != nil || buf[0] != float64(w.Size()*(w.Size()-1)/2) {
				t.Fatalf("%s: allreduce after New: %v, %v", tc.name, buf, err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err == nil {
			c.Close()
			t.Fatalf("%s: New succeeded on rank %d", tc.name, w.Rank())
		}
		for _, s := range tc.want {
			if !errors.Is(err, s) {
				t.Errorf("%s: rank %d: %v does not wrap %v", tc.name, w.Rank(), err, s)
			}
		}
		for _, m := range tc.mentions {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("%s: rank %d: %q does not mention %q", tc.name, w.Rank(), err, m)
			}
		}
		sameErrorEverywhere(t, w, tc.name, err)
		// The ranks left New together: the next collective works.
		if err := w.Barrier(); err != nil {
			t.Fatal(err)
		}
		if w.Rank() == 0 {
			t.Logf("%s: %v", tc.name, err)
		}
	}
}

// sharedTempDir is a temporary directory made by the parent test process
// and handed to the ranks (their own t.TempDir would differ from rank to
// rank, and paths that must be equal on all ranks would not be).
func sharedTempDir(t *testing.T) string {
	t.Helper()
	const env = "DPML_TEST_SHARED_DIR"
	if mpitest.InRank() {
		d := os.Getenv(env)
		if d == "" {
			t.Fatal(env + " not set by the parent")
		}
		return d
	}
	d := t.TempDir()
	t.Setenv(env, d)
	return d
}

// sameErrorEverywhere fails unless err's text is the same on every rank.
func sameErrorEverywhere(t *testing.T, w *mpi.Comm, what string, err error) {
	t.Helper()
	h := fnv.New64a()
	h.Write([]byte(err.Error()))
	all := make([]uint64, w.Size())
	if e := mpi.Allgather(w, []uint64{h.Sum64()}, all); e != nil {
		t.Fatal(e)
	}
	for r := range all {
		if all[r] != all[0] {
			t.Fatalf("%s: rank %d's error differs from rank 0's; this rank: %v", what, r, err)
		}
	}
}

// TestBadSettingOnSomeRanks: a bad value on some ranks
// only is the same clear error on every rank.
func TestBadSettingOnSomeRanks(t *testing.T) {
	mpitest.Run(t, 2, 2, func(t *testing.T, w *mpi.Comm) {
		runMixed(t, w, []mixedCase{
			{name: "leaders 1 vs abc", env: map[string][2]string{config.Leaders: {"1", "abc"}},
				want: []error{ErrConfig, ErrMismatch}, mentions: []string{`DPML_LEADERS differs between ranks: "1" on ranks 0-1, "abc" on ranks 2-3`, "ranks 2-3: ", `"abc" is not an integer`}},
			{name: "tuner bogus on half", env: map[string][2]string{config.Tuner: {"", "bogus"}},
				want: []error{ErrConfig, ErrMismatch}, mentions: []string{"DPML_TUNER", "bogus"}},
			{name: "pipeline out of range on half", env: map[string][2]string{config.Pipeline: {"", "100000"}},
				want: []error{ErrConfig}, mentions: []string{"DPML_PIPELINE", "out of range [1, 64]"}},
			{name: "verbose bad on half (per-rank setting)", env: map[string][2]string{config.Verbose: {"", "x"}},
				want: []error{ErrConfig}, mentions: []string{"ranks 2-3: ", "DPML_VERBOSE"}},
			{name: "timeout NaN on half", env: map[string][2]string{config.Timeout: {"NaN", ""}},
				want: []error{ErrConfig}, mentions: []string{"ranks 0-1: ", "DPML_TIMEOUT"}},
			{name: "segment bytes too small everywhere", env: map[string][2]string{config.SegmentBytes: {"1K", "1K"}},
				want: []error{ErrConfig}, mentions: []string{"ranks 0-3: ", "DPML_SEGMENT_BYTES"}},
			{name: "segment option too small on half", seg: [2]int{0, 100},
				want: []error{ErrConfig, ErrMismatch}, mentions: []string{"WithSegmentBytes"}},
			{name: "tuning file unreadable", env: map[string][2]string{config.TuningFile: {"/proc/self/mem", "/proc/self/mem"}},
				want: []error{ErrConfig}, mentions: []string{"/proc/self/mem"}},
			{name: "all good again", wantClean: true},
		})
	})
}

// TestSettingsDiffer: settings that must be equal on all
// ranks but differ are caught at New, named with the values seen.
func TestSettingsDiffer(t *testing.T) {
	dir := sharedTempDir(t)
	mpitest.Run(t, 2, 2, func(t *testing.T, w *mpi.Comm) {
		runMixed(t, w, []mixedCase{
			{name: "leaders 1 vs 2", env: map[string][2]string{config.Leaders: {"1", "2"}},
				want: []error{ErrMismatch}, mentions: []string{`DPML_LEADERS differs between ranks: "1" on ranks 0-1, "2" on ranks 2-3`}},
			{name: "pipeline 1 vs 4", env: map[string][2]string{config.Pipeline: {"1", "4"}},
				want: []error{ErrMismatch}, mentions: []string{`DPML_PIPELINE differs between ranks: "1" on ranks 0-1, "4" on ranks 2-3`}},
			{name: "segment bytes 4K vs 1M, static tuner",
				env:  map[string][2]string{config.SegmentBytes: {"4K", "1M"}, config.Tuner: {"static", "static"}},
				want: []error{ErrMismatch}, mentions: []string{`DPML_SEGMENT_BYTES differs between ranks: "4096" on ranks 0-1, "1048576" on ranks 2-3`}},
			{name: "same size spelled differently", env: map[string][2]string{config.SegmentBytes: {"64K", "65536"}}, wantClean: true},
			{name: "segment option differs", seg: [2]int{8 << 10, 16 << 10},
				want: []error{ErrMismatch}, mentions: []string{"segment bytes in effect"}},
			{name: "tuner static on half", env: map[string][2]string{config.Tuner: {"auto", "static"}},
				want: []error{ErrMismatch}, mentions: []string{"DPML_TUNER"}},
			{name: "tuning file on half", env: map[string][2]string{config.TuningFile: {"", filepath.Join(dir, "t.json")}},
				want: []error{ErrMismatch}, mentions: []string{"DPML_TUNING_FILE"}},
			{name: "intra shm vs cma", env: map[string][2]string{config.Intra: {"shm", "CMA"}},
				want: []error{ErrMismatch}, mentions: []string{`"shm" on ranks 0-1, "cma" on ranks 2-3`}},
			{name: "node split", env: map[string][2]string{config.NodeSplit: {"shared", "host"}},
				want: []error{ErrMismatch}, mentions: []string{"DPML_NODE_SPLIT"}},
			{name: "stream bytes", env: map[string][2]string{config.StreamBytes: {"off", "auto"}},
				want: []error{ErrMismatch}, mentions: []string{"DPML_STREAM_BYTES"}},
			{name: "check on half", env: map[string][2]string{config.Check: {"1", "0"}},
				want: []error{ErrMismatch}, mentions: []string{"DPML_CHECK"}},
			{name: "per-rank settings may differ", env: map[string][2]string{config.Spin: {"10", "20"}, config.Timeout: {"30s", "-1"}}, wantClean: true},
		})
	})
}

// TestLeadersClamped: DPML_LEADERS above the smallest ppn is clamped with a
// warning that says so, never silently.
func TestLeadersClamped(t *testing.T) {
	t.Setenv(config.Leaders, "999")
	mpitest.RunLayout(t, mpitest.Layout{PPN: []int{3, 2}}, func(t *testing.T, w *mpi.Comm) {
		c, err := New(w)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if len(c.warnings) != 1 || !strings.Contains(c.warnings[0], "DPML_LEADERS=999 is more than the 2 ranks of the smallest node: using 2 leaders") {
			t.Fatalf("warnings %q", c.warnings)
		}
		buf := make([]float64, 4096)
		if err := AllreduceInPlace(c, buf, mpi.OpSum); err != nil {
			t.Fatal(err)
		}
		if p := c.LastPlan(); p.Leaders != 2 {
			t.Fatalf("plan %+v", p)
		}
	})
}

// TestCheckCall: DPML_CHECK=1 turns what MPI leaves undefined (count,
// type, op, in-place use differing between ranks) and local argument
// errors into the same error on every rank; the communicator stays usable.
func TestCheckCall(t *testing.T) {
	t.Setenv(config.Check, "1")
	mpitest.Run(t, 2, 2, func(t *testing.T, w *mpi.Comm) {
		c, err := New(w, WithSegmentBytes(8<<10))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		hi := w.Rank() >= 2
		pick := func(lo, high int) int {
			if hi {
				return high
			}
			return lo
		}
		expectCheck := func(what string, err error, mentions ...string) {
			t.Helper()
			if err == nil || !errors.Is(err, ErrCheck) {
				t.Fatalf("%s: %v, want ErrCheck", what, err)
			}
			for _, m := range mentions {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("%s: %q does not mention %q", what, err, m)
				}
			}
			sameErrorEverywhere(t, w, what, err)
			if w.Rank() == 0 {
				t.Logf("%s: %v", what, err)
			}
		}
		n := pick(100, 200)
		expectCheck("count", Allreduce(c, make([]float64, n), make([]float64, n), mpi.OpSum),
			`count differs between ranks: "100" on ranks 0-1, "200" on ranks 2-3`)
		var err2 error
		if hi {
			err2 = Allreduce(c, make([]int32, 64), make([]int32, 64), mpi.OpSum)
		} else {
			err2 = Allreduce(c, make([]float32, 64), make([]float32, 64), mpi.OpSum)
		}
		expectCheck("type", err2, "element type differs between ranks")
		expectCheck("op", Allreduce(c, make([]int64, 8), make([]int64, 8), []mpi.Op{mpi.OpSum, mpi.OpMax}[pick(0, 1)]),
			`op differs between ranks`)
		buf := make([]float64, 16)
		if hi {
			err2 = AllreduceInPlace(c, buf, mpi.OpSum)
		} else {
			err2 = Allreduce(c, make([]float64, 16), buf, mpi.OpSum)
		}
		expectCheck("in place", err2, "in place differs")
		expectCheck("override", AllreduceWith(c, buf, make([]float64, 16), mpi.OpSum, Override{Leaders: pick(1, 2)}), "leaders differs")
		// A local argument error on one rank only.
		m := 16
		if w.Rank() == 1 {
			m = 15
		}
		expectCheck("local error", AllreduceWith(c, make([]float64, 16), make([]float64, m), mpi.OpSum, Override{}),
			"rank 1: dpml: allreduce: send has 16 elements, recv 15")
		// Still usable, results right.
		one := []float64{1}
		if err := AllreduceInPlace(c, one, mpi.OpSum); err != nil || one[0] != float64(w.Size()) {
			t.Fatalf("after the checks: %v, %v", one, err)
		}
	})
}

// TestTuningFileAsSetUp: saving keeps the file's mode (a 0644 table must
// not become 0600) and replaces a file with a second hard link by a new
// one, and loading refuses an empty file, trailing garbage (both were
// accepted and then overwritten), a FIFO (rank 0 blocked forever) and a
// directory, with the same error on every rank.
func TestTuningFileAsSetUp(t *testing.T) {
	dir := sharedTempDir(t)
	mpitest.Run(t, 1, 2, func(t *testing.T, w *mpi.Comm) {
		r0 := w.Rank() == 0
		barrier := func() {
			if err := w.Barrier(); err != nil {
				t.Fatal(err)
			}
		}
		cycle := func(file string) error {
			t.Setenv(config.TuningFile, file)
			c, err := New(w, WithSegmentBytes(64<<10))
			if err != nil {
				return err
			}
			buf := make([]float32, 1024)
			for range 20 {
				if err := AllreduceInPlace(c, buf, mpi.OpSum); err != nil {
					t.Fatal(err)
				}
			}
			err = c.Close()
			barrier() // rank 0 has saved
			return err
		}
		marker := func(path string) {
			if !r0 {
				return
			}
			tb := costmodel.DefaultTable()
			tb.Provenance.Command = "written-by-the-test"
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := tb.Write(f); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
		has := func(path, s string) bool {
			b, err := os.ReadFile(path)
			return err == nil && strings.Contains(string(b), s)
		}

		// A new file: 0666 less the umask, like any tool's.
		fresh := filepath.Join(dir, "fresh.json")
		if err := cycle(fresh); err != nil {
			t.Fatal(err)
		}
		if r0 {
			old := syscall.Umask(0)
			syscall.Umask(old)
			if st, err := os.Stat(fresh); err != nil || st.Mode().Perm() != 0o666&^os.FileMode(old) {
				t.Errorf("new table: %v, %v; want %v", st.Mode(), err, 0o666&^os.FileMode(old))
			}
		}
		// An existing 0644 table stays 0644 (and 0640 stays 0640).
		for _, mode := range []os.FileMode{0o644, 0o640} {
			p := filepath.Join(dir, "mode.json")
			marker(p)
			if r0 {
				os.Chmod(p, mode)
			}
			barrier()
			if err := cycle(p); err != nil {
				t.Fatal(err)
			}
			if r0 {
				if st, err := os.Stat(p); err != nil || st.Mode().Perm() != mode || has(p, "written-by-the-test") {
					t.Errorf("table of mode %v: after saving %v, %v (or not rewritten)", mode, st.Mode(), err)
				}
			}
		}
		// A file with a second hard link: replaced by a new file (the
		// table is never written into a file in place), so the other name
		// keeps the old table.
		hard, other := filepath.Join(dir, "hard.json"), filepath.Join(dir, "hard-other.json")
		marker(hard)
		if r0 {
			if err := os.Link(hard, other); err != nil {
				t.Fatal(err)
			}
		}
		barrier()
		if err := cycle(hard); err != nil {
			t.Fatal(err)
		}
		if r0 && (!has(other, "written-by-the-test") || has(hard, "written-by-the-test") || !has(hard, `"provenance"`)) {
			t.Error("the table was not saved as a new file beside the other hard link")
		}
		// Refused at load, on every rank alike, and left untouched.
		garbage := filepath.Join(dir, "garbage.json")
		empty := filepath.Join(dir, "empty.json")
		fifo := filepath.Join(dir, "fifo.json")
		sub := filepath.Join(dir, "subdir.json")
		if r0 {
			marker(garbage)
			f, _ := os.OpenFile(garbage, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("\n{}garbage")
			f.Close()
			os.WriteFile(empty, nil, 0o644)
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Fatal(err)
			}
			os.Mkdir(sub, 0o755)
		}
		barrier()
		for _, tc := range []struct{ path, want string }{
			{garbage, "trailing data after the JSON tuning table"},
			{empty, "is empty"},
			{fifo, "is a FIFO, not a regular file"},
			{sub, "is a directory, not a regular file"},
		} {
			err := cycle(tc.path)
			if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s: %v; want ErrConfig saying %q", tc.path, err, tc.want)
			}
			sameErrorEverywhere(t, w, tc.path, err)
		}
		if r0 {
			if !has(garbage, "{}garbage") {
				t.Error("the table with trailing garbage was overwritten")
			}
			if st, err := os.Stat(empty); err != nil || st.Size() != 0 {
				t.Error("the empty table was overwritten")
			}
		}
	})
}
