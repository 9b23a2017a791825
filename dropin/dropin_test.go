package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/internal/tools/launch"
)

// The test binary doubles as dpmlrun (and its launch agent), as in
// cmd/dpmlrun's tests.
func TestMain(m *testing.M) {
	launch.Dispatch(os.Args)
	// The tests' programs make few, small calls per communicator: set
	// up at the first (TestSettings/setup-after tests the deferral).
	if _, ok := os.LookupEnv("DPML_SETUP_AFTER"); !ok {
		os.Setenv("DPML_SETUP_AFTER", "0")
	}
	// No machine profile: one test's would change the next one's start.
	if _, ok := os.LookupEnv("DPML_PROFILE"); !ok {
		os.Setenv("DPML_PROFILE", "off")
	}
	code := m.Run()
	if work.dir != "" {
		os.RemoveAll(work.dir)
	}
	os.Exit(code)
}

// flavor is the MPI under test: the one this test binary links (go test
// -tags mpich ./dropin builds and tests the MPICH-ABI library with MPICH's
// compilers and launcher).
var flavor = launch.BuildFlavor

// work holds what the tests build once: the library and the test programs.
var work struct {
	once  sync.Once
	err   error
	dir   string
	lib   string
	progs map[string]string // name -> path
	skip  string
	fskip string // why the Fortran programs are missing
}

// setup builds libdpml.so (go build -buildmode=c-shared) and the C and
// Fortran test programs (mpicc, mpif90) into a temporary directory.
func setup(t *testing.T) {
	t.Helper()
	work.once.Do(func() {
		if work.skip = launch.MissingForTests(flavor); work.skip != "" {
			return
		}
		cc, fc := launch.Compilers(flavor)
		dir, err := os.MkdirTemp("", "dpml-dropin-test-")
		if err != nil {
			work.err = err
			return
		}
		work.dir = dir
		work.progs = map[string]string{}
		work.lib = filepath.Join(dir, "libdpml.so")
		gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(gobin); err != nil {
			gobin = "go"
		}
		start := time.Now()
		// The library of the ABI this test binary links (-tags mpich).
		buildArgs := []string{"build", "-buildmode=c-shared", "-o", work.lib}
		if flavor == launch.MPICH {
			buildArgs = append(buildArgs, "-tags", "mpich")
		}
		cmd := exec.Command(gobin, append(buildArgs, ".")...)
		if out, err := cmd.CombinedOutput(); err != nil {
			work.err = fmt.Errorf("go build -buildmode=c-shared: %v\n%s", err, out)
			return
		}
		fmt.Fprintf(os.Stderr, "dropin test: built libdpml.so in %v\n", time.Since(start).Round(time.Millisecond))
		build := func(name string, argv ...string) error {
			out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, out)
			}
			work.progs[name] = argv[slices.Index(argv, "-o")+1]
			return nil
		}
		out := func(name string) string { return filepath.Join(dir, name) }
		for _, b := range [][]string{
			{"allreduce", cc, "-O1", "-o", out("allreduce"), "testdata/allreduce.c"},
			{"bench", cc, "-O1", "-o", out("bench"), "testdata/bench.c"},
			// The extension entry points, found with dlsym (dpmlx.h here).
			{"dpmlx", cc, "-O1", "-I.", "-o", out("dpmlx"), "testdata/dpmlx.c", "-ldl"},
			// The same program linked with -ldpml instead of preloaded.
			{"allreduce-linked", cc, "-O1", "-o", out("allreduce-linked"), "testdata/allreduce.c",
				"-L" + dir, "-ldpml", "-Wl,-rpath," + dir},
		} {
			if work.err = build(b[0], b[1:]...); work.err != nil {
				return
			}
		}
		if _, err := exec.LookPath(fc); err != nil {
			work.fskip = "no " + fc + " (make deps)"
			return
		}
		if _, err := exec.LookPath("gfortran"); err != nil {
			work.fskip = "no gfortran (make deps)"
			return
		}
		for _, b := range [][]string{
			// mpif.h declares no interfaces: gfortran >= 10 needs
			// -fallow-argument-mismatch for the choice buffers.
			{"f-mpifh", fc, "-O1", "-fallow-argument-mismatch", "-o", out("f-mpifh"), "testdata/allreduce.F90"},
			{"f-usempi", fc, "-O1", "-DUSEMPI", "-o", out("f-usempi"), "testdata/allreduce.F90"},
			{"f-f08", fc, "-O1", "-DF08", "-o", out("f-f08"), "testdata/allreduce.F90"},
		} {
			if work.err = build(b[0], b[1:]...); work.err != nil {
				return
			}
		}
	})
	if work.skip != "" {
		t.Skip(work.skip)
	}
	if work.err != nil {
		t.Fatal(work.err)
	}
}

type result struct {
	stdout, stderr string
	out            string // the ranks' -o files, concatenated
	code           int
	elapsed        time.Duration
}

// runTimeout bounds one job; a hang fails the test instead of go test's
// timeout.
const runTimeout = 3 * time.Minute

// outDir in a program's arguments stands for a fresh directory where each
// rank writes its result lines (rank-N.txt): mpirun forwards the ranks'
// stdout in chunks that can split lines and interleave them.
const outDir = "{out}"

// dpmlrun runs prog on 2 fake nodes x 2 ranks, with libdpml.so preloaded
// when preload is set.
func dpmlrun(t *testing.T, preload bool, env []string, prog string, args ...string) result {
	t.Helper()
	return dpmlrunPPN(t, "2,2", preload, env, prog, args...)
}

// dpmlrunPPN is dpmlrun on the fake nodes of ppn ("3,2": 3 ranks on node1,
// 2 on node2).
func dpmlrunPPN(t *testing.T, ppn string, preload bool, env []string, prog string, args ...string) result {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	a := []string{launch.MainArg, "-mpi", string(flavor), "-ppn", ppn}
	if preload {
		a = append(a, "-preload", work.lib)
	}
	a = append(a, "--", prog)
	// DPML_VERBOSE=1 for the counters, unless env says otherwise.
	return run(t, append([]string{"DPML_VERBOSE=1"}, env...), exe, append(a, args...)...)
}

// run runs a command (replacing outDir in args) and collects its output.
func run(t *testing.T, env []string, name string, args ...string) result {
	t.Helper()
	dir := t.TempDir()
	args = slices.Clone(args)
	for i, a := range args {
		if a == outDir {
			args[i] = dir
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: o.String(), stderr: e.String(), code: cmd.ProcessState.ExitCode(), elapsed: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("%s %s: no exit after %v\n%s%s", name, strings.Join(args, " "), runTimeout, r.stdout, r.stderr)
	}
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "rank-*.txt"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r.out += string(b)
	}
	return r
}

