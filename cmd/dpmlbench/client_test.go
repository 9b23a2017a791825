package main

// Tests of the C benchmark client, cmd/dpmlbench-c: built here with mpicc,
// run on 2 fake nodes x 2 ranks through dpmlrun (this test binary is its
// own launcher: internal/testkit/mpitest's init dispatches it) with libdpml.so
// preloaded, in every pattern; its results.json must be what
// internal/tools/bench reads and what `dpmlbench table` and `plot` render.

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"github.com/dpmlgo/dpml/internal/tools/results"
	"io"
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

	"github.com/dpmlgo/dpml/internal/testkit/fakesharp"
	"github.com/dpmlgo/dpml/internal/tools/bench"
	"github.com/dpmlgo/dpml/internal/tools/launch"
)

// flavor is the MPI under test: the one this test binary links (go test
// -tags mpich ./cmd/dpmlbench runs the client against MPICH).
var flavor = launch.BuildFlavor

// clientBuild holds what the client tests build once.
var clientBuild struct {
	once                   sync.Once
	dir, lib, client, shim string
	skip                   string
	err                    error
}

// corruptShim is a fault injector preloaded before libdpml.so: it forwards
// MPI_Allreduce to the next definition (libdpml.so's) and, on world rank 1,
// adds 1 to the last element of every float result from the
// CORRUPT_FROM-th top-level call on. Calls the engine makes from inside
// libdpml.so reach it too (the engine calls MPI_Allreduce by name); they
// arrive while a top-level call is in progress on the thread and pass
// untouched and uncounted. The client's native variant calls
// PMPI_Allreduce and is never corrupted.
const corruptShim = `#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdlib.h>
typedef int (*allreduce_fn)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
static __thread int inside;
static long calls;
int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype dt, MPI_Op op, MPI_Comm c) {
	static allreduce_fn next;
	if (!next) next = (allreduce_fn)dlsym(RTLD_NEXT, "MPI_Allreduce");
	if (inside) return next(s, r, n, dt, op, c);
	inside = 1;
	int rc = next(s, r, n, dt, op, c);
	inside = 0;
	const char *from = getenv("CORRUPT_FROM");
	int rank = -1;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (++calls >= (from ? atol(from) : 1) && rank == 1 && dt == MPI_FLOAT && n > 0) ((float *)r)[n - 1] += 1;
	return rc;
}
`

// setupClient builds libdpml.so, the client and the fault injector.
func setupClient(t *testing.T) {
	t.Helper()
	cb := &clientBuild
	cb.once.Do(func() {
		if cb.skip = launch.MissingForTests(flavor); cb.skip != "" {
			return
		}
		cc, _ := launch.Compilers(flavor)
		dir, err := os.MkdirTemp("", "dpml-client-test-")
		if err != nil {
			cb.err = err
			return
		}
		cb.dir = dir
		cb.lib, cb.client, cb.shim = filepath.Join(dir, "libdpml.so"), filepath.Join(dir, "dpmlbench-c"), filepath.Join(dir, "libcorrupt.so")
		gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(gobin); err != nil {
			gobin = "go"
		}
		shimSrc := filepath.Join(dir, "corrupt.c")
		if cb.err = os.WriteFile(shimSrc, []byte(corruptShim), 0o644); cb.err != nil {
			return
		}
		// The library of the ABI this test binary links (-tags mpich).
		lib := []string{gobin, "build", "-buildmode=c-shared", "-o", cb.lib}
		if flavor == launch.MPICH {
			lib = append(lib, "-tags", "mpich")
		}
		for _, argv := range [][]string{
			append(lib, "../../dropin"),
			// As make build compiles it.
			{cc, "-O2", "-Wall", "-I", "../../dropin", `-DDPML_COMMIT="test"`, "-o", cb.client, "../dpmlbench-c/dpmlbench-c.c", "-ldl", "-lm"},
			{cc, "-O1", "-shared", "-fPIC", "-o", cb.shim, shimSrc, "-ldl"},
		} {
			if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
				cb.err = fmt.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, out)
				return
			}
		}
	})
	if cb.skip != "" {
		t.Skip(cb.skip)
	}
	if cb.err != nil {
		t.Fatal(cb.err)
	}
}

type clientRun struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
	dir            string // the working directory it ran in
}

// runClient runs the client on 2 fake nodes x 2 ranks with preload
// (LD_PRELOAD list, "" for none) and env.
func runClient(t *testing.T, preload string, env []string, args ...string) clientRun {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	a := []string{launch.MainArg, "-mpi", string(flavor), "-nodes", "2", "-ppn", "2"}
	if preload != "" {
		a = append(a, "-preload", preload)
	}
	var names []string
	for _, e := range env {
		name, _, _ := strings.Cut(e, "=")
		names = append(names, name)
	}
	// Open MPI: -x NAME for each; Hydra passes its whole environment.
	if x := launch.ExportArgs(flavor, names...); len(x) > 0 {
		a = append(append(a, "--"), x...)
	}
	a = append(append(a, "--", clientBuild.client), args...)
	return runCmd(t, env, exe, a...)
}

