// Command dpmlnccl is the offline side of DPML's NCCL tuner plugin
// (package nccl): it turns cmd/ncclsweep's CSV into the tuning table the
// plugin reads and the channel atlas (best channel count against size),
// reports a sweep against NCCL's default, and prints the plugin's answers
// for a layout. It needs no GPU, no NCCL and no MPI (it also runs on the
// GPU machine between two sweeps: bench/nccl/device.sh).
//
// Usage:
//
//	dpmlnccl table  -in sweep.csv -out table.json [-comm min32] [-atlas atlas.png] [-forced a.csv,b.csv] [-md picks.md]
//	dpmlnccl report -in sweep.csv [-base nccl@dflt] [-plot busbw.png] [-md report.md] [-min 0.98]
//	dpmlnccl show   [-ranks 2] [-nodes 1] [-policy auto] [-table table.json] [-coll allreduce] [-gpu "NVIDIA H200" -link nvlink] [-floor auto] [-host-gpus N]
//	dpmlnccl fit    -link nvlink|pcie [-machine TEXT] [-source TEXT] [-table t.json] [-md picks.md] [-atlas atlas.png] sweep.csv... > nccl/builtin_NAME.json
//	dpmlnccl compare [-paired] -run default=a.csv,b.csv -run builtin=... [-run table=...] [-forced p0.csv,...] [-md cmp.md]
//
// fit: from forced-channel sweeps (ncclsweep nccl@dflt and nccl@N rows,
// one file per run), per collective and size bucket the channel count
// that beat NCCL's default by the margin in the median over runs and in
// no run lost (nccl.FitForced); writes the plugin's built-in data for the
// machine (GPU count and model from the sweep, -link given) to stdout, so
// regenerating the embedded data is one command; with the channel floor
// (nccl.FitFloor: the forced count that does best at the largest sizes)
// the preloaded library creates communicators with; -table writes the
// same picks as a DPML_NCCL_TABLE.
//
// compare: one sweep file per run and configuration, alternated on the
// machine; per collective and size the median over runs, the ratio to the
// first configuration, and the criteria (never below -floor; at least
// -gain where the forced sweep shows -headroom). FILE#VARIANT takes one
// variant of a file that has several; -paired pairs the labels' K-th
// files as one run (variants timed in turn in one process) and reports
// the median of the per-run ratios, which leaves out what differs from
// process to process.
//
// table: per size bucket, the fixed answer (C@COMM rows) that beat NCCL's
// own choice on the same communicators (nccl@COMM) by more than 3%, else
// NCCL's own (nccl.BuildTable); prints the picks as a Markdown table and
// draws the atlas: the best fixed per-call answer, the best communicator-
// wide channel count (nccl@N rows, from -in and -forced files), the
// table's answer and the built-in model's, per size.
//
// report: bus bandwidth of every variant per size and its ratio to -base;
// for each plugin variant (plugin@..., model@...) the smallest ratio, the
// sizes below -min and the sizes above 1.02: the criterion the plugin
// is held to is plugin >= 0.98 x NCCL's default at every size, and above
// it where the fixed answers show headroom.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

type subcommand struct {
	name, summary string
	run           func(args []string, stdout io.Writer) error
}

var subcommands = []subcommand{
	{"table", "build the plugin's tuning table and the channel atlas from a sweep CSV", cmdTable},
	{"report", "bus bandwidth per variant and size against NCCL's default", cmdReport},
	{"show", "print the plugin's answers for a layout (table or model)", cmdShow},
	{"fit", "forced-channel sweeps -> the plugin's built-in data (stdout), a table, the atlas", cmdFit},
	{"compare", "alternated runs of several configurations: medians, ratios, criteria", cmdCompare},
}

func main() { os.Exit(mainStatus(os.Args[1:], os.Stdout, os.Stderr)) }

func mainStatus(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, sc := range subcommands {
		if sc.name != args[0] {
			continue
		}
		err := sc.run(args[1:], stdout)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		}
		fmt.Fprintf(stderr, "dpmlnccl %s: %v\n", sc.name, err)
		var ue usageError
		if errors.As(err, &ue) {
			return 2
		}
		return 1
	}
	fmt.Fprintf(stderr, "dpmlnccl: unknown subcommand %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: dpmlnccl SUBCOMMAND [flags]")
	for _, sc := range subcommands {
		fmt.Fprintf(w, "  %-7s %s\n", sc.name, sc.summary)
	}
	fmt.Fprintln(w, "run `dpmlnccl SUBCOMMAND -h` for its flags")
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// parse parses flags into fs; errors are usage errors.
func parse(fs *flag.FlagSet, args []string) error {
	var buf bytes.Buffer
	fs.SetOutput(&buf)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stderr)
			fs.PrintDefaults()
			return err
		}
		return usageError{strings.TrimSpace(err.Error())}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}