// cases returns the sorted "case" lines of a run: the program's results.
// (Sorted, so that the ranks' files compare whatever their order.)
func cases(out string) []string { return sortedLines(out, "case ") }

// sortedLines returns the lines of out that start with prefix, sorted.
func sortedLines(out, prefix string) []string {
	var c []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			c = append(c, l)
		}
	}
	slices.Sort(c)
	return c
}

func failures(out string) []string {
	var f []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "FAIL") {
			f = append(f, l)
		}
	}
	return f
}

// counters is one rank's summary line printed at MPI_Finalize under
// DPML_VERBOSE=1.
type counters struct {
	routed, passed, setup, released, fused, blocks int
	sampled, parked, agreed                        int
	reasons                                        map[string]int
}

var summaryRE = regexp.MustCompile(`libdpml: rank (\d+): routed (\d+) passed (\d+) \(([^)]*)\) comms set up (\d+) released (\d+) fused (\d+) blocks (\d+) sampled (\d+) parked (\d+) agreed (\d+)`)

func summaries(t *testing.T, stderr string) map[int]counters {
	t.Helper()
	m := map[int]counters{}
	for _, s := range summaryRE.FindAllStringSubmatch(stderr, -1) {
		atoi := func(x string) int {
			n, err := strconv.Atoi(x)
			if err != nil {
				t.Fatalf("bad summary %q", s[0])
			}
			return n
		}
		c := counters{routed: atoi(s[2]), passed: atoi(s[3]), setup: atoi(s[5]), released: atoi(s[6]), fused: atoi(s[7]), blocks: atoi(s[8]), sampled: atoi(s[9]), parked: atoi(s[10]), agreed: atoi(s[11]), reasons: map[string]int{}}
		f := strings.Fields(s[4])
		for i := 0; i+1 < len(f); i += 2 {
			c.reasons[f[i]] = atoi(f[i+1])
		}
		m[atoi(s[1])] = c
	}
	return m
}

// compare runs prog with and without the library and checks: both succeed,
// no rank reports a wrong result, the results are identical, every rank
// routed at least minRouted calls to the engine (the same number on every
// rank), every engine built was released, and no DPML segment was left in
// /dev/shm (the programs' "shm" part). It returns the counters of the run
// with the library.
func compare(t *testing.T, env []string, minRouted int, prog string, args ...string) map[int]counters {
	t.Helper()
	return compareOn(t, "2,2", env, minRouted, prog, args...)
}

// compareOn is compare on the fake nodes of ppn.
func compareOn(t *testing.T, ppn string, env []string, minRouted int, prog string, args ...string) map[int]counters {
	t.Helper()
	m, _ := compareRun(t, ppn, env, minRouted, prog, args...)
	return m
}

// compareRun is compareOn, also returning the run with the library.
func compareRun(t *testing.T, ppn string, env []string, minRouted int, prog string, args ...string) (map[int]counters, result) {
	t.Helper()
	native := dpmlrunPPN(t, ppn, false, env, prog, args...)
	pre := dpmlrunPPN(t, ppn, true, env, prog, args...)
	t.Logf("%s %s: %v without the library, %v with it", filepath.Base(prog), strings.Join(args, " "),
		native.elapsed.Round(time.Millisecond), pre.elapsed.Round(time.Millisecond))
	for _, r := range []struct {
		name string
		r    result
	}{{"without libdpml.so", native}, {"with libdpml.so", pre}} {
		if r.r.code != 0 {
			t.Fatalf("%s: exit code %d\n%s\n%s\n%s", r.name, r.r.code, r.r.out, r.r.stdout, r.r.stderr)
		}
		if f := failures(r.r.out); len(f) > 0 {
			t.Errorf("%s: %d wrong results:\n%s", r.name, len(f), strings.Join(f[:min(len(f), 20)], "\n"))
		}
		for _, l := range strings.Split(r.r.out, "\n") {
			if strings.HasPrefix(l, "shm ") && !strings.HasSuffix(l, " entries 0") {
				t.Errorf("%s: DPML segment left in /dev/shm: %s", r.name, l)
			}
		}
	}
	a, b := cases(native.out), cases(pre.out)
	if len(a) == 0 {
		t.Fatalf("no results written:\n%s\n%s", native.stdout, native.stderr)
	}
	if !slices.Equal(a, b) {
		t.Errorf("results differ with the library (%d vs %d lines):\n%s", len(a), len(b), firstDiff(a, b))
	}
	if m := summaries(t, native.stderr); len(m) != 0 {
		t.Errorf("library counters printed without the library:\n%s", native.stderr)
	}
	m := summaries(t, pre.stderr)
	ranks, _ := launch.ParsePPN(0, ppn)
	if len(m) != launch.Sum(ranks) {
		t.Fatalf("%d ranks printed the library's counters, want %d:\n%s", len(m), launch.Sum(ranks), pre.stderr)
	}
	for r, c := range m {
		if c.routed < minRouted || c.routed != m[0].routed {
			t.Errorf("rank %d routed %d calls to DPML, want >= %d and equal on all ranks (rank 0: %d)", r, c.routed, minRouted, m[0].routed)
		}
		if c.setup != c.released {
			t.Errorf("rank %d: %d engines set up, %d released", r, c.setup, c.released)
		}
	}
	t.Logf("rank 0 counters: %+v", m[0])
	return m, pre
}

func firstDiff(a, b []string) string {
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("first difference at line %d:\n  without: %s\n  with:    %s", i, x, y)
		}
	}
	return ""
}

// TestC: every predefined type and op (plain and in place, 1 to 1000
// elements), multi-segment messages, the special cases (count 0,
// MPI_COMM_SELF, MAXLOC, user op, derived type, intercommunicator) and
// 1,000 split and duplicated communicators created, used and freed.
func TestC(t *testing.T) {
	setup(t)
	m := compare(t, nil, 2000, work.progs["allreduce"], "-o", outDir, "types", "special", "large", "loop=1000", "shm")
	// World's engine, set up in MPI_Init, and one per split (666): the
	// loop's 334 duplicates of MPI_COMM_WORLD run on world's engine.
	// Mutation: no sharing (congruent_to_world always false) -> 1001.
	if c := m[0]; c.setup != 667 {
		t.Errorf("%d engines set up, want 667 (world's and the loop's 666 splits)", c.setup)
	}
	for _, reason := range []string{"type", "op", "count", "communicator"} {
		if m[0].reasons[reason] == 0 {
			t.Errorf("no call passed through for reason %q: %+v", reason, m[0])
		}
	}
}