// runSingleton runs one rank without a launcher (an MPI singleton: fast).
func runSingleton(t *testing.T, preload string, args ...string) clientRun {
	t.Helper()
	var env []string
	if preload != "" {
		env = append(env, "LD_PRELOAD="+preload)
	}
	return runCmd(t, env, clientBuild.client, args...)
}

func runCmd(t *testing.T, env []string, name string, args ...string) clientRun {
	t.Helper()
	limit := 4 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	// A run without -out writes its default folder under here.
	cmd.Dir = t.TempDir()
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	err := cmd.Run()
	r := clientRun{stdout: o.String(), stderr: e.String(), code: cmd.ProcessState.ExitCode(), elapsed: time.Since(start), dir: cmd.Dir}
	if ctx.Err() != nil {
		t.Fatalf("%s %s: no exit after %v (hang?)\n%s%s", name, strings.Join(args, " "), limit, r.stdout, r.stderr)
	}
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return r
}

func withLib() string { return clientBuild.lib }

// specs the pattern runs use, and their report fields.
var clientVariants = []struct {
	spec, variant string
	l, k          int
}{
	{"native", "native", 0, 0},
	{"auto", "auto", 0, 0},
	{"dpml:l=1", "dpml", 1, 1},
	{"dpml:l=2", "dpml", 2, 1}, // given as dpml:l=max
	{"pipelined:l=2,k=2", "pipelined", 2, 2},
}

