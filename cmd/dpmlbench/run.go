package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/dpmlgo/dpml/internal/tools/results"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/dpmlgo/dpml/dpml"
	"github.com/dpmlgo/dpml/internal/runtime/gosched"
	"github.com/dpmlgo/dpml/internal/tools/bench"
	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/plan"
)

// runConfig is the parsed command line of the run subcommand.
type runConfig struct {
	sizesFlag   string
	sizes       []int
	typ         string
	opName      string
	variants    []string
	leaders     []int // may hold bench.LeadersMax
	pipelines   []int
	policy      bench.Policy
	warmup      int
	tuneCalls   int
	rotate      bool
	rotateBytes int // 0: from the LLC size
	check       bool
	phases      bool
	membw       bool
	membwBytes  int
	out         string // "" none
	plots       bool
	progress    bool
	samples     bool
	quiet       bool
	segBytes    int
	intra       dpml.Intra
	offload     plan.Offload // forced on the fixed dpml plans (auto: the engine's choice)
	interleave  bool
	pattern     string  // bench.Pattern*
	format      string  // bench.Format*: how rows are printed
	skewUS      float64 // skew: busy compute before a call, uniform in 0..skewUS
	seed        uint64  // skew: seed of the delays
	batches     int     // b2b: samples per point
	perCall     bool    // b2b: also time every call of a batch
}

// defaultOut stands for results.DefaultOutDir, which needs the start time
// and the pattern.
const defaultOut = "bench/results/local-<UTC time>/go-<pattern>"