// TestFusedSameBits: the C layer's calls (DPML_FUSED=true, the default)
// and the Go path's (DPML_FUSED=false) give the same bits for every type
// and op, with extreme values (the largest and smallest integers, unsigned
// values with the top bit set, the largest and the subnormal floats), and
// both give what the type's arithmetic gives, which is the check: the MPI
// library itself is not the reference (Open MPI 4.1 compares
// MPI_UNSIGNED_LONG as signed under MPI_MAX). On two nodes the C layer's
// tree root makes the inter-node allreduce itself; it passed the caller's
// datatype where the Go path passes the kind's (MPI_UINT64_T), so
// MPI_UNSIGNED_LONG's MAX of 2^64-1 and 1 came back 1.
func TestFusedSameBits(t *testing.T) {
	setup(t)
	for _, tc := range []struct {
		name string
		ppn  string
		env  []string
	}{
		{"tree-2x2", "2,2", []string{"DPML_INTRA=tree", "DPML_LEADERS=1"}},
		{"static-2x2", "2,2", []string{"DPML_TUNER=static"}},
		{"tree-1x4", "4", []string{"DPML_INTRA=tree", "DPML_LEADERS=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lines [2][]string
			for i, fused := range []string{"true", "false"} {
				r := dpmlrunPPN(t, tc.ppn, true, append([]string{"DPML_FUSED=" + fused}, tc.env...), work.progs["allreduce"], "-o", outDir, "extremes=4")
				if f := failures(r.out); len(f) > 0 {
					t.Errorf("DPML_FUSED=%s: %d results differ from the arithmetic:\n%s", fused, len(f), strings.Join(f[:min(len(f), 20)], "\n"))
				} else if r.code != 0 {
					t.Fatalf("DPML_FUSED=%s: exit code %d\n%s\n%s", fused, r.code, r.stdout, r.stderr)
				}
				lines[i] = cases(r.out)
				m := summaries(t, r.stderr)
				if fused == "true" && m[0].fused == 0 {
					t.Errorf("DPML_FUSED=true: no call ran in the C layer: %+v", m[0])
				}
				if fused == "false" && m[0].fused != 0 {
					t.Errorf("DPML_FUSED=false: %d calls ran in the C layer", m[0].fused)
				}
				t.Logf("DPML_FUSED=%s: rank 0 counters %+v", fused, m[0])
			}
			if len(lines[0]) == 0 || !slices.Equal(lines[0], lines[1]) {
				t.Errorf("the C layer and the Go path differ (%d vs %d lines):\n%s", len(lines[0]), len(lines[1]), firstDiff(lines[0], lines[1]))
			}
		})
	}
}

