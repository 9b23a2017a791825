// Command dpmlbench compares the DPML allreduce with the MPI library's own
// MPI_Allreduce, OSU-style but with a sounder method: per-iteration samples
// (each the slowest rank's time of that iteration, barrier before each),
// iteration counts scaled to the message size and agreed by all ranks,
// min / median / mean / p99 / IQR, optional rotation through buffers larger
// than the last-level cache, bitwise result checks, per-phase engine times,
// a memory-bandwidth probe, and CSV / JSON / PNG output.
//
// Usage:
//
//	mpirun -np N dpmlbench [run] [flags]     the sweep (default subcommand)
//	mpirun -np N dpmlbench membw [flags]     memory bandwidth of every node
//	dpmlbench plot -in results.json -out DIR redraw the plots (no MPI)
//	dpmlbench table -in results.json [-md]   print a result table (no MPI)
//	dpmlbench calibrate -in CSV [-eval CSV]  fit the cost model (no MPI)
//	mpirun -np N dpmlbench tune -out T.json  run the tuner until it settles
//	mpirun -np N dpmlbench info              topology, leaders, offload backends found
//
// Run `dpmlbench <subcommand> -h` for the flags.
//
// # Method
//
// For every size, every variant runs on the same buffers in the same
// process: native (mpi.Allreduce on the world communicator), one dpml
// point per fixed (l, k) of -leaders x -pipeline (dpml.AllreduceWith; l
// larger than the engine's MaxLeaders is skipped), and auto (dpml.Allreduce).
// Each point runs -warmup calls (auto first runs -tune-calls untimed calls
// so its tuner settles), which rank 0 times to choose the number of timed
// iterations (-time / warm-up time, within -min-iters..-max-iters) and
// broadcasts it. Then the points of a size are timed round by round, one
// iteration of each per round in an order shuffled for the round (the same
// on every rank; -interleave; -interleave=false times each point in one
// block): drift of the machine touches every variant alike, and no variant
// always follows the same other one. -pattern chooses how the timed
// calls are made: b2b (default, as in dpmlbench-c; calls back to back in
// -batches batches, one barrier before each batch, a sample is a rank's
// average per call over the batch; -percall also times each call), barrier
// (a barrier before every call, a sample is one call), or skew (no barrier; each rank
// busy-computes a seeded random 0..-skew us before every call, a sample is
// the time inside the call). Applications call as b2b or skew; with a
// barrier before every call the numbers at small sizes are not what
// programs see. Times are MPI_Wtime on every rank; at the end of the size
// one MPI_MAX allreduce per point of the per-sample vector gives, per
// sample, the slowest rank's time, and the point reports min, median,
// mean, p99 and IQR over samples. The report's meta records the client
// ("go") and the pattern; bin/dpmlbench-c is the C client measuring
// MPI_Allreduce of a C program the same ways, writing the same report.
//
// With -check, inputs are small integers (exact in every type, so any
// reduction order gives the same bits), the native result of every buffer
// window is computed before the timed loops, every output buffer is
// poisoned before each call, and every result of every variant (warm-up
// included) is compared bitwise, except inside a b2b batch, where only the
// last call's result is (anything between the calls would defeat b2b);
// mismatches are reported and the exit status is 1. With -rotate, iteration j uses window j mod W of send and
// receive arenas of max(64 MiB, 2 x LLC) in total, so large messages are
// not cache-resident. -phases records the engine's per-phase times (max
// over ranks per iteration, median over iterations). -membw first measures
// every node's STREAM copy and triad bandwidth with all ranks running at
// once, and adds each size's memory-bandwidth floor.
//
// # Output
//
// Rank 0 prints the rows as sizes finish in the -format chosen: table (the
// default: min, median, mean, p99, IQR, ratio = variant median / native
// median, lower is better, and #wrong, then a closing summary: best fixed
// plan and auto, their ratios, the floor), nccl (nccl-tests' allreduce
// columns) or osu (OSU's latency columns), the same rows dpmlbench-c prints.
// With -check a closing line counts the points checked and the wrong
// elements. It writes results.json (all metadata: command line, hosts,
// nodes x ppn, CPUs and CPU model, MPI library, git commit, date, Go
// version, DPML_* and OMPI_MCA_* settings, membw), results.csv, latency.png
// and ratio.png into -out (default bench/results/local-<UTC time>/go-<pattern>,
// the layout of dpmlbench-c's c-<pattern>; -out none writes nothing).
// A progress bar goes to stderr when it is a terminal, or with -progress.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
)

