package main

import (
	"bytes"
	"errors"
	"github.com/dpmlgo/dpml/internal/tools/results"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/internal/tools/bench"
	"github.com/dpmlgo/dpml/internal/tools/launch"
	"github.com/dpmlgo/dpml/mpi"
)

func TestParseRunFlags(t *testing.T) {
	c, err := parseRunFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.typ != "float32" || c.opName != "sum" || !reflect.DeepEqual(c.variants, bench.AllVariants) ||
		c.sizes[0] != 4 || c.sizes[len(c.sizes)-1] != 64<<20 || c.out != defaultOut || c.policy != bench.DefaultPolicy {
		t.Errorf("defaults: %+v", c)
	}
	c, err = parseRunFlags(strings.Fields("-sizes 8,1K -type double -op MAX -variants auto,native -leaders 2,max -pipeline 4 -time 5ms -min-iters 2 -max-iters 7 -rotate -rotate-bytes 8M -out none -segment-bytes 64K"))
	if err != nil {
		t.Fatal(err)
	}
	if c.typ != "float64" || c.opName != "max" || c.sizes[0] != 8 || !reflect.DeepEqual(c.variants, []string{"native", "auto"}) ||
		!reflect.DeepEqual(c.leaders, []int{2, bench.LeadersMax}) || !reflect.DeepEqual(c.pipelines, []int{4}) ||
		c.policy != (bench.Policy{Target: 5 * time.Millisecond, Min: 2, Max: 7}) || !c.rotate || c.rotateBytes != 8<<20 ||
		c.out != "" || c.segBytes != 64<<10 {
		t.Errorf("parsed: %+v", c)
	}
	if c.pattern != results.PatternB2B || c.format != bench.FormatTable || c.skewUS != 20 || c.batches != 10 || !c.perCall {
		t.Errorf("pattern defaults: %+v", c)
	}
	c, err = parseRunFlags(strings.Fields("-pattern SKEW -skew 3.5 -seed 7 -batches 4 -percall=false"))
	if err != nil {
		t.Fatal(err)
	}
	if c.pattern != results.PatternSkew || c.skewUS != 3.5 || c.seed != 7 || c.batches != 4 || c.perCall {
		t.Errorf("pattern flags: %+v", c)
	}
	for _, bad := range []string{"-sizes 0", "-type complex64", "-op avg", "-variants nccl", "-leaders 0", "-pipeline x",
		"-min-iters 0", "-max-iters 1 -min-iters 5", "-warmup 0", "-rotate-bytes x", "-membw-bytes 4", "-nosuchflag", "extra",
		"-pattern osu", "-format csv", "-skew -1", "-skew x", "-batches 0", "-seed -1",

		// A size that is not a whole number of elements would otherwise be
		// measured as the next one silently (3 bytes of float32: 4).
		"-sizes 3", "-sizes 4,6 -type float32", "-sizes 8:64:+4 -type float64", "-sizes 17179869184G"} {
		if _, err := parseRunFlags(strings.Fields(bad)); !isUsage(err) {
			t.Errorf("%q: err = %v, want a usage error", bad, err)
		}
	}
}

// TestMain lets the test binary run as dpmlbench (DPMLBENCH_AS_MAIN=1), so
// tests can launch it as an MPI program without building it.
func TestMain(m *testing.M) {
	if os.Getenv("DPMLBENCH_AS_MAIN") == "1" {
		runtime.LockOSThread()
		os.Exit(mainStatus(os.Args[1:], os.Stderr))
	}
	// The C client's tests make few calls per size: libdpml.so sets up
	// at the first.
	if _, ok := os.LookupEnv("DPML_SETUP_AFTER"); !ok {
		os.Setenv("DPML_SETUP_AFTER", "0")
	}
	mpitest.Main(m)
}