// TestRepeat: back-to-back calls of one size, on one node and on two, the
// calls the engine clears for the C layer to run without Go once their
// plan is fixed (DPML_INTRA=tree with one leader here; a settled tuner's
// keys between its samples): the fused tree over the lines' payload (1 to
// 14 elements) and the slots (100), complex products included (the C
// folds compute them as Go does). On two nodes the C layer makes the tree
// root's inter-node allreduce itself. Each call's inputs are new (the
// program's ranks count on from call to call), so a stale or a partial
// result fails. With the tuner (auto) the results must be right whatever
// it chose, and its confirmation's blocks run in the C layer and reach the
// learner as real durations.
//
// Mutation checks: the C layer copying its own input for a cleared call
// instead of running it made the run with the library fail ("wrong
// elements"), and so did the root skipping its inter-node allreduce on two
// nodes (ppn=2,2); without the clearance the counter check fails, and
// without the confirmation blocks' clearance (grantFused) the blocks'; the
// C layer not stamping a block's exit fails the full samples' check.
func TestRepeat(t *testing.T) {
	setup(t)
	const repeats, cases = 1500, 6
	for _, ppn := range []string{"4", "2,2"} {
		t.Run("ppn="+ppn, func(t *testing.T) {
			m := compareOn(t, ppn, []string{"DPML_INTRA=tree", "DPML_LEADERS=1"}, cases*repeats,
				work.progs["allreduce"], "-o", outDir, "repeat=1500")
			for rank, c := range m {
				// Each case's first call runs in Go, which clears the
				// rest, but for the first case's (a double sum the
				// library readies before the program's first call: a
				// parked clearance runs all of its calls).
				if want := cases*(repeats-1) + 1; c.fused != want || c.parked != repeats {
					t.Errorf("rank %d ran %d of %d routed calls in the C layer, %d of them parked, want %d and %d", rank, c.fused, c.routed, c.parked, want, repeats)
				}
			}
			// Tuned, with the scheduled confirmation early enough to run:
			// its blocks run in C, timed (dpml/fused.go, grantFused).
			table := filepath.Join(t.TempDir(), "table.json")
			m, _ = compareRun(t, ppn, []string{"DPML_TUNER_CONFIRM=100", "DPML_TUNER_BUDGET=-1", "DPML_TUNING_FILE=" + table}, cases*repeats, work.progs["allreduce"], "-o", outDir, "repeat=1500")
			for rank, c := range m {
				if c.blocks == 0 || c.blocks != m[0].blocks || c.blocks > c.fused {
					t.Errorf("rank %d ran %d calls of confirmation blocks in the C layer (rank 0: %d; fused calls %d), want > 0, equal on all ranks", rank, c.blocks, m[0].blocks, c.fused)
				}
			}
			// The blocks' times reached the learner: every arm's estimate
			// in the tuning table saved at MPI_Finalize is a real duration,
			// whatever its size, and some key has a tree arm with a
			// confirmation's 8 samples, which only the C layer's blocks
			// give it there (a block timed wrong is no sample: costmodel
			// drops negative costs).
			f, err := os.Open(table)
			if err != nil {
				t.Fatal(err)
			}
			tb, err := costmodel.ReadTable(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			full := 0
			for _, e := range tb.Entries {
				for _, a := range e.Measured {
					if !(a.Estimate > 0) || math.IsInf(a.Estimate, 0) {
						t.Errorf("key %s/%s/2^%d: the tuner's estimate of %+v is %g s, want a positive duration", e.Elem, e.Op, e.Log2Bytes, a, a.Estimate)
					}
					if a.Samples == 8 && a.Intra == "tree" {
						full++
					}
				}
			}
			if full == 0 {
				t.Errorf("no tree arm the C layer runs has a confirmation's 8 samples in the saved tuning table %+v", tb.Entries)
			}
			// Settled keys' stride samples run and are timed in C too,
			// several per entry into Go (grantExact, KeyState.Samples).
			for rank, c := range m {
				if c.sampled == 0 || c.sampled != m[0].sampled || c.blocks+c.sampled > c.fused {
					t.Errorf("rank %d ran %d stride samples in the C layer (rank 0: %d; fused calls %d, blocks %d), want > 0, equal on all ranks", rank, c.sampled, m[0].sampled, c.fused, c.blocks)
				}
			}
			t.Logf("tuned: rank 0 ran %d of %d routed calls in the C layer, %d of them in confirmation blocks, %d stride samples", m[0].fused, m[0].routed, m[0].blocks, m[0].sampled)
		})
	}
}

// TestParked: a program that alternates between sizes from its first
// call (testdata/allreduce.c, part_alternate) runs them in the C layer
// under parked clearances (dpml/parked.go), with results right and the
// same calls run there on every rank. With DPML_TUNER=model every key is
// settled from its first call: the float and double sums, which the
// library readies before the program's first call, never enter Go, and
// the int max enters it once, after which its exact clearance serves it.
// With the learner (auto) the counts are only the same on every rank.
//
// Mutation checks: parkReady not run (no clearance before the first
// call) fails the model counts; takeBack not crediting the parked calls
// fails TestTunerCountsCCalls's count of calls with parked calls in it
// and here the learner's stride; the C layer running a parked call at a
// stale generation (SetGen left out) fails the results ("wrong
// elements").
func TestParked(t *testing.T) {
	setup(t)
	const rounds, cases = 500, 6
	for _, ppn := range []string{"4", "2,2"} {
		t.Run("ppn="+ppn, func(t *testing.T) {
			m := compareOn(t, ppn, []string{"DPML_TUNER=model"}, rounds*cases, work.progs["allreduce"], "-o", outDir, fmt.Sprintf("alternate=%d", rounds))
			for rank, c := range m {
				if c.fused != c.routed-1 || c.parked != c.routed-rounds {
					t.Errorf("rank %d ran %d of %d routed calls in the C layer, %d of them parked; want %d and %d", rank, c.fused, c.routed, c.parked, c.routed-1, c.routed-rounds)
				}
			}
			m = compareOn(t, ppn, nil, rounds*cases, work.progs["allreduce"], "-o", outDir, fmt.Sprintf("alternate=%d", rounds))
			for rank, c := range m {
				if c.parked == 0 || c.parked != m[0].parked || c.fused != m[0].fused {
					t.Errorf("rank %d ran %d calls in the C layer, %d parked (rank 0: %d, %d), want some parked, the same on every rank", rank, c.fused, c.parked, m[0].fused, m[0].parked)
				}
			}
			t.Logf("auto: rank 0 ran %d of %d routed calls in the C layer, %d of them parked", m[0].fused, m[0].routed, m[0].parked)
		})
	}
}

// TestTunerCountsCCalls: the tuner's per-size lines (DPML_VERBOSE=1,
// printed when the engine closes) count every routed call, the ones libdpml.so's C
// layer ran after the engine's last call included: a program whose last
// calls are one settled key's, run in C. Mutation check: without Close's
// takeBack the lines count only the calls up to the engine's last and
// the test fails.
func TestTunerCountsCCalls(t *testing.T) {
	setup(t)
	// DPML_TUNER=model: the tuner decides and counts every call but
	// learns nothing, so its plan is cleared for the C layer from the
	// first call whatever the machine's load (a learner may still be
	// exploring after 3000 calls on an oversubscribed machine).
	m, pre := compareRun(t, "4", []string{"DPML_TUNER=model"}, 3000, work.progs["allreduce"], "-o", outDir, "repeat1=3000")
	if m[0].fused == 0 {
		t.Fatalf("no call ran in the C layer: %+v", m[0])
	}
	// The per-size lines of DPML_VERBOSE=1 at Close: "dpml:   8-16
	// float64/arith 1x4: plan ..., 3000 calls, ...".
	sum := 0
	for _, c := range regexp.MustCompile(`(?m)^dpml:   \S+ \S+ \S+: plan .*?, (\d+) calls,`).FindAllStringSubmatch(pre.stderr, -1) {
		n, err := strconv.Atoi(c[1])
		if err != nil {
			t.Fatal(err)
		}
		sum += n
	}
	if sum != m[0].routed {
		t.Errorf("the tuner's per-size lines count %d calls, rank 0 routed %d:\n%s", sum, m[0].routed, pre.stderr)
	}
}

// TestThreads: two threads reduce on two communicators at once under
// MPI_THREAD_MULTIPLE.
func TestThreads(t *testing.T) {
	setup(t)
	compare(t, nil, 400, work.progs["allreduce"], "-mt", "-o", outDir, "threads", "special", "shm")
}

// TestLinked: the program linked with -ldpml instead of preloaded.
func TestLinked(t *testing.T) {
	setup(t)
	r := dpmlrun(t, false, nil, work.progs["allreduce-linked"], "-o", outDir, "special", "types", "shm")
	if r.code != 0 || len(failures(r.out)) > 0 || !strings.Contains(r.out, "case world") {
		t.Fatalf("exit code %d\n%s\n%s\n%s", r.code, r.out, r.stdout, r.stderr)
	}
	m := summaries(t, r.stderr)
	if len(m) != 4 || m[0].routed == 0 {
		t.Fatalf("library not used when linked: %+v\n%s", m, r.stderr)
	}
}

// TestOverlap: overlapping send and receive buffers without MPI_IN_PLACE
// (erroneous MPI, so there is no native run to compare with) reach the engine
// as a copy of the send data.
func TestOverlap(t *testing.T) {
	setup(t)
	r := dpmlrun(t, true, []string{"DPML_VERBOSE=2"}, work.progs["allreduce"], "-o", outDir, "overlap")
	if r.code != 0 || len(failures(r.out)) > 0 {
		t.Fatalf("exit code %d\n%s\n%s\n%s", r.code, r.out, r.stdout, r.stderr)
	}
	if n := strings.Count(r.stderr, "-> dpml"); n != 4 {
		t.Errorf("%d routed calls, want 4 (one per rank)\n%s", n, r.stderr)
	}
}

// TestSettings: DPML_DISABLE, DPML_MIN_BYTES and DPML_DROPIN_FROM_CALL change
// the routing, never the results.
func TestSettings(t *testing.T) {
	setup(t)
	prog := work.progs["allreduce"]
	t.Run("disable", func(t *testing.T) {
		m := compare(t, []string{"DPML_DISABLE=1"}, 0, prog, "-o", outDir, "special", "loop=10")
		if m[0].routed != 0 || m[0].setup != 0 || m[0].reasons["disabled"] == 0 {
			t.Errorf("DPML_DISABLE=1 still routed: %+v", m[0])
		}
	})
	t.Run("min-bytes", func(t *testing.T) {
		// Only the large part's messages (>= 1.2 MB) reach the engine.
		m := compare(t, []string{"DPML_MIN_BYTES=1M"}, 1, prog, "-o", outDir, "special", "large", "loop=10")
		if m[0].routed != 16 || m[0].reasons["small"] == 0 {
			t.Errorf("DPML_MIN_BYTES=1M: want the 16 large calls routed: %+v", m[0])
		}
	})
	t.Run("from-call", func(t *testing.T) {
		// The loop makes 2 calls per communicator: the first passes.
		m := compare(t, []string{"DPML_DROPIN_FROM_CALL=2"}, 30, prog, "-o", outDir, "loop=30")
		if m[0].reasons["warm-up"] != 30 || m[0].setup != 30 {
			t.Errorf("DPML_DROPIN_FROM_CALL=2: want 30 warm-up calls and 30 engines: %+v", m[0])
		}
	})
	t.Run("setup-after", func(t *testing.T) {
		// The loop's 2 calls per communicator are small: priced at
		// about 5 us each, far below 100 ms, they all pass through and
		// no engine is built; with 6 us the second call of each
		// communicator sets it up (priced 5 us + bytes, > 6 us after
		// two calls, < 6 us after one).
		// MPI_COMM_WORLD is deferred too: only the loop's
		// communicators are counted.
		m := compare(t, []string{"DPML_SETUP_AFTER=100ms", "DPML_SETUP_WORLD=defer"}, 0, prog, "-o", outDir, "loop=30")
		if m[0].setup != 0 || m[0].routed != 0 || m[0].reasons["warm-up"] != 60 {
			t.Errorf("DPML_SETUP_AFTER=100ms: want 60 warm-up calls and no engine: %+v", m[0])
		}
		m = compare(t, []string{"DPML_SETUP_AFTER=6us", "DPML_SETUP_WORLD=defer"}, 30, prog, "-o", outDir, "loop=30")
		if m[0].reasons["warm-up"] != 30 || m[0].setup != 30 {
			t.Errorf("DPML_SETUP_AFTER=6us: want 30 warm-up calls and 30 engines: %+v", m[0])
		}
	})
	t.Run("agree-once", func(t *testing.T) {
		// loop=30 makes 30 communicators, the first a duplicate of
		// MPI_COMM_WORLD: its settings agreement covers every rank, and
		// the 29 after it skip theirs (1 agreement, not 30).
		m := compare(t, nil, 60, prog, "-o", outDir, "loop=30")
		for rank, c := range m {
			if c.agreed != 1 {
				t.Errorf("rank %d ran %d settings agreements for 30 communicators, want 1: %+v", rank, c.agreed, c)
			}
		}
	})
	t.Run("init-at-start", func(t *testing.T) {
		// A program that makes no MPI_Allreduce: the library still
		// initialized in MPI_Init and the ranks agreed on the settings
		// over MPI_COMM_WORLD there, so the program's first
		// MPI_Allreduce pays neither. The agreement's allreduce goes to
		// PMPI_Allreduce (mpi.SetInterposed): no call passed, nested or
		// not. Mutations: the MPI_Init interposer removed -> no counters
		// line at all (the library never initialized); no
		// mpi.SetInterposed in dpmlGoInit -> one nested call each.
		r := dpmlrun(t, true, []string{"DPML_VERBOSE=1", "DPML_SETUP_WORLD=defer"}, prog, "-o", outDir)
		m := summaries(t, r.stderr)
		if len(m) != 4 {
			t.Fatalf("%d counters lines, want 4:\n%s", len(m), r.stderr)
		}
		for rank, c := range m {
			if c.agreed != 1 || c.passed != 0 || c.setup != 0 {
				t.Errorf("rank %d: %+v, want one agreement, no call passed, no engine", rank, c)
			}
		}
	})
	t.Run("setup-world", func(t *testing.T) {
		// By default MPI_COMM_WORLD is set up inside MPI_Init: a
		// program that makes no MPI_Allreduce still has one engine,
		// set up and released, and none of its own calls passed.
		// Mutation: init_at_start's setup_comm call removed -> no
		// engine (setup 0).
		r := dpmlrun(t, true, []string{"DPML_VERBOSE=1"}, prog, "-o", outDir)
		m := summaries(t, r.stderr)
		if len(m) != 4 {
			t.Fatalf("%d counters lines, want 4:\n%s", len(m), r.stderr)
		}
		for rank, c := range m {
			if c.agreed != 1 || c.setup != 1 || c.released != 1 || c.routed != 0 || c.passed != 0 {
				t.Errorf("rank %d: %+v, want one agreement, one engine set up in MPI_Init and released, no call passed (the engine's own go to PMPI_Allreduce)", rank, c)
			}
		}
		// Calls on MPI_COMM_WORLD run DPML from the first whatever
		// DPML_SETUP_AFTER says: none is a warm-up call; with
		// DPML_SETUP_WORLD=defer all of them are.
		for _, tc := range []struct {
			env    []string
			routed int
		}{{[]string{"DPML_SETUP_AFTER=100ms"}, 30}, {[]string{"DPML_SETUP_AFTER=100ms", "DPML_SETUP_WORLD=defer"}, 0}} {
			m = compare(t, tc.env, tc.routed, prog, "-o", outDir, "repeat=5")
			for rank, c := range m {
				if warm := c.reasons["warm-up"]; (tc.routed > 0) != (warm == 0) || c.routed != tc.routed {
					t.Errorf("%v: rank %d: %+v, want %d calls routed", tc.env, rank, c, tc.routed)
				}
			}
		}
	})
	t.Run("unknown-names", func(t *testing.T) {
		// Misspelt settings are named on rank 0, with the nearest
		// declared one where one is close. Mutation: the warning loop
		// in dpmlGoInit removed -> both lines missing.
		r := dpmlrun(t, true, []string{"DPML_LEADER=2", "DPML_SEGMENT=4K"}, prog, "-o", outDir, "special")
		for _, want := range []string{
			"libdpml: rank 0: DPML_LEADER is not a DPML setting (nearest: DPML_LEADERS)",
			"libdpml: rank 0: DPML_SEGMENT is not a DPML setting",
		} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
			}
		}
		if strings.Contains(r.stderr, "rank 1: DPML_LEADER") {
			t.Errorf("a rank other than 0 warned:\n%s", r.stderr)
		}
	})
	t.Run("gosched", func(t *testing.T) {
		// DPML_GOSCHED is applied in the drop-in (auto unless set:
		// see gosched.Apply); rank 0's banner says which. auto stops
		// pacing once the runtime's threads are idle (quietRuntime;
		// TestRuntimeThreadsIdle requires them idle here).
		// Mutation: dpmlGoInit not calling gosched.Apply makes every
		// case fail.
		for _, c := range []struct {
			env  []string
			want string
		}{
			{nil, "gosched auto: pace stopped (runtime threads idle)"},
			{[]string{"DPML_GOSCHED=procs"}, "gosched procs: pace false"},
			{[]string{"DPML_GOSCHED=off"}, "gosched off: pace false, GOMAXPROCS raised false"},
		} {
			r := dpmlrun(t, true, c.env, prog, "-o", outDir, "special", "loop=2")
			if r.code != 0 || !strings.Contains(r.stderr+r.stdout, c.want) {
				t.Errorf("%v: exit %d, output lacks %q:\n%s", c.env, r.code, c.want, r.stderr)
			}
		}
	})
	t.Run("cpuprofile", func(t *testing.T) {
		// DPML_CPUPROFILE: every rank writes its profile (%r is its
		// rank), a gzipped pprof protobuf. Mutation: no startProfile
		// call in dpmlGoInit fails it.
		dir := t.TempDir()
		r := dpmlrun(t, true, []string{"DPML_CPUPROFILE=" + filepath.Join(dir, "p-%r.pprof")}, prog, "-o", outDir, "special", "loop=2")
		if r.code != 0 {
			t.Fatalf("exit %d:\n%s", r.code, r.stderr)
		}
		for rank := range 4 {
			b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("p-%d.pprof", rank)))
			if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
				t.Errorf("rank %d's profile: %d bytes, %v", rank, len(b), err)
			}
		}
	})
	t.Run("bad", func(t *testing.T) {
		// Bad everywhere: every communicator passes through, on every rank.
		m := compare(t, []string{"DPML_MIN_BYTES=lots"}, 0, prog, "-o", outDir, "special", "loop=2")
		if m[0].routed != 0 || m[0].reasons["settings"] == 0 {
			t.Errorf("a bad setting did not disable the library: %+v", m[0])
		}
	})
}