func parseRunFlags(args []string) (*runConfig, error) {
	fs := newFlagSet("run", "mpirun -np N dpmlbench [run] [flags]")
	c := &runConfig{}
	fs.StringVar(&c.sizesFlag, "sizes", bench.DefaultSizes, "message sizes per rank in bytes: a list like 4,1K,64K and/or ranges FROM:TO[:xF|:+S]")
	typ := fs.String("type", "float32", "element type: int8..int64, uint8..uint64, float32, float64")
	op := fs.String("op", "sum", "reduction: sum, prod, min, max, land, lor, lxor, band, bor, bxor")
	variants := fs.String("variants", "native,dpml,auto", "variants to run: native (MPI_Allreduce), dpml (fixed l,k grid), auto (engine's choice)")
	leaders := fs.String("leaders", "1,2,4,8,max", "leader counts l of the fixed dpml plans (max: the engine's limit; larger values are skipped)")
	pipes := fs.String("pipeline", "1,2,4", "pipeline depths k of the fixed dpml plans")
	fs.DurationVar(&c.policy.Target, "time", bench.DefaultPolicy.Target, "timed duration wanted per (size, variant) point")
	fs.IntVar(&c.policy.Min, "min-iters", bench.DefaultPolicy.Min, "at least this many timed iterations per point")
	fs.IntVar(&c.policy.Max, "max-iters", bench.DefaultPolicy.Max, "at most this many timed iterations per point")
	fs.IntVar(&c.warmup, "warmup", 3, "warm-up iterations per point (rank 0 times them to choose the iteration count)")
	fs.IntVar(&c.tuneCalls, "tune-calls", 100, "untimed calls of the auto variant per point before warm-up, so the engine's tuner settles")
	fs.BoolVar(&c.rotate, "rotate", false, "rotate through buffer windows whose total exceeds the last-level cache (cache-cold data)")
	rot := fs.String("rotate-bytes", "", "total bytes of the rotated send+receive buffers (default: max(64M, 2 x LLC))")
	fs.BoolVar(&c.check, "check", false, "check every result of every variant bitwise against the native result (exact integer-valued inputs)")
	fs.BoolVar(&c.phases, "phases", false, "record DPML per-phase times (max over ranks, median over iterations)")
	fs.BoolVar(&c.membw, "membw", false, "run the memory-bandwidth probe first and report the bandwidth floor")
	mbw := fs.String("membw-bytes", results.FormatSize(bench.DefaultMemBWBytes), "membw: bytes per array per rank")
	fs.StringVar(&c.out, "out", defaultOut, "directory for results.json, results.csv and PNG plots (none: write nothing)")
	fs.BoolVar(&c.plots, "plots", true, "write PNG plots into -out")
	fs.BoolVar(&c.progress, "progress", false, "show a progress bar even when stderr is not a terminal")
	fs.BoolVar(&c.samples, "samples", false, "store every per-iteration sample in results.json")
	fs.BoolVar(&c.interleave, "interleave", true, "time the variants of a size in rounds, one iteration of each per round, in an order shuffled for each round (false: one block per variant)")
	fs.BoolVar(&c.quiet, "quiet", false, "print only the closing summary, not the table rows as they come")
	seg := fs.String("segment-bytes", "0", "DPML shared-memory slot size per rank, and the segment size of the fixed dpml plans (0: engine default)")
	intra := fs.String("intra", "auto", "intra-node data path of the fixed dpml plans: auto (engine rule), shm (copies through shared memory) or cma (cross-memory attach)")
	offload := fs.String("offload", "auto", "inter-node step of the fixed dpml plans: auto (the engine's rule), sharp (the in-network offload DPML_OFFLOAD attached; calls it cannot take run on the host) or host")
	pattern := fs.String("pattern", results.PatternB2B, "how calls are made: b2b (back to back in batches, as applications and OSU call: a sample is a batch's average per call, max over ranks), barrier (a barrier before each timed call) or skew (each rank busy-computes 0..-skew us before each call; the time inside the call, max over ranks)")
	format := fs.String("format", bench.FormatTable, "how rows are printed as sizes finish: table (min, median, mean, p99, IQR, ratio to the MPI library, #wrong), nccl (nccl-tests' columns: size, count, type, redop, time, algbw, busbw, #wrong) or osu (OSU's: size, avg, min, max latency, iterations)")
	fs.Float64Var(&c.skewUS, "skew", 20, "skew: upper bound in microseconds of each rank's random busy compute before a call")
	fs.Uint64Var(&c.seed, "seed", 1, "skew: seed of the delays (the same delays as dpmlbench-c with the same seed)")
	fs.IntVar(&c.batches, "batches", 10, "b2b: the timed calls of a point run in this many batches, each one sample (fewer when there are fewer calls)")
	fs.BoolVar(&c.perCall, "percall", true, "b2b: also time every call of a batch (one clock read after each call) for per-call min and median")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	var err error
	fail := func(e error) (*runConfig, error) { return nil, usagef("%v", e) }
	if c.sizes, err = bench.ParseSizes(c.sizesFlag); err != nil {
		return fail(err)
	}
	if c.typ, err = bench.ParseType(*typ); err != nil {
		return fail(err)
	}
	sizesSet := false
	fs.Visit(func(f *flag.Flag) { sizesSet = sizesSet || f.Name == "sizes" })
	if es := elemSize(c.typ); !sizesSet {
		// The default list starts at 4 bytes: keep whole elements.
		c.sizes = slices.DeleteFunc(c.sizes, func(n int) bool { return n%es != 0 })
	} else if err := bench.CheckElemSizes(c.sizes, es); err != nil {
		return fail(fmt.Errorf("-sizes %s with -type %s: %w", c.sizesFlag, c.typ, err))
	}
	if c.opName, err = bench.ParseOp(*op); err != nil {
		return fail(err)
	}
	if c.variants, err = bench.ParseVariants(*variants); err != nil {
		return fail(err)
	}
	if c.leaders, err = bench.ParseLeaders(*leaders); err != nil {
		return fail(err)
	}
	if c.pipelines, err = bench.ParsePositiveInts("pipeline", *pipes); err != nil {
		return fail(err)
	}
	if err := c.policy.Validate(); err != nil {
		return fail(err)
	}
	if c.warmup < 1 {
		return fail(fmt.Errorf("warmup %d < 1", c.warmup))
	}
	if *rot != "" {
		if c.rotateBytes, err = bench.ParseSize(*rot); err != nil {
			return fail(fmt.Errorf("rotate-bytes: %w", err))
		}
	}
	if c.membwBytes, err = bench.ParseSize(*mbw); err != nil || c.membwBytes < 8 {
		return fail(fmt.Errorf("membw-bytes %q: want a size >= 8", *mbw))
	}
	switch *intra {
	case "auto":
		c.intra = dpml.IntraAuto
	case "shm":
		c.intra = dpml.IntraShm
	case "cma":
		c.intra = dpml.IntraCMA
	default:
		return fail(fmt.Errorf("-intra %q: want auto, shm or cma", *intra))
	}
	if c.offload, err = plan.ParseOffload(*offload); err != nil {
		return fail(fmt.Errorf("-offload %q: want auto, sharp or host", *offload))
	}
	if c.segBytes, err = bench.ParseSize(*seg); err != nil {
		return fail(fmt.Errorf("segment-bytes: %w", err))
	}
	if c.out == "none" {
		c.out = ""
	}
	if c.pattern, err = results.ParsePattern(*pattern); err != nil {
		return fail(err)
	}
	if c.format, err = bench.ParseFormat(*format); err != nil {
		return fail(err)
	}
	if !(c.skewUS >= 0) || c.skewUS > 1e7 {
		return fail(fmt.Errorf("-skew %g: want microseconds >= 0", c.skewUS))
	}
	if c.batches < 1 {
		return fail(fmt.Errorf("-batches %d < 1", c.batches))
	}
	return c, nil
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// cmdRun is the sweep.
func cmdRun(args []string) error {
	cfg, err := parseRunFlags(args)
	if err != nil {
		return err
	}
	start := time.Now()
	world, err := initMPI()
	if err != nil {
		return err
	}
	defer mpi.Finalize()
	// Rank 0 writes the results: find out now, not after the whole run,
	// whether it can.
	if err := checkOutDir(world, cfg.outDir(start)); err != nil {
		return err
	}

	rep, sweepErr := runSweep(cfg, world, start)
	var writeErr error
	if world.Rank() == 0 && rep != nil {
		writeErr = finish(cfg, rep, start)
	}
	if sweepErr != nil {
		return sweepErr
	}
	return writeErr
}

// initMPI initializes MPI and records the rank for error printing.
func initMPI() (*mpi.Comm, error) {
	if _, err := mpi.Init(); err != nil {
		return nil, fmt.Errorf("MPI init: %w", err)
	}
	world := mpi.World()
	worldRank = world.Rank()
	return world, nil
}

// abort prints a fatal error of this rank and aborts the MPI job.
func abort(world *mpi.Comm, err error) {
	fmt.Fprintf(os.Stderr, "dpmlbench: rank %d: fatal: %v\n", world.Rank(), err)
	_ = mpi.Abort(world, 1)
	os.Exit(1)
}

// runEnv is what a sweep needs besides the element type.
type runEnv struct {
	cfg      *runConfig
	world    *mpi.Comm
	d        *dpml.Comm // nil when neither dpml nor auto runs
	op       mpi.Op
	variants []variantSpec
	layout   layout
	membw    *results.MemBW
	table    bench.RowWriter
	progress *bench.Progress
}

// variantSpec is one column of the sweep: native, a fixed plan or auto.
type variantSpec struct {
	name string        // bench.Variant*
	o    dpml.Override // fixed plan for dpml
}

func (v variantSpec) label() string {
	if v.name == results.VariantDPML {
		l := fmt.Sprintf("dpml l=%d k=%d", v.o.Leaders, v.o.Pipeline)
		if v.o.Offload != plan.OffloadAuto {
			l += " offload=" + v.o.Offload.String()
		}
		return l
	}
	return v.name
}

// runSweep runs everything collective: metadata, the membw probe, the
// sweep. It returns the report (on every rank; only rank 0's is printed and
// written). Errors it returns are *exitError values that every rank
// reports alike (bad -type/-op, failed checks); any other failure aborts
// the MPI job from the failing rank.
func runSweep(cfg *runConfig, world *mpi.Comm, start time.Time) (*results.Report, error) {
	rank := world.Rank()
	op, err := mpi.ParseOp(cfg.opName)
	if err != nil {
		return nil, &exitError{2, err}
	}
	if err := checkOpForType(cfg.typ, op); err != nil {
		return nil, &exitError{2, fmt.Errorf("-type %s -op %s: %w", cfg.typ, cfg.opName, err)}
	}
	lay, err := gatherLayout(world)
	if err != nil {
		abort(world, err)
	}
	defer lay.node.Free()

	env := &runEnv{cfg: cfg, world: world, op: op, layout: lay}
	rep := &results.Report{Meta: baseMeta(cfg, lay, start)}
	if cfg.rotate {
		rep.Meta.RotateBytes = cfg.rotateBytes
		if rep.Meta.RotateBytes == 0 {
			rep.Meta.RotateBytes = bench.RotateBytes(rep.Meta.LLCBytes)
		}
		cfg.rotateBytes = rep.Meta.RotateBytes
	}

	if cfg.membw {
		bw, err := probeMemBW(world, lay, cfg.membwBytes, 5)
		if err != nil {
			abort(world, err)
		}
		env.membw, rep.MemBW = bw, bw
		if rank == 0 {
			fmt.Printf("memory bandwidth per node (%d ranks each, %s per array): copy %.1f GB/s, triad %.1f GB/s (read+written bytes; one rank alone: copy %.1f GB/s)\n",
				lay.ppnMax, results.FormatSize(cfg.membwBytes), bw.CopyGBs, bw.TriadGBs, bw.SingleCopy)
		}
	}

	// The engine, once, if any DPML variant runs.
	if has(cfg.variants, results.VariantDPML) || has(cfg.variants, results.VariantAuto) {
		opts := phaseOptions(cfg.phases)
		if cfg.segBytes > 0 {
			opts = append(opts, dpml.WithSegmentBytes(cfg.segBytes))
		}
		d, err := dpml.New(world, opts...)
		if err != nil {
			// New fails on every rank when it fails on one.
			return nil, &exitError{1, fmt.Errorf("dpml.New: %w", err)}
		}
		env.d = d
		defer func() {
			if err := d.Close(); err != nil && rank == 0 {
				fmt.Fprintf(os.Stderr, "dpmlbench: dpml Close: %v\n", err)
			}
		}()
		rep.Meta.MaxLeaders = d.MaxLeaders()
		if info := d.Offload(); info.Backend != "" || info.Mode != "off" {
			rep.Meta.Offload = info.String()
		}
	}
	for _, v := range cfg.variants {
		switch v {
		case results.VariantNative:
			env.variants = append(env.variants, variantSpec{name: v})
		case results.VariantAuto:
			env.variants = append(env.variants, variantSpec{name: v})
		case results.VariantDPML:
			ls, dropped := bench.ResolveLeaders(cfg.leaders, env.d.MaxLeaders())
			if len(dropped) > 0 && rank == 0 {
				fmt.Fprintf(os.Stderr, "dpmlbench: skipping leader counts %v: more than the engine allows here (%d, the smallest ppn)\n", dropped, env.d.MaxLeaders())
			}
			rep.Meta.Leaders, rep.Meta.Pipelines = ls, cfg.pipelines
			for _, l := range ls {
				for _, k := range cfg.pipelines {
					env.variants = append(env.variants, variantSpec{name: v, o: dpml.Override{Leaders: l, Pipeline: k, Intra: cfg.intra, SegmentBytes: cfg.segBytes, Offload: cfg.offload}})
				}
			}
		}
	}
	if len(env.variants) == 0 {
		return nil, &exitError{2, errors.New("no variant left to run")}
	}

	if rank == 0 {
		elem := elemSize(cfg.typ)
		points := len(bench.ElementCounts(cfg.sizes, elem)) * len(env.variants)
		env.progress = bench.NewProgress(os.Stderr, points, cfg.progress || bench.IsTerminal(os.Stderr))
		if !cfg.quiet {
			printHeader(os.Stdout, rep)
			env.table = bench.NewRowWriter(os.Stdout, cfg.format, rep.Meta)
		}
	}

	results, err := sweepType(env)
	env.progress.Done()
	rep.Results = results
	if err != nil {
		// A failure of one rank inside a collective may leave the others
		// waiting in it: report and take the job down now, before the
		// deferred collective cleanups (Close, Free) could hang.
		abort(world, err)
	}
	rep.Meta.ElapsedSec = time.Since(start).Seconds()
	var mism int64
	for _, r := range results {
		mism += r.Mismatches
	}
	if mism > 0 {
		return rep, &exitError{1, fmt.Errorf("-check: %d mismatching elements (see the CHECK FAILED rows)", mism)}
	}
	return rep, nil
}

// outDir is the results directory ("" for none).
func (c *runConfig) outDir(start time.Time) string {
	if c.out == defaultOut {
		return results.DefaultOutDir(start, "go", c.pattern)
	}
	return c.out
}

// checkOutDir is collective: rank 0 makes dir and writes a probe file in
// it, and every rank returns the same usage error (exit status 2) when it
// cannot. ("" is no output: nothing to check.)
func checkOutDir(world *mpi.Comm, dir string) error {
	if dir == "" {
		return nil
	}
	var werr error
	ok := []int32{1}
	if world.Rank() == 0 {
		werr = probeDir(dir)
		if werr != nil {
			ok[0] = 0
		}
	}
	if err := mpi.Bcast(world, ok, 0); err != nil {
		return err
	}
	switch {
	case werr != nil:
		return usagef("-out %s: %v", dir, werr)
	case ok[0] == 0:
		return usagef("-out %s: rank 0 cannot write there", dir)
	}
	return nil
}

func probeDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".dpmlbench-probe-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// finish prints the summary and writes the files (rank 0).
func finish(cfg *runConfig, rep *results.Report, start time.Time) error {
	if rep.Meta.ElapsedSec == 0 {
		rep.Meta.ElapsedSec = time.Since(start).Seconds()
	}
	if cfg.quiet {
		printHeader(os.Stdout, rep)
		bench.WriteFormat(os.Stdout, rep, cfg.format)
	}
	if cfg.format == bench.FormatTable {
		fmt.Println()
		bench.WriteBest(os.Stdout, rep)
	}
	fmt.Printf("\n%d points in %.1f s\n", len(rep.Results), rep.Meta.ElapsedSec)
	if line := bench.CheckLine(rep.Results); line != "" {
		fmt.Println(line)
	}
	dir := cfg.outDir(start)
	if dir == "" {
		return nil
	}
	paths, err := bench.WriteAll(dir, rep, cfg.plots)
	for _, p := range paths {
		fmt.Printf("wrote %s\n", p)
	}
	if err != nil {
		return fmt.Errorf("writing results: %w", err)
	}
	return nil
}

// baseMeta fills the metadata known before the sweep.
func baseMeta(cfg *runConfig, lay layout, start time.Time) results.Meta {
	commit, dirty := bench.GitCommit(gitCommit)
	llc, _ := bench.LLCBytes()
	m := results.Meta{
		Tool:        "dpmlbench",
		Format:      results.FormatVersion,
		Command:     os.Args,
		CommandLine: results.ShellQuote(os.Args),
		Date:        start.Format(time.RFC3339),
		GoVersion:   runtime.Version(),
		GitCommit:   commit,
		GitDirty:    dirty,
		MPILibrary:  mpi.LibraryVersion(),
		Hosts:       bench.DistinctHosts(lay.rankHosts),
		RankHosts:   lay.rankHosts,
		Nodes:       lay.nodes,
		PPN:         lay.ppnMin,
		PPNMax:      lay.ppnMax,
		WorldSize:   len(lay.rankHosts),
		NumCPU:      runtime.NumCPU(),
		GOMAXPROCS:  runtime.GOMAXPROCS(0),
		GoSched:     gosched.Sched().String(),
		HostCPUs:    bench.HostCPUs(),
		Machine:     bench.Machine(),
		LLCBytes:    llc,
		Type:        cfg.typ,
		ElemSize:    elemSize(cfg.typ),
		Op:          cfg.opName,
		Sizes:       cfg.sizesFlag,
		Variants:    cfg.variants,
		TargetSec:   cfg.policy.Target.Seconds(),
		MinIters:    cfg.policy.Min,
		MaxIters:    cfg.policy.Max,
		Warmup:      cfg.warmup,
		Rotate:      cfg.rotate,
		Check:       cfg.check,
		Env:         bench.Env(bench.EnvPrefixes),
		Client:      "go",
		Pattern:     cfg.pattern,
	}
	switch cfg.pattern {
	case results.PatternSkew:
		m.SkewUS, m.Seed = cfg.skewUS, cfg.seed
	case results.PatternB2B:
		m.Batches, m.PerCall = cfg.batches, cfg.perCall
	}
	return m
}