func TestSizesWholeElements(t *testing.T) {
	// The default list (from 4 bytes) keeps the whole-element sizes.
	if c, err := parseRunFlags(strings.Fields("-type float64")); err != nil || c.sizes[0] != 16 {
		t.Errorf("default sizes with float64: %v, %v", c.sizes, err)
	}
	if c, err := parseRunFlags(strings.Fields("-sizes 3,5 -type int8 -out none")); err != nil || !reflect.DeepEqual(c.sizes, []int{3, 5}) {
		t.Errorf("int8 sizes 3,5: %v, %v", c, err)
	}
	_, err := parseRunFlags(strings.Fields("-sizes 3,4,6 -type float32"))
	if err == nil || !strings.Contains(err.Error(), "sizes 3,6 are not multiples of the 4-byte element") {
		t.Errorf("-sizes 3,4,6 float32: %v", err)
	}
}

// TestOutCheckedFirst: an -out directory rank 0 cannot write is a usage
// error (exit status 2) before the sweep, not a failure after the whole
// run.
func TestOutCheckedFirst(t *testing.T) {
	if mpitest.InRank() {
		t.Skip("parent-only test")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, launch.MainArg, "-nodes", "1", "-ppn", "2", "--", exe,
		"run", "-sizes", "4:4M:x4", "-time", "50ms", "-out", "/proc/nope")
	cmd.Env = append(os.Environ(), "DPMLBENCH_AS_MAIN=1")
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), "-out /proc/nope") {
		t.Fatalf("exit code %d, want 2 and a message about -out:\n%s", code, out)
	}
	if strings.Contains(string(out), "native") {
		t.Errorf("the sweep ran before -out was checked:\n%s", out)
	}
}

// TestHelp: -h before any subcommand lists the subcommands (a
// subcommand's -h lists its flags).
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"-help"}, {"--help"}, {"help"}} {
		var stderr bytes.Buffer
		code := mainStatus(args, &stderr)
		out := stderr.String()
		if code != 0 || !strings.Contains(out, "subcommands:") {
			t.Errorf("%v: status %d\n%s", args, code, out)
		}
		for _, sc := range subcommands {
			if !strings.Contains(out, "\n  "+sc.name+" ") {
				t.Errorf("%v: subcommand %s not listed:\n%s", args, sc.name, out)
			}
		}
	}
}

// TestOutDir: without -out the sweep writes the clients' default folder;
// -out none writes nothing.
func TestOutDir(t *testing.T) {
	start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ args, want string }{
		{"", "bench/results/local-20261127T120000Z/go-b2b"},
		{"-pattern skew", "bench/results/local-20261127T120000Z/go-skew"},
		{"-out none", ""},
		{"-out DIR", "DIR"},
	} {
		c, err := parseRunFlags(strings.Fields(tc.args))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.outDir(start); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestMainStatusOffline(t *testing.T) {
	var stderr bytes.Buffer
	if code := mainStatus([]string{"nosuch"}, &stderr); code != 2 || !strings.Contains(stderr.String(), "unknown subcommand") {
		t.Errorf("unknown subcommand: %d %q", code, stderr.String())
	}
	stderr.Reset()
	if code := mainStatus([]string{"calibrate"}, &stderr); code != 2 || !strings.Contains(stderr.String(), "-in is required") {
		t.Errorf("calibrate without -in: %d %q", code, stderr.String())
	}
	if code := mainStatus([]string{"plot"}, &stderr); code != 2 {
		t.Errorf("plot without -in: %d", code)
	}
	if code := mainStatus([]string{"run", "-sizes", "x"}, &stderr); code != 2 {
		t.Errorf("bad -sizes: %d", code)
	}
	// plot and table work from a results.json alone, without MPI.
	dir := t.TempDir()
	rep := &results.Report{Meta: results.Meta{Tool: "dpmlbench", Format: results.FormatVersion, Nodes: 2, PPN: 2, Type: "float32", Op: "sum"}}
	for _, b := range []int{4, 1024} {
		rep.Results = append(rep.Results,
			results.Result{Bytes: b, Count: b / 4, Variant: "native", Iters: 10, US: results.Summary{N: 10, Min: 1, Median: 2, Mean: 2, Max: 3}},
			results.Result{Bytes: b, Count: b / 4, Variant: "dpml", Leaders: 1, Pipeline: 1, Iters: 10, US: results.Summary{N: 10, Min: 1, Median: 1, Mean: 1, Max: 1}})
	}
	in := filepath.Join(dir, "results.json")
	if _, err := bench.WriteAll(dir, rep, false); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "plots")
	if code := mainStatus([]string{"plot", "-in", in, "-out", out}, &stderr); code != 0 {
		t.Fatalf("plot: %d %s", code, stderr.String())
	}
	for _, f := range []string{bench.LatencyPNG, bench.RatioPNG} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if code := mainStatus([]string{"table", "-in", in}, &stderr); code != 0 {
		t.Fatalf("table: %d %s", code, stderr.String())
	}
}