// TestRuntimeThreadsIdle: with DPML_GOSCHED pacing (auto, the default),
// libdpml.so moves the Go runtime's own threads to SCHED_IDLE and leaves
// the program's threads alone: the main thread and a thread the program
// started before MPI_Init (blocked in read) keep SCHED_OTHER; with
// DPML_GOSCHED=off, or without the library, no thread is idle. The
// oracle is the kernel's sched_getscheduler, read by the program.
// Mutations: Demote taking every thread but the caller and the main one
// (no program-counter test) -> the program's thread turns idle; no
// quietRuntime call in dpmlGoInit and dpmlGoWarm -> no idle thread.
func TestRuntimeThreadsIdle(t *testing.T) {
	setup(t)
	prog := work.progs["allreduce"]
	re := regexp.MustCompile(`policies rank (\d+) main (-?\d+) prog (-?\d+) idle (\d+) of (\d+)`)
	for _, c := range []struct {
		name    string
		preload bool
		env     []string
		idle    bool
		pace    string // the pacing DPML_VERBOSE=1 reports ("": no report)
	}{
		// With its threads idle the runtime needs no pacing (auto);
		// DPML_GOSCHED=pace keeps it.
		{"default", true, nil, true, "pace stopped"},
		{"gosched-pace", true, []string{"DPML_GOSCHED=pace"}, true, "pace true"},
		{"gosched-off", true, []string{"DPML_GOSCHED=off"}, false, "pace false"},
		{"no-library", false, nil, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := dpmlrun(t, c.preload, append([]string{"DPML_VERBOSE=1"}, c.env...), prog, "-pthread", "policies")
			ms := re.FindAllStringSubmatch(r.stdout, -1)
			if r.code != 0 || len(ms) != 4 {
				t.Fatalf("exit %d, %d policy lines, want 4:\n%s\n%s", r.code, len(ms), r.stdout, r.stderr)
			}
			if c.pace != "" && !strings.Contains(r.stderr, ": "+c.pace) {
				t.Errorf("stderr does not report %q:\n%s", c.pace, r.stderr)
			}
			for _, m := range ms {
				idle, _ := strconv.Atoi(m[4])
				if m[2] != "0" || m[3] != "0" {
					t.Errorf("rank %s: main thread policy %s, program's thread %s; want 0 (SCHED_OTHER) for both", m[1], m[2], m[3])
				}
				if (idle > 0) != c.idle {
					t.Errorf("rank %s: %d of %s threads at SCHED_IDLE; want some: %v", m[1], idle, m[5], c.idle)
				}
			}
		})
	}
}