// gitCommit may be set at link time: -ldflags "-X main.gitCommit=$(git rev-parse HEAD)".
var gitCommit string

// usageError is a command-line error (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// usagef returns a usageError.
func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

func isUsage(err error) bool {
	var ue *usageError
	return errors.As(err, &ue)
}

// exitError carries an exit status for errors that every rank already
// reported consistently (e.g. failed result checks).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

type subcommand struct {
	name, summary string
	run           func(args []string) error
}

var subcommands = []subcommand{
	{"run", "sweep message sizes, comparing native MPI_Allreduce with DPML plans (MPI; default)", cmdRun},
	{"membw", "measure the memory bandwidth of every node: STREAM copy and triad (MPI)", cmdMemBW},
	{"plot", "redraw the PNG plots from a results.json (no MPI)", cmdPlot},
	{"table", "print the result table of a results.json (no MPI)", cmdTable},
	{"calibrate", "fit the cost model to sweeps run with -phases and write it as a tuning table (no MPI)", cmdCalibrate},
	{"tune", "let the engine's tuner settle on every size and save its tuning table (MPI)", cmdTune},
	{"cold", "time each size's first calls, no untimed call before them: the MPI library against dpml (MPI)", cmdCold},
	{"info", "describe the job: topology, leaders per policy, offload backends found (libsharp, InfiniBand, MPI settings) (MPI)", cmdInfo},
}

func main() {
	// MPI is initialized with MPI_THREAD_FUNNELED: keep main on one thread
	// (package mpi also does this in its init).
	runtime.LockOSThread()
	os.Exit(mainStatus(os.Args[1:], os.Stderr))
}

// mainStatus dispatches to a subcommand and turns its error into an exit
// status. Errors are printed by rank 0 only (other ranks print fatal errors
// themselves before aborting; see fatalf).
func mainStatus(args []string, stderr io.Writer) int {
	// -h before any subcommand asks about the program: its subcommands
	// (the default subcommand's flags are `dpmlbench run -h`).
	if len(args) > 0 && (args[0] == "help" || isHelpFlag(args[0])) {
		if isRankZero() {
			usage(stderr)
		}
		return 0
	}
	name := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	for _, sc := range subcommands {
		if sc.name != name {
			continue
		}
		err := sc.run(args)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case isUsage(err):
			if isRankZero() {
				fmt.Fprintf(stderr, "dpmlbench %s: %v\n", name, err)
			}
			return 2
		}
		var ee *exitError
		if errors.As(err, &ee) {
			if isRankZero() {
				fmt.Fprintf(stderr, "dpmlbench %s: %v\n", name, ee.err)
			}
			return ee.code
		}
		if isRankZero() {
			fmt.Fprintf(stderr, "dpmlbench %s: %v\n", name, err)
		}
		return 1
	}
	if isRankZero() {
		fmt.Fprintf(stderr, "dpmlbench: unknown subcommand %q\n", name)
		usage(stderr)
	}
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: mpirun -np N dpmlbench [subcommand] [flags]")
	fmt.Fprintln(w, "subcommands:")
	for _, sc := range subcommands {
		fmt.Fprintf(w, "  %-10s %s\n", sc.name, sc.summary)
	}
	fmt.Fprintln(w, "run `dpmlbench SUBCOMMAND -h` for its flags (`dpmlbench run -h`: the sweep's)")
}

// isHelpFlag reports whether arg asks for help as the flag package reads it.
func isHelpFlag(arg string) bool {
	switch arg {
	case "-h", "-help", "--h", "--help":
		return true
	}
	return false
}

// rankEnv are the variables launchers set to the world rank, so a process
// can tell before MPI_Init whether it is rank 0 (for flag errors).
var rankEnv = []string{"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MPI_LOCALRANKID"}

// worldRank is set once MPI is initialized; -1 before.
var worldRank = -1

func isRankZero() bool {
	if worldRank >= 0 {
		return worldRank == 0
	}
	for _, k := range rankEnv {
		if v, ok := os.LookupEnv(k); ok {
			return v == "0"
		}
	}
	return true
}

// newFlagSet returns a flag set that prints its usage on rank 0 only and
// returns errors instead of exiting.
func newFlagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("dpmlbench "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		if !isRankZero() {
			return
		}
		fmt.Fprintf(os.Stderr, "usage: %s\n\nflags:\n", synopsis)
		fs.SetOutput(os.Stderr)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// parseFlags parses args; flag errors become usage errors, -h is
// flag.ErrHelp, and positional arguments are refused.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%v (see -h)", err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (see -h)", fs.Arg(0))
	}
	return nil
}