// The sweep itself, on 2 fake nodes x 2 ranks: every variant, -check,
// -phases, -membw, -samples.
func TestSweep2x2(t *testing.T) {
	mpitest.Run(t, 2, 2, func(t *testing.T, world *mpi.Comm) {
		cfg, err := parseRunFlags(strings.Fields("-sizes 4,4K,64K -check -phases -membw -membw-bytes 1M -time 2ms -min-iters 3 -max-iters 20 -warmup 2 -leaders 1,2,4,max -pipeline 1,2 -out none -quiet -samples -pattern barrier"))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := runSweep(cfg, world, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		m := rep.Meta
		if m.Nodes != 2 || m.PPN != 2 || m.WorldSize != 4 || len(m.Hosts) != 2 || m.MaxLeaders != 2 || !reflect.DeepEqual(m.Leaders, []int{1, 2}) || m.MPILibrary == "" {
			t.Errorf("meta: %+v", m)
		}
		if rep.MemBW == nil || rep.MemBW.CopyGBs <= 0 || rep.MemBW.TriadGBs <= 0 || len(rep.MemBW.PerNode) != 2 {
			t.Errorf("membw: %+v", rep.MemBW)
		}
		if len(rep.Results) != 3*(1+2*2+1) {
			t.Fatalf("%d results", len(rep.Results))
		}
		phases := 0
		for _, r := range rep.Results {
			if r.Skipped != "" {
				continue
			}
			if r.Check != "ok" || r.Mismatches != 0 || r.Iters < 3 || r.Iters > 20 || len(r.SamplesUS) != r.Iters ||
				r.US.Min <= 0 || r.US.Min > r.US.Median || r.US.Median > r.US.Max || r.FloorUS <= 0 {
				t.Errorf("result %s %s: %+v", results.FormatSize(r.Bytes), r.Label(), r)
			}
			if r.Variant != results.VariantNative && r.Plan == nil {
				t.Errorf("%s: no plan recorded", r.Label())
			}
			phases += len(r.Phases)
		}
		if phases == 0 {
			t.Error("-phases: no phase times recorded")
		}
	})
}

// Integer type, another op, rotation through buffer windows.
func TestSweepRotateInt32Max(t *testing.T) {
	mpitest.Run(t, 2, 2, func(t *testing.T, world *mpi.Comm) {
		cfg, err := parseRunFlags(strings.Fields("-type int32 -op max -rotate -rotate-bytes 1M -sizes 4:64K:x16 -check -variants native,dpml,auto -leaders max -pipeline 2 -time 2ms -min-iters 5 -max-iters 40 -out none -quiet"))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := runSweep(cfg, world, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Results) != 4*3 || rep.Meta.RotateBytes != 1<<20 {
			t.Fatalf("%d results, rotate %d", len(rep.Results), rep.Meta.RotateBytes)
		}
		for _, r := range rep.Results {
			if r.Skipped == "" && r.Check != "ok" {
				t.Errorf("%s %s: check %q", results.FormatSize(r.Bytes), r.Label(), r.Check)
			}
		}
	})
}

// A corrupted result must fail -check on every variant that is corrupted,
// and only there, in every call pattern.
func TestCheckDetectsCorruption(t *testing.T) {
	mpitest.Run(t, 2, 2, func(t *testing.T, world *mpi.Comm) {
		corruptForTest = true
		defer func() { corruptForTest = false }()
		for _, pattern := range results.Patterns {
			cfg, err := parseRunFlags(strings.Fields("-sizes 64 -check -leaders 1 -pipeline 1 -time 1ms -min-iters 2 -max-iters 4 -out none -quiet -pattern " + pattern))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := runSweep(cfg, world, time.Now())
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != 1 {
				t.Fatalf("%s: err = %v, want a check failure", pattern, err)
			}
			for _, r := range rep.Results {
				want := "mismatch"
				if r.Variant == results.VariantNative {
					want = "ok"
				}
				if r.Check != want {
					t.Errorf("%s, %s: check %q, want %q", pattern, r.Label(), r.Check, want)
				}
			}
		}
	})
}

// The b2b and skew patterns of the Go client: batch bookkeeping, per-call
// times, phases per call, checks (with rotation, so a batch's calls use
// different windows), and the report's metadata.
func TestSweepPatterns2x2(t *testing.T) {
	mpitest.Run(t, 2, 2, func(t *testing.T, world *mpi.Comm) {
		for _, args := range []string{
			"-pattern b2b -batches 3 -sizes 4,4K -rotate -rotate-bytes 1M -phases",
			"-pattern b2b -batches 4 -percall=false -sizes 64",
			"-pattern skew -skew 5 -seed 3 -sizes 4,4K",
		} {
			cfg, err := parseRunFlags(strings.Fields(args + " -check -leaders 1,2 -pipeline 1 -time 2ms -min-iters 5 -max-iters 13 -warmup 2 -tune-calls 5 -out none -quiet"))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := runSweep(cfg, world, time.Now())
			if err != nil {
				t.Fatalf("%s: %v", args, err)
			}
			m := rep.Meta
			if m.Client != "go" || m.Pattern != cfg.pattern || (cfg.pattern == results.PatternSkew) != (m.SkewUS == 5 && m.Seed == 3) ||
				(cfg.pattern == results.PatternB2B) != (m.Batches == cfg.batches) || m.PerCall != (cfg.pattern == results.PatternB2B && cfg.perCall) {
				t.Errorf("%s: meta %+v", args, m)
			}
			phases := 0
			for _, r := range rep.Results {
				if !r.OK() {
					t.Errorf("%s: %s %s skipped: %s", args, results.FormatSize(r.Bytes), r.Label(), r.Skipped)
					continue
				}
				if r.Check != "ok" || r.Iters < 5 || r.Iters > 13+cfg.batches || r.US.N < 1 || r.US.Min <= 0 || r.US.Min > r.US.Median {
					t.Errorf("%s: %s %s: %+v", args, results.FormatSize(r.Bytes), r.Label(), r)
				}
				switch cfg.pattern {
				case results.PatternB2B:
					// Iters calls in Batches batches of equal length.
					if r.Batches != r.US.N || r.Batches > cfg.batches || r.Iters%r.Batches != 0 {
						t.Errorf("%s: %s: %d calls in %d batches, %d samples", args, r.Label(), r.Iters, r.Batches, r.US.N)
					}
					if cfg.perCall != (r.PerCall != nil) {
						t.Errorf("%s: %s: per-call summary %v", args, r.Label(), r.PerCall)
					} else if pc := r.PerCall; pc != nil && (pc.N != r.Iters || pc.Min <= 0 || pc.Min > pc.Median || pc.Median > pc.Max) {
						t.Errorf("%s: %s: per-call summary %+v", args, r.Label(), *pc)
					}
				default:
					if r.Batches != 0 || r.PerCall != nil || r.US.N != r.Iters {
						t.Errorf("%s: %s: batches %d per-call %v samples %d calls %d", args, r.Label(), r.Batches, r.PerCall, r.US.N, r.Iters)
					}
				}
				phases += len(r.Phases)
			}
			if cfg.phases && phases == 0 {
				t.Errorf("%s: no phase times", args)
			}
		}
	})
}

// The skew delays: uniform in [0, S], the same sequence for the same seed
// and rank, a different one for another rank or seed.
func TestSkewer(t *testing.T) {
	a, b, c, d := newSkewer(1, 0, 20), newSkewer(1, 0, 20), newSkewer(1, 1, 20), newSkewer(2, 0, 20)
	const n = 20000
	var sum float64
	sameRank, otherRank, otherSeed := 0, 0, 0
	lo, hi := 1.0, 0.0
	for i := 0; i < n; i++ {
		x, y, z, w := a.delay(), b.delay(), c.delay(), d.delay()
		if x == y {
			sameRank++
		}
		if x == z {
			otherRank++
		}
		if x == w {
			otherSeed++
		}
		lo, hi = min(lo, x), max(hi, x)
		sum += x
	}
	if sameRank != n || otherRank > 2 || otherSeed > 2 {
		t.Errorf("equal draws: same seed and rank %d/%d, other rank %d, other seed %d", sameRank, n, otherRank, otherSeed)
	}
	if lo < 0 || hi > 20e-6 || lo > 0.1e-6 || hi < 19.9e-6 {
		t.Errorf("delays in [%g, %g] s, want [0, 20e-6]", lo, hi)
	}
	if mean := sum / n; mean < 9.7e-6 || mean > 10.3e-6 {
		t.Errorf("mean delay %g s, want 10e-6", mean)
	}
	if z := (skewer{maxUS: 0}); z.delay() != 0 {
		t.Error("-skew 0 must give no delay")
	}
}

func TestMemBWThreads(t *testing.T) {
	mpitest.Run(t, 2, 1, func(t *testing.T, world *mpi.Comm) {
		lay, err := gatherLayout(world)
		if err != nil {
			t.Fatal(err)
		}
		defer lay.node.Free()
		bw, err := probeMemBWThreads(world, lay, 1<<20, 2, 1)
		if err != nil {
			t.Fatal(err)
		}
		if bw.CopyGBs <= 0 || len(bw.PerNode) != 2 || bw.Method != "threads(1)" {
			t.Errorf("%+v", bw)
		}
	})
}

// TestCalibrateDeviceSweep fits the model to a committed device sweep and
// writes a tuning table the engine can load.
func TestCalibrateDeviceSweep(t *testing.T) {
	out := filepath.Join(t.TempDir(), "table.json")
	var stderr bytes.Buffer
	in := "../../costmodel/offline/testdata/run3-1x32.csv"
	if code := mainStatus([]string{"calibrate", "-in", in, "-out", out}, &stderr); code != 0 {
		t.Fatalf("calibrate: exit %d: %s", code, stderr.String())
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tb, err := costmodel.ReadTable(f)
	if err != nil {
		t.Fatal(err)
	}
	if tb.Model == nil || tb.Model.Validate() != nil {
		t.Fatalf("table without a valid model: %+v", tb.Model)
	}
}

// TestCold2x2: the cold pattern's table, back to back and behind a
// barrier, with a communicator made once and one per size: two rows per
// size (native, dpml), #wrong 0 (checked against sums computed in the
// test's program), the dpml row's plan named (the model may pick the MPI
// library's own: "native"). Mutation: the expected sum off by one ->
// runCold returns an error on every rank.
func TestCold2x2(t *testing.T) {
	mpitest.Run(t, 2, 2, func(t *testing.T, world *mpi.Comm) {
		for _, tc := range []struct{ barrier, fresh bool }{{false, false}, {true, true}} {
			var out strings.Builder
			if err := runCold(world, &out, []int{4, 4096, 65536}, 3, tc.barrier, tc.fresh); err != nil {
				t.Fatalf("%+v: %v", tc, err)
			}
			if world.Rank() != 0 {
				continue
			}
			rows := 0
			for _, line := range strings.Split(out.String(), "\n") {
				f := strings.Fields(line)
				if len(f) < 12 || (f[2] != "native" && f[2] != "dpml") {
					continue
				}
				rows++
				if f[10] != "0" {
					t.Errorf("%+v: wrong elements: %s", tc, line)
				}
				if f[2] == "dpml" && !strings.HasPrefix(f[11], "dpml:") && !strings.HasPrefix(f[11], "pipelined:") && f[11] != "native" {
					t.Errorf("%+v: dpml row without its plan: %s", tc, line)
				}
			}
			if rows != 6 {
				t.Errorf("%+v: %d rows, want 6:\n%s", tc, rows, out.String())
			}
		}
	})
}