// TestRuntimeGCPercent: libdpml.so's Go runtime collects at GOGC 400
// unless the environment sets GOGC, whose value then stands. The oracle
// is the runtime's own report of its target (runtime/metrics, printed at
// DPML_VERBOSE=1), not the value the library asked for. Mutations: no
// collectLess call in dpmlGoInit -> "GOGC 100"; collectLess ignoring the
// environment -> "GOGC 400 (GOGC=50 in the environment)".
func TestRuntimeGCPercent(t *testing.T) {
	setup(t)
	prog := work.progs["allreduce"]
	for _, c := range []struct {
		name string
		env  []string
		want string
	}{
		{"default", nil, "GOGC 400\n"},
		{"environment", []string{"GOGC=50"}, "GOGC 50 (GOGC=50 in the environment)\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := dpmlrun(t, true, append([]string{"DPML_VERBOSE=1"}, c.env...), prog, "-pthread", "policies")
			if r.code != 0 {
				t.Fatalf("exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, c.want) {
				t.Errorf("stderr does not report %q:\n%s", c.want, r.stderr)
			}
		})
	}
}

// TestUnevenLayout: 3 ranks on one fake node, so leaders fold 3 sources
// at once (the 3-source kernels, SIMD included, which 2 ranks per node
// never reach), on every type and op, plain and in place.
func TestUnevenLayout(t *testing.T) {
	setup(t)
	compareOn(t, "3,2", nil, 100, work.progs["allreduce"], "-o", outDir, "types", "shm")
}