// TestClientC: the C client in every pattern with libdpml.so preloaded,
// every result checked by the client's oracle (-check), and its output read
// back: results.json by internal/tools/bench, rendered by `dpmlbench table` and
// `plot`, results.csv equal to internal/tools/bench's CSV of the same report.
func TestClientC(t *testing.T) {
	setupClient(t)
	// One element type and op per pattern, so each type's oracle runs.
	for _, c := range []struct{ pattern, typ, op string }{
		{results.PatternB2B, "float", "sum"}, {results.PatternBarrier, "int", "min"}, {results.PatternSkew, "double", "max"},
	} {
		pattern := c.pattern
		t.Run(pattern, func(t *testing.T) {
			out := t.TempDir()
			args := []string{"-pattern", pattern, "-type", c.typ, "-op", c.op, "-sizes", "4,1K,64K,1M", "-variants", "native,auto,dpml:l=1,dpml:l=max,pipelined:l=2,k=2",
				"-check", "-time", "2ms", "-min-iters", "4", "-max-iters", "20", "-tune-calls", "10", "-batches", "3", "-skew", "5",
				"-samples", "-out", out}
			r := runClient(t, withLib(), nil, args...)
			t.Logf("%s: %v", pattern, r.elapsed.Round(time.Millisecond))
			if r.code != 0 {
				t.Fatalf("exit code %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if strings.Contains(r.stderr, "CHECK FAILED") || !strings.Contains(r.stdout, "# libdpml: "+clientBuild.lib) {
				t.Errorf("output:\n%s\n%s", r.stdout, r.stderr)
			}
			rep, err := results.ReadJSONFile(filepath.Join(out, bench.JSONFile))
			if err != nil {
				t.Fatal(err)
			}
			checkClientReport(t, rep, pattern, c.typ, c.op)
			checkClientCSV(t, rep, filepath.Join(out, bench.CSVFile))
			checkRenders(t, out)
		})
	}
}

func checkClientReport(t *testing.T, rep *results.Report, pattern, typ, op string) {
	t.Helper()
	m := rep.Meta
	wantType, es := map[string]string{"float": "float32", "int": "int32", "double": "float64"}[typ], 4
	if typ == "double" {
		es = 8
	}
	if m.Tool != "dpmlbench-c" || m.Format != results.FormatVersion || m.Client != "c" || m.Pattern != pattern || m.Nodes != 2 || m.PPN != 2 ||
		m.PPNMax != 2 || m.WorldSize != 4 || len(m.Hosts) != 2 || len(m.RankHosts) != 4 || m.Type != wantType || m.ElemSize != es ||
		m.Op != op || !m.Check || m.GitCommit != "test" || !strings.HasPrefix(m.DPMLLibrary, clientBuild.lib+" (DPML-Go ") ||
		m.MPILibrary == "" || m.Date == "" || len(m.Command) < 2 || !strings.Contains(m.CommandLine, "-pattern "+pattern) {
		t.Errorf("meta: %+v", m)
	}
	if (pattern == results.PatternSkew) != (m.SkewUS == 5 && m.Seed == 1) || (pattern == results.PatternB2B) != (m.Batches == 3 && m.PerCall) {
		t.Errorf("pattern meta: skew %g seed %d batches %d per_call %v", m.SkewUS, m.Seed, m.Batches, m.PerCall)
	}
	if (pattern != results.PatternB2B) != (m.Run == 100) {
		t.Errorf("pattern meta: run %d, want 100 (the default) under barrier and skew only", m.Run)
	}
	if len(m.Variants) != len(clientVariants) || m.Env["LD_PRELOAD"] == "" {
		t.Errorf("variants %v, env %v", m.Variants, m.Env)
	}
	if len(rep.Results) != 4*len(clientVariants) {
		t.Fatalf("%d results, want %d", len(rep.Results), 4*len(clientVariants))
	}
	sizes := []int{max(4, es), 1024, 64 << 10, 1 << 20} // whole elements
	for i, r := range rep.Results {
		v := clientVariants[i%len(clientVariants)]
		name := fmt.Sprintf("%s %s", results.FormatSize(r.Bytes), r.Label())
		wantVariant := v.variant
		if wantVariant == "pipelined" {
			wantVariant = results.VariantDPML
		}
		if r.Bytes != sizes[i/len(clientVariants)] || r.Count != r.Bytes/es || r.Spec != v.spec || r.Variant != wantVariant ||
			r.Leaders != v.l || r.Pipeline != v.k || r.Label() != v.spec {
			t.Errorf("%s: %+v, want %+v", name, r, v)
		}
		if !r.OK() || r.Check != "ok" || r.Mismatches != 0 || r.Warmup != 3 || r.Iters < 4 || r.Iters > 20+3 {
			t.Errorf("%s: %+v", name, r)
			continue
		}
		us := r.US
		if us.N < 1 || us.Min <= 0 || us.Min > us.P25 || us.P25 > us.Median || us.Median > us.P75 || us.P75 > us.Max || len(r.SamplesUS) != us.N {
			t.Errorf("%s: summary %+v, %d samples", name, us, len(r.SamplesUS))
		}
		switch pattern {
		case results.PatternB2B:
			if r.Batches != us.N || r.Batches > 3 || r.Iters%r.Batches != 0 || r.PerCall == nil ||
				r.PerCall.N != r.Iters || r.PerCall.Min <= 0 || r.PerCall.Min > r.PerCall.Median {
				t.Errorf("%s: b2b: %d calls, %d batches, %d samples, per call %+v", name, r.Iters, r.Batches, us.N, r.PerCall)
			}
		default:
			if r.Batches != 0 || r.PerCall != nil || us.N != r.Iters {
				t.Errorf("%s: %s: batches %d, per call %v, %d samples of %d calls", name, pattern, r.Batches, r.PerCall, us.N, r.Iters)
			}
		}
		if v.variant == "native" {
			if r.Plan != nil {
				t.Errorf("%s: plan %+v for the MPI library", name, *r.Plan)
			}
			continue
		}
		p := r.Plan
		if p == nil {
			t.Errorf("%s: no plan recorded", name)
			continue
		}
		// Fixed plans ran as asked (the engine may use fewer leaders on
		// a small message); every plan here was run by the engine.
		if p.Passed != "" || (v.variant != "auto" && (p.Variant != v.variant || p.Pipeline != v.k || p.Leaders > v.l || p.Leaders < 1 || p.Segments < 1)) {
			t.Errorf("%s: plan %+v", name, *p)
		}
	}
}

// checkClientCSV compares the client's results.csv with what
// internal/tools/bench writes for the report the client wrote as JSON.
func checkClientCSV(t *testing.T, rep *results.Report, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var b bytes.Buffer
	if err := results.WriteCSV(&b, rep); err != nil {
		t.Fatal(err)
	}
	want, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("results.csv: %d rows, internal/tools/bench writes %d", len(got), len(want))
	}
	for i := range want {
		if strings.Join(got[i], ",") != strings.Join(want[i], ",") {
			t.Errorf("results.csv row %d:\n got  %q\n want %q", i, got[i], want[i])
		}
	}
}

// checkRenders runs `dpmlbench table` (and -md) and `dpmlbench plot` on
// the client's results.json.
func checkRenders(t *testing.T, dir string) {
	t.Helper()
	in := filepath.Join(dir, bench.JSONFile)
	table := captureStdout(t, func() int { return mainStatus([]string{"table", "-in", in}, io.Discard) })
	for _, want := range []string{"# dpmlbench-c: ", "# measured: client c, pattern ", "# libdpml: ", "spec pipelined:l=2,k=2", "best fixed plan"} {
		if !strings.Contains(table, want) {
			t.Errorf("dpmlbench table: no %q in\n%s", want, table)
		}
	}
	md := captureStdout(t, func() int { return mainStatus([]string{"table", "-md", "-in", in}, io.Discard) })
	if strings.Count(md, "\n") != 2+4 {
		t.Errorf("dpmlbench table -md: want 4 size rows:\n%s", md)
	}
	plots := t.TempDir()
	captureStdout(t, func() int { return mainStatus([]string{"plot", "-in", in, "-out", plots}, io.Discard) })
	for _, f := range []string{bench.LatencyPNG, bench.RatioPNG} {
		if st, err := os.Stat(filepath.Join(plots, f)); err != nil || st.Size() == 0 {
			t.Errorf("dpmlbench plot: %s: %v", f, err)
		}
	}
}