// TestMixedSettings: in the drop-in library, settings set on some ranks
// only (ranks 0-1 get one value, ranks 2-3 another) used to hang the
// program silently (the failing ranks passed calls to PMPI_Allreduce
// while the others waited in the engine's setup). Now every rank passes
// the communicator's calls through alike, the results are right, and one
// warning names the variable and the values seen.
func TestMixedSettings(t *testing.T) {
	setup(t)
	prog := work.progs["allreduce"]
	wrapper := filepath.Join(t.TempDir(), "split-env.sh")
	// Ranks 0-1 get the words of $DPML_TEST_LOW, the others those of
	// $DPML_TEST_HIGH (NAME=value ...), and the library preloaded.
	script := `#!/bin/sh
if [ "${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}" -lt 2 ]; then e=$DPML_TEST_LOW; else e=$DPML_TEST_HIGH; fi
LD_PRELOAD=$DPML_TEST_PRELOAD exec env $e "$@"
`
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"-o", outDir, "special", "loop=2"}
	native := dpmlrun(t, false, nil, prog, args...)
	if native.code != 0 || len(cases(native.out)) == 0 {
		t.Fatalf("native run: exit code %d\n%s\n%s", native.code, native.stdout, native.stderr)
	}
	for _, tc := range []struct{ name, low, high, reason, says string }{
		{"leaders 1 vs abc", "DPML_LEADERS=1", "DPML_LEADERS=abc", "setup-failed", `DPML_LEADERS differs between ranks: "1" on ranks 0-1, "abc" on ranks 2-3`},
		{"tuner static on half", "", "DPML_TUNER=static", "setup-failed", `DPML_TUNER differs between ranks: "auto" on ranks 0-1, "static" on ranks 2-3`},
		{"disable on half", "DPML_DISABLE=1", "", "settings", `DPML_DISABLE differs between ranks: "true" on ranks 0-1, "false" on ranks 2-3`},
		{"min bytes on half", "DPML_MIN_BYTES=1M", "", "settings", `DPML_MIN_BYTES differs between ranks: "1048576" on ranks 0-1, "0" on ranks 2-3`},
		{"from call on half", "", "DPML_DROPIN_FROM_CALL=3", "settings", "DPML_DROPIN_FROM_CALL differs"},
		{"bad min bytes on half", "", "DPML_MIN_BYTES=lots", "settings", `ranks 2-3: DPML_MIN_BYTES: config: invalid value: "lots" is not a byte count`},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "-"), func(t *testing.T) {
			env := []string{"DPML_TEST_LOW=" + tc.low, "DPML_TEST_HIGH=" + tc.high, "DPML_TEST_PRELOAD=" + work.lib}
			r := dpmlrun(t, false, env, "sh", append([]string{wrapper, prog}, args...)...)
			if r.code != 0 {
				t.Fatalf("exit code %d\n%s\n%s\n%s", r.code, r.out, r.stdout, r.stderr)
			}
			if f := failures(r.out); len(f) > 0 {
				t.Fatalf("wrong results:\n%s", strings.Join(f, "\n"))
			}
			if a, b := cases(native.out), cases(r.out); !slices.Equal(a, b) {
				t.Fatalf("results differ from the native run:\n%s", firstDiff(a, b))
			}
			m := summaries(t, r.stderr)
			if len(m) != 4 {
				t.Fatalf("%d ranks printed counters:\n%s", len(m), r.stderr)
			}
			for rank, c := range m {
				if c.routed != 0 || c.reasons[tc.reason] == 0 || c.reasons[tc.reason] != m[0].reasons[tc.reason] {
					t.Errorf("rank %d: %+v; want nothing routed and the same number of %q on every rank", rank, c, tc.reason)
				}
			}
			if !strings.Contains(r.stderr, tc.says) {
				t.Errorf("no warning saying %q:\n%s", tc.says, r.stderr)
			}
		})
	}
}

// TestFortran: mpif.h, use mpi and use mpi_f08 programs, including
// MPI_IN_PLACE and 200 communicators created and freed.
func TestFortran(t *testing.T) {
	setup(t)
	if work.fskip != "" {
		t.Skip(work.fskip)
	}
	// MPICH's mpif.h and use mpi MPI_INIT call MPI_Init, which
	// libdpml.so interposes: MPI_COMM_WORLD is set up there, and the
	// loop's 100 duplicates run on its engine (world, 100 splits and one
	// more split). Open MPI's bindings, and MPICH's mpi_f08, call
	// PMPI_Init: world is set up at its first call, as every
	// communicator is.
	for _, name := range []string{"f-mpifh", "f-usempi", "f-f08"} {
		shared := 202
		if flavor == launch.MPICH && name != "f-f08" {
			shared = 102
		}
		for _, c := range []struct {
			env  []string
			want int
		}{{nil, shared}, {[]string{"DPML_SETUP_WORLD=defer"}, 202}} {
			t.Run(fmt.Sprintf("%s/%v", name, c.env), func(t *testing.T) {
				// 8 calls on World, 200 in the loop, 1 on a split.
				m := compare(t, c.env, 209, work.progs[name], "200", outDir)
				if m[0].setup != c.want {
					t.Errorf("%d engines set up, want %d", m[0].setup, c.want)
				}
			})
		}
	}
}

// TestAbort: MPI_Abort after routed calls leaves no DPML segment in
// /dev/shm: checked by the ranks before the abort, and after the job by
// plain mpirun on one node, where no dpmlrun removes leftovers.
func TestAbort(t *testing.T) {
	setup(t)
	check := func(t *testing.T, r result, job string) {
		t.Helper()
		if r.code == 0 {
			t.Fatalf("exit code 0 after MPI_Abort\n%s\n%s", r.stdout, r.stderr)
		}
		if n := strings.Count(r.out, "case abort"); n != 8 {
			t.Errorf("%d results before the abort, want 8\n%s", n, r.out)
		}
		if n := strings.Count(r.out, " entries 0"); n != 4 {
			t.Errorf("DPML segments in /dev/shm before the abort:\n%s", r.out)
		}
		if n := strings.Count(r.stderr, "-> dpml"); n < 8 {
			t.Errorf("only %d calls routed before the abort\n%s", n, r.stderr)
		}
		if job != "" {
			if m, _ := filepath.Glob("/dev/shm/dpml-" + job + "*"); len(m) > 0 {
				t.Errorf("left in /dev/shm: %v", m)
			}
		}
	}
	t.Run("dpmlrun", func(t *testing.T) {
		r := dpmlrun(t, true, []string{"DPML_VERBOSE=2"}, work.progs["allreduce"], "-o", outDir, "abort")
		check(t, r, "")
	})
	t.Run("mpirun", func(t *testing.T) {
		job, err := launch.NewJobToken()
		if err != nil {
			t.Fatal(err)
		}
		if flavor == launch.MPICH {
			// MPICH's own launcher on one node, no dpmlrun.
			mpiexec, err := launch.CheckMpiexec()
			if err != nil {
				t.Fatal(err)
			}
			r := run(t, nil, mpiexec, "-n", "4", "-genv", "LD_PRELOAD", work.lib, "-genv", "DPML_JOB", job,
				"-genv", "DPML_VERBOSE", "2", work.progs["allreduce"], "-o", outDir, "abort")
			check(t, r, job)
			return
		}
		mpirun, err := launch.CheckMpirun()
		if err != nil {
			t.Fatal(err)
		}
		vader := t.TempDir() // Open MPI's own shared memory, out of /dev/shm
		a := []string{"-np", "4", "--oversubscribe", "--mca", "mpi_yield_when_idle", "1",
			"--mca", "btl_vader_backing_directory", vader,
			"-x", "LD_PRELOAD=" + work.lib, "-x", "DPML_JOB=" + job, "-x", "DPML_VERBOSE=2",
			work.progs["allreduce"], "-o", outDir, "abort"}
		if os.Geteuid() == 0 {
			a = append([]string{"--allow-run-as-root"}, a...)
		}
		r := run(t, nil, mpirun, a...)
		check(t, r, job)
	})
}

// TestBench: the C benchmark runs preloaded (a smoke test; the comparison
// with the Go API is for the device runs).
func TestBench(t *testing.T) {
	setup(t)
	r := dpmlrun(t, true, nil, work.progs["bench"], "-min", "8", "-max", "64K", "-time", "0.01")
	if r.code != 0 {
		t.Fatalf("exit code %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var rows int
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		if f := strings.Fields(line); len(f) != 6 {
			t.Errorf("want bytes count avg min max median, got %q", line)
		}
		rows++
	}
	if rows != 7 {
		t.Errorf("want 7 sizes (8 B to 64K by 4x):\n%s", r.stdout)
	}
	if m := summaries(t, r.stderr); len(m) != 4 || m[0].routed == 0 {
		t.Errorf("benchmark calls not routed: %+v", m)
	}
}

// TestExtension: DPMLX_Check_plan, DPMLX_Set_plan and DPMLX_Last_plan
// (dpmlx.h), found with dlsym: the program checks every return value, text
// and result itself; here the counters show that a communicator kept native
// from its first call built no engine and that the native plan's calls were
// passed to the MPI library.
func TestExtension(t *testing.T) {
	setup(t)
	// A plan forced with DPMLX_Set_plan sets the communicator up at its
	// next call even where DPML_SETUP_AFTER would wait (the program asked
	// for DPML). Mutation: the forced flag ignored -> the forced cases
	// report the MPI library's plan (native reason=warm-up).
	r := dpmlrun(t, true, []string{"DPML_SETUP_AFTER=1h"}, work.progs["dpmlx"], "-o", outDir)
	if r.code != 0 || len(failures(r.out)) > 0 || strings.Count(r.out, "done fails=0") != 4 {
		t.Fatalf("DPML_SETUP_AFTER=1h: exit code %d\n%s\n%s\n%s", r.code, r.out, r.stdout, r.stderr)
	}
	r = dpmlrun(t, true, nil, work.progs["dpmlx"], "-o", outDir)
	if r.code != 0 || len(failures(r.out)) > 0 || strings.Count(r.out, "done fails=0") != 4 {
		t.Fatalf("exit code %d\n%s\n%s\n%s", r.code, r.out, r.stdout, r.stderr)
	}
	if n := strings.Count(r.out, "case "); n != 4*37 {
		t.Errorf("%d case lines, want 37 per rank:\n%s", n, r.out)
	}
	m := summaries(t, r.stderr)
	if len(m) != 4 {
		t.Fatalf("%d ranks printed counters:\n%s", len(m), r.stderr)
	}
	for rank, c := range m {
		// World only: the first duplicate was native from its first
		// call, the second runs on world's engine (MPI_COMM_WORLD is
		// set up in MPI_Init). Mutation: no sharing
		// (congruent_to_world always false) -> 2 engines.
		if c.setup != 1 || c.released != 1 || c.reasons["native-plan"] != 5 || c.reasons["type"] != 1 {
			t.Errorf("rank %d: %+v, want 1 engine, 5 native-plan and 1 type pass", rank, c)
		}
	}
	// Without the library the program finds no entry points and says so.
	r = dpmlrun(t, false, nil, work.progs["dpmlx"], "-o", outDir)
	if r.code != 0 || strings.Count(r.out, "case nolib") != 4 {
		t.Errorf("without libdpml.so: exit code %d\n%s\n%s", r.code, r.out, r.stderr)
	}
}

// TestPrefault: with DPML_SETUP_WORLD=warm (the default) MPI_Init maps
// every page of libdpml.so's code and read-only data into each rank's
// page tables (dpml's Warm, package internal/runtime/prefault), so that
// no code path's first run takes page faults (which the ranks of a node
// take at the same moment and queue on). The oracle is the kernel's: Rss
// of those mappings in /proc/self/smaps, read by the program after its
// calls, is at least 99% of their size, and what rank 0 says it mapped
// in (DPML_VERBOSE=1) is most of that size (the smaps lines also hold
// the data the dynamic linker made read-only). Whether pages a process
// never ran are mapped without it depends on how the kernel holds the
// file in its cache, so Rss alone cannot tell. Without the library the
// program sees no such mapping. Mutation: Warm not calling
// prefault.Self -> no "mapped in" line.
func TestPrefault(t *testing.T) {
	setup(t)
	prog := work.progs["allreduce"]
	re := regexp.MustCompile(`resident rank (\d+) size (\d+) rss (\d+)`)
	said := regexp.MustCompile(`dpml: rank 0: mapped in (\d+) KiB of the code and read-only data`)
	for _, c := range []struct {
		name    string
		preload bool
	}{{"default", true}, {"no-library", false}} {
		t.Run(c.name, func(t *testing.T) {
			r := dpmlrun(t, c.preload, nil, prog, "resident")
			ms := re.FindAllStringSubmatch(r.stdout, -1)
			if r.code != 0 || len(ms) != 4 {
				t.Fatalf("exit %d, %d resident lines, want 4:\n%s\n%s", r.code, len(ms), r.stdout, r.stderr)
			}
			mapped := -1
			if m := said.FindStringSubmatch(r.stderr); m != nil {
				mapped, _ = strconv.Atoi(m[1])
			}
			if c.preload == (mapped < 0) {
				t.Errorf("library loaded %v, yet mapped-in report %d KiB:\n%s", c.preload, mapped, r.stderr)
			}
			for _, m := range ms {
				size, _ := strconv.Atoi(m[2])
				rss, _ := strconv.Atoi(m[3])
				switch {
				case !c.preload && size != 0:
					t.Errorf("rank %s: %d KiB of libdpml.so mapped without the library", m[1], size)
				case c.preload && (size == 0 || rss*100 < size*99):
					t.Errorf("rank %s: %d of %d KiB of libdpml.so's read-only mappings resident; want at least 99%%", m[1], rss, size)
				case c.preload && m[1] == "0" && (mapped > size || mapped*2 < size):
					t.Errorf("rank 0 mapped in %d KiB of %d KiB of read-only mappings; want most of them", mapped, size)
				}
			}
		})
	}
}