// captureStdout runs f with os.Stdout going to a file and returns what f
// printed; f's status must be 0.
func captureStdout(t *testing.T, f func() int) string {
	t.Helper()
	tmp, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	defer tmp.Close()
	old := os.Stdout
	os.Stdout = tmp
	code := f()
	os.Stdout = old
	b, err := os.ReadFile(tmp.Name())
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Fatalf("status %d\n%s", code, b)
	}
	return string(b)
}

// TestClientCOrder: the variants of a size run in an order shuffled per
// round (the same on every rank), not rotated: a rotation keeps the cyclic
// order, so the variant listed after native would follow native's batches
// in most rounds. The client traces rank 0's orders under
// DPMLBENCH_ORDER_TRACE=1. Mutation: back to the rotation ((i + j) % np)
// makes native's successor always the same and fails the test. Under
// barrier and skew a round is -run calls of each variant.
func TestClientCOrder(t *testing.T) {
	setupClient(t)
	r := runClient(t, withLib(), []string{"DPMLBENCH_ORDER_TRACE=1"}, "-sizes", "8", "-variants", "native,auto,dpml:l=1,dpml:l=max",
		"-min-iters", "16", "-max-iters", "16", "-batches", "16", "-tune-calls", "4", "-quiet")
	if r.code != 0 {
		t.Fatalf("exit code %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	rounds, orders := 0, map[string]bool{}
	after := map[string]bool{} // what follows native (point 0) inside a round
	for _, line := range strings.Split(r.stderr, "\n") {
		_, rest, ok := strings.Cut(line, "dpmlbench-c: order ")
		if !ok {
			continue
		}
		f := strings.Fields(rest) // count, round, then the order
		if len(f) != 2+4 {
			t.Fatalf("order line %q", line)
		}
		seen := map[string]bool{}
		for i, p := range f[2:] {
			seen[p] = true
			if p == "0" && i < 3 {
				after[f[2+i+1]] = true
			}
		}
		if len(seen) != 4 || !seen["0"] || !seen["1"] || !seen["2"] || !seen["3"] {
			t.Errorf("round %s: order %v is not a permutation of the 4 points", f[1], f[2:])
		}
		orders[strings.Join(f[2:], " ")] = true
		rounds++
	}
	if rounds != 16 {
		t.Fatalf("%d traced rounds, want 16:\n%s", rounds, r.stderr)
	}
	if len(orders) < 4 || len(after) < 2 {
		t.Errorf("%d distinct orders in 16 rounds, native followed by %d distinct points: the order is not shuffled", len(orders), len(after))
	}

	// Under barrier (and skew) a round runs -run consecutive calls of each
	// variant, as a program runs one plan: 16 calls in runs of 4 are 4
	// rounds. Mutation: one call per round (the step ignored) makes 16.
	r = runClient(t, withLib(), []string{"DPMLBENCH_ORDER_TRACE=1"}, "-pattern", "barrier", "-run", "4", "-sizes", "8",
		"-variants", "native,auto,dpml:l=1,dpml:l=max", "-min-iters", "16", "-max-iters", "16", "-tune-calls", "4", "-quiet")
	if r.code != 0 {
		t.Fatalf("barrier, -run 4: exit code %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if n := strings.Count(r.stderr, "dpmlbench-c: order "); n != 4 {
		t.Errorf("barrier, -run 4: %d traced rounds of 16 calls, want 4:\n%s", n, r.stderr)
	}
}

// TestClientCNoLibrary: without libdpml.so only native runs, and the
// output says why the others did not; with the library disabled, or with an
// interposer that lacks the extension, auto runs too.
func TestClientCNoLibrary(t *testing.T) {
	setupClient(t)
	out := t.TempDir()
	r := runClient(t, "", nil, "-sizes", "4,64K", "-variants", "native,auto,pipelined:l=2,k=2", "-check", "-time", "2ms",
		"-min-iters", "4", "-max-iters", "10", "-out", out)
	if r.code != 0 || !strings.Contains(r.stdout, "libdpml.so not loaded: only the native variant runs") ||
		!strings.Contains(r.stderr, "libdpml.so is not loaded") {
		t.Fatalf("exit code %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	rep, err := results.ReadJSONFile(filepath.Join(out, bench.JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Meta.DPMLLibrary != "" || len(rep.Results) != 6 {
		t.Fatalf("meta %+v, %d results", rep.Meta, len(rep.Results))
	}
	for _, r := range rep.Results {
		native := r.Variant == results.VariantNative
		if native != r.OK() || (native && r.Check != "ok") || (!native && r.Skipped != "libdpml.so not loaded") {
			t.Errorf("%s %s: %+v", results.FormatSize(r.Bytes), r.Label(), r)
		}
	}
	table := captureStdout(t, func() int {
		return mainStatus([]string{"table", "-in", filepath.Join(out, bench.JSONFile)}, io.Discard)
	})
	if !strings.Contains(table, "libdpml.so was not loaded") {
		t.Errorf("table:\n%s", table)
	}

	// The library disabled (DPML_DISABLE): fixed plans cannot be set and
	// are skipped with libdpml.so's reason; auto runs and says it was passed
	// to the MPI library.
	out = t.TempDir()
	r = runClient(t, withLib(), []string{"DPML_DISABLE=1"}, "-sizes", "4", "-variants", "native,auto,dpml:l=1",
		"-check", "-time", "2ms", "-min-iters", "4", "-max-iters", "10", "-out", out)
	if r.code != 0 {
		t.Fatalf("DPML_DISABLE=1: exit code %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if rep, err = results.ReadJSONFile(filepath.Join(out, bench.JSONFile)); err != nil {
		t.Fatal(err)
	}
	// The reason is MPI_Error_string's text of MPI_ERR_UNSUPPORTED_OPERATION,
	// which each library words its own way.
	unsupported := "MPI_ERR_UNSUPPORTED_OPERATION: operation not supported"
	if flavor == launch.MPICH {
		unsupported = "Unsupported file operation "
	}
	if len(rep.Results) != 3 || !rep.Results[0].OK() || !rep.Results[1].OK() || rep.Results[1].Plan == nil ||
		rep.Results[1].Plan.Passed != "disabled" || rep.Results[2].Skipped != "DPMLX_Set_plan(dpml:l=1): "+unsupported {
		t.Errorf("DPML_DISABLE=1: %+v", rep.Results)
	}

	// An interposed MPI_Allreduce without the extension (as a libdpml.so
	// older than dpmlx.h would be; here the fault injector, told never to
	// corrupt): native and auto (the interposer's own choice) run.
	out = t.TempDir()
	r = runClient(t, clientBuild.shim, []string{"CORRUPT_FROM=1000000000"}, "-sizes", "4,64K", "-variants", "native,auto,dpml:l=1",
		"-check", "-time", "2ms", "-min-iters", "4", "-max-iters", "10", "-out", out)
	if r.code != 0 || !strings.Contains(r.stdout, "MPI_Allreduce is interposed without plan control") {
		t.Fatalf("interposer: exit code %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if rep, err = results.ReadJSONFile(filepath.Join(out, bench.JSONFile)); err != nil {
		t.Fatal(err)
	}
	if rep.Meta.DPMLLibrary != clientBuild.shim+" (no DPMLX entry points)" || len(rep.Results) != 6 {
		t.Fatalf("interposer: meta %+v, %d results", rep.Meta, len(rep.Results))
	}
	for _, r := range rep.Results {
		fixed := r.Variant == results.VariantDPML
		if fixed == r.OK() || (!fixed && r.Check != "ok") || (fixed && !strings.HasPrefix(r.Skipped, "no DPMLX_Set_plan in "+clientBuild.shim)) {
			t.Errorf("interposer: %s %s: %+v", results.FormatSize(r.Bytes), r.Label(), r)
		}
	}
}

// TestClientCBadFlags: a bad flag is a usage error on every rank: status
// 2 and one message, not a hang (on the emulated cluster, and as one
// process for the rest of the cases); -h prints the usage.
func TestClientCBadFlags(t *testing.T) {
	setupClient(t)
	for i, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-pattern", "osu"}, "-pattern osu: want b2b, barrier, skew, cold, cold-barrier or churn"},
		{[]string{"-variants", "native,dpml:k=4"}, `-variants: plan spec "dpml:k=4": dpml runs k=1`},
		{[]string{"-variants", "native,tree"}, `-variants: plan spec "tree": unknown variant`},
		{[]string{"-sizes", "0"}, "-sizes: 0: not a positive byte count"},
		{[]string{"-sizes", "4:1K:x1"}, "-sizes: step x1: want xF with integer F >= 2"},
		{[]string{"-sizes", "8:abc"}, "-sizes: range 8:abc: abc: not a positive byte count"},
		{[]string{"-sizes", "abc:8"}, "-sizes: abc: not a positive byte count"},
		{[]string{"-variants", "dpml:l=zz"}, `-variants: plan spec "dpml:l=zz": l=zz: want a positive integer (leaders per node)`},
		{[]string{"-format", "csv"}, "-format csv: want table, nccl or osu"},
		{[]string{"-skew"}, "flag needs an argument: -skew"},
		{[]string{"-skew", "-3"}, "-skew -3: want microseconds >= 0"},
		{[]string{"-nosuch", "1"}, "flag provided but not defined: -nosuch"},
		{[]string{"-time", "fast"}, "-time fast: want a duration"},
		{[]string{"-type", "complex"}, "-type complex: want float, double or int"},
		{[]string{"-min-iters", "5", "-max-iters", "2"}, "-max-iters 2 < -min-iters 5"},
		{[]string{"-check=maybe"}, "-check=maybe: want true or false"},
		{[]string{"extra"}, "unexpected argument extra"},
	} {
		var r clientRun
		if i < 2 {
			r = runClient(t, withLib(), nil, c.args...)
		} else {
			r = runSingleton(t, withLib(), c.args...)
		}
		if r.code != 2 || !strings.Contains(r.stderr, "dpmlbench-c: "+c.want) || strings.Count(r.stderr, "dpmlbench-c: ") != 1 {
			t.Errorf("%v: exit code %d, want 2 and one line %q:\n%s\n%s", c.args, r.code, c.want, r.stdout, r.stderr)
		}
	}
	// Without the library a spec's variant name is still checked.
	r := runSingleton(t, "", "-variants", "native,dmpl:l=2")
	if r.code != 2 || !strings.Contains(r.stderr, "dmpl:l=2: unknown variant") {
		t.Errorf("no library, bad variant: exit code %d\n%s", r.code, r.stderr)
	}
	r = runSingleton(t, "", "-h")
	if r.code != 0 || !strings.Contains(r.stdout, "usage: ") || !strings.Contains(r.stdout, "-pattern P") {
		t.Errorf("-h: exit code %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestClientCCheckFails: results made wrong after libdpml.so (by a fault
// injector, only in timed calls: the warm-up calls are left intact) fail the
// client's check in every pattern, on the corrupted variant only.
func TestClientCCheckFails(t *testing.T) {
	setupClient(t)
	for _, pattern := range results.Patterns {
		t.Run(pattern, func(t *testing.T) {
			out := t.TempDir()
			// dpml:l=1 makes -warmup 2 calls, then the timed ones (native
			// calls PMPI_Allreduce: not seen by the injector).
			r := runClient(t, clientBuild.shim+":"+clientBuild.lib, []string{"CORRUPT_FROM=3"},
				"-pattern", pattern, "-sizes", "64", "-variants", "native,dpml:l=1", "-check", "-warmup", "2", "-iters", "6", "-batches", "2", "-out", out)
			if r.code != 1 || !strings.Contains(r.stderr, "CHECK FAILED: size 64, dpml:l=1") || strings.Contains(r.stderr, "native:") {
				t.Fatalf("exit code %d, want 1 and a CHECK FAILED line for dpml:l=1\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			rep, err := results.ReadJSONFile(filepath.Join(out, bench.JSONFile))
			if err != nil {
				t.Fatal(err)
			}
			for _, res := range rep.Results {
				want := "mismatch"
				if res.Variant == results.VariantNative {
					want = "ok"
				}
				if res.Check != want || (want == "mismatch") != (res.Mismatches > 0 && strings.Contains(res.MismatchAt, "element 15 of 16")) {
					t.Errorf("%s: check %q, %d mismatches at %q; want %s", res.Label(), res.Check, res.Mismatches, res.MismatchAt, want)
				}
			}
		})
	}
}

// TestClientCOffload: the C client forces the offload through plan specs
// (DPMLX_Set_plan("dpml:l=1,offload=sharp")) with libdpml.so attached to
// the EMULATED switch: the 8-byte call runs offloaded, the 8 KiB one (over
// DPML_OFFLOAD_BYTES) and offload=host on the host, every result checked,
// and the report says the switch was emulated.
func TestClientCOffload(t *testing.T) {
	setupClient(t)
	lib := fakesharp.ForTest(t)
	out := t.TempDir()
	r := runClient(t, withLib(), []string{"DPML_OFFLOAD=libsharp", "DPML_SHARP_LIB=" + lib}, "-sizes", "8,8K",
		"-variants", "native,dpml:l=1,offload=sharp,dpml:l=1,offload=host", "-check", "-time", "2ms", "-min-iters", "4", "-max-iters", "10", "-out", out)
	if r.code != 0 || !strings.Contains(r.stdout, "# offload: DPML_OFFLOAD=libsharp") {
		t.Fatalf("exit code %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	rep, err := results.ReadJSONFile(filepath.Join(out, bench.JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Meta.Offload, "EMULATED") {
		t.Errorf("meta offload %q", rep.Meta.Offload)
	}
	want := map[string]string{"dpml:l=1,offload=sharp 8": "sharp", "dpml:l=1,offload=sharp 8192": "host",
		"dpml:l=1,offload=host 8": "host", "dpml:l=1,offload=host 8192": "host"}
	seen := 0
	for _, res := range rep.Results {
		w, ok := want[fmt.Sprintf("%s %d", res.Spec, res.Bytes)]
		if !ok {
			continue
		}
		seen++
		if res.Check != "ok" || res.Plan == nil || res.Plan.Offload != w {
			t.Errorf("%s %d B: check %q, plan %+v; want offload %s", res.Spec, res.Bytes, res.Check, res.Plan, w)
		}
	}
	if seen != len(want) {
		t.Errorf("%d of %d offload results found: %+v", seen, len(want), rep.Results)
	}
	fakesharp.CheckNoSwitch(t, lib)
}

// TestClientCCold: -pattern cold and cold-barrier: per size a native and
// an auto row with ratios and #wrong 0, and cold.csv with one record of
// the header's fields per (size, variant), a plan spec's commas quoted.
// Mutations: the variants' rows printed without the ratios (nat never
// set) -> the auto rows' ratio columns read "-"; the spec written
// unquoted -> "record 3 has 15 fields, the header 14".
func TestClientCCold(t *testing.T) {
	setupClient(t)
	for _, pattern := range []string{"cold", "cold-barrier"} {
		t.Run(pattern, func(t *testing.T) {
			out := t.TempDir()
			const fixed = "dpml:l=1,intra=shm"
			r := runClient(t, withLib(), nil, "-pattern", pattern, "-calls", "3", "-sizes", "4,64K", "-check", "-variants", "native,auto,"+fixed, "-out", out)
			if r.code != 0 {
				t.Fatalf("exit code %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			rows := 0
			for _, line := range strings.Split(r.stdout, "\n") {
				f := strings.Fields(line)
				if len(f) < 12 || (f[2] != "native" && f[2] != "auto") {
					continue
				}
				rows++
				if f[10] != "0" {
					t.Errorf("wrong elements: %s", line)
				}
				if f[2] == "auto" && (f[7] == "-" || f[9] == "-") {
					t.Errorf("auto row without ratios: %s", line)
				}
			}
			if rows != 4 {
				t.Errorf("%d rows, want 4:\n%s", rows, r.stdout)
			}
			data, err := os.ReadFile(filepath.Join(out, "cold.csv"))
			if err != nil {
				t.Fatal(err)
			}
			rd := csv.NewReader(bytes.NewReader(data))
			rd.FieldsPerRecord = -1
			recs, err := rd.ReadAll()
			if err != nil || len(recs) != 7 {
				t.Fatalf("cold.csv: %d records (want a header and 6), %v:\n%s", len(recs), err, data)
			}
			specs := map[string]int{}
			for i, rec := range recs {
				if len(rec) != len(recs[0]) {
					t.Errorf("record %d has %d fields, the header %d: %q", i, len(rec), len(recs[0]), rec)
					continue
				}
				if i > 0 {
					specs[rec[4]]++
				}
			}
			if specs["native"] != 2 || specs["auto"] != 2 || specs[fixed] != 2 {
				t.Errorf("cold.csv's variants: %v", specs)
			}
		})
	}
}

// TestClientCChurn: 2,000 communicators duplicated, used 1-100 times with
// mixed sizes and freed, every one set up by the library
// (DPML_SETUP_AFTER=0; DPML_SETUP_WORLD=defer, else the duplicates would
// share MPI_COMM_WORLD's engine), 1,000 split with world's ranks
// reversed (-churn-comm reversed: never shared, each set up with world's
// engine alive), and 60 reversed splits used 150-400 times (-uses), set
// up midway once their calls pass DPML_SETUP_AFTER: every result right,
// the calls -uses asks for, and no descriptor, mapping or
// memory kept per communicator (growth from the first tenth to the end:
// no descriptor, at most 64 mappings and 32 MiB for the Go runtime's own
// growth, where an engine kept per freed communicator would add a mapping
// each; the segments themselves never have a name: see dpml's
// TestSetupKilledLeavesNoSegment). Mutation: delete_state not releasing
// the engine (dpmlGoRelease) -> mappings grow by about 1,800.
func TestClientCChurn(t *testing.T) {
	setupClient(t)
	for _, c := range []struct {
		name  string
		env   []string
		comms string
		args  []string
	}{
		{"dup", []string{"DPML_SETUP_AFTER=0", "DPML_SETUP_WORLD=defer"}, "2000", nil},
		// Communicators of world's ranks in another order never share
		// world's engine: each is set up and released.
		{"reversed", []string{"DPML_SETUP_AFTER=0"}, "1000", []string{"-churn-comm", "reversed"}},
		// Communicators used long enough to be set up midway (after 2 ms
		// of calls), then freed.
		{"midway", []string{"DPML_SETUP_AFTER=2ms"}, "60", []string{"-churn-comm", "reversed", "-uses", "150:400"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"-pattern", "churn", "-comms", c.comms, "-sizes", "4,1K,64K", "-check"}, c.args...)
			r := runClient(t, withLib(), c.env, args...)
			if r.code != 0 {
				t.Fatalf("exit code %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			res := regexp.MustCompile(`resources auto: .* fds ([+-]\d+), mappings ([+-]\d+), rss ([+-]\d+) KiB`).FindStringSubmatch(r.stdout)
			if res == nil || !regexp.MustCompile(`auto +`+c.comms+` comms`).MatchString(r.stdout) || strings.Count(r.stdout, "#wrong 0") != 2 {
				t.Fatalf("output:\n%s\n%s", r.stdout, r.stderr)
			}
			if i := slices.Index(c.args, "-uses"); i >= 0 {
				// The calls: communicator k makes lo + 37k mod (hi-lo+1).
				var lo, hi int
				fmt.Sscanf(c.args[i+1], "%d:%d", &lo, &hi)
				n, _ := strconv.Atoi(c.comms)
				want := 0
				for k := range n {
					want += lo + 37*k%(hi-lo+1)
				}
				if !strings.Contains(r.stdout, fmt.Sprintf(" comms %10d calls", want)) {
					t.Errorf("want %d calls per variant:\n%s", want, r.stdout)
				}
			}
			fds, _ := strconv.Atoi(res[1])
			maps, _ := strconv.Atoi(res[2])
			rss, _ := strconv.Atoi(res[3])
			if fds > 0 || maps > 64 || rss > 32<<10 {
				t.Errorf("per-communicator growth: fds %+d, mappings %+d, rss %+d KiB\n%s", fds, maps, rss, r.stdout)
			}
		})
	}
}

// TestClientCFormats: each -format prints, live, the same rows that
// dpmlbench's renderer prints from the results.json of the same run (the
// two clients' formats agree byte for byte); the run without -out writes
// the default folder, bench/results/local-<UTC time>/c-<pattern>; a
// passed -check says so. One process (an MPI singleton): native runs, the
// library's plans are skipped, so the skipped rows are compared too.
func TestClientCFormats(t *testing.T) {
	setupClient(t)
	for _, format := range bench.Formats {
		t.Run(format, func(t *testing.T) {
			r := runSingleton(t, withLib(), "-format", format, "-sizes", "8,1K,64K", "-variants", "native,dpml:l=1", "-check",
				"-time", "1ms", "-min-iters", "4", "-max-iters", "8", "-batches", "2")
			if r.code != 0 {
				t.Fatalf("exit code %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			found, err := filepath.Glob(filepath.Join(r.dir, "bench", "results", "local-*", "c-b2b", bench.JSONFile))
			if err != nil || len(found) != 1 || !regexp.MustCompile(`/local-\d{8}T\d{6}Z/c-b2b/`).MatchString(found[0]) {
				t.Fatalf("default folder: %v %v\n%s", found, err, r.stdout)
			}
			if !strings.Contains(r.stdout, "-check: 3 points checked, 0 wrong elements") {
				t.Errorf("no check line:\n%s", r.stdout)
			}
			table := captureStdout(t, func() int { return mainStatus([]string{"table", "-format", format, "-in", found[0]}, io.Discard) })
			live, want := formatRows(r.stdout, format), formatRows(table, format)
			if len(want) < 4 || strings.Join(live, "\n") != strings.Join(want, "\n") {
				t.Errorf("live rows differ from dpmlbench table -format %s:\n--- live\n%s\n--- table\n%s", format,
					strings.Join(live, "\n"), strings.Join(want, "\n"))
			}
			if format == bench.FormatTable && !strings.Contains(strings.Join(live, "\n"), "1.000 0") {
				t.Errorf("table: no passed check (#wrong 0) on native's rows:\n%s", r.stdout)
			}
		})
	}
}

// formatRows keeps the lines of a client's output that a format prints:
// its header and rows, without the run's header and the closing lines. The
// table format is the clients' own, whose column widths and notes differ
// (the C client names a variant by its spec): of it the numbers of the
// measured rows are kept.
func formatRows(out, format string) []string {
	var rows []string
	in := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "# ratio = ") || strings.HasPrefix(line, "# busbw = ") || strings.HasPrefix(line, "# Avg, Min"):
			in = true
		case line == "" || strings.HasPrefix(line, "-check:"):
			in = false
		}
		if !in {
			continue
		}
		if format == bench.FormatTable && !strings.HasPrefix(line, "#") {
			if strings.Contains(line, "skipped: ") {
				continue
			}
			f := strings.Fields(line)
			line = strings.Join(f[:min(12, len(f))], " ")
		}
		rows = append(rows, line)
	}
	return rows
}
