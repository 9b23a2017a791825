package main

import (
	"flag"
	"fmt"
	"github.com/dpmlgo/dpml/internal/tools/results"
	"os"
	"path/filepath"
	"strings"

	"github.com/dpmlgo/dpml/internal/tools/bench"
)

// cmdPlot redraws the plots of a results.json (e.g. fetched from the device
// machine) without MPI.
func cmdPlot(args []string) error {
	fs := newFlagSet("plot", "dpmlbench plot -in results.json [-out DIR]")
	in := fs.String("in", "", "results.json written by `dpmlbench run` (required)")
	out := fs.String("out", "", "directory for the PNGs (default: the directory of -in)")
	rep, err := readReport(fs, args, in)
	if err != nil {
		return err
	}
	dir := *out
	if dir == "" {
		dir = filepath.Dir(*in)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	paths, err := bench.WritePlots(dir, rep)
	if err != nil {
		return err
	}
	for _, p := range paths {
		fmt.Println(p)
	}
	return nil
}

// cmdTable prints the table of a results.json without MPI.
func cmdTable(args []string) error {
	fs := newFlagSet("table", "dpmlbench table -in results.json [-format table|nccl|osu | -md]")
	in := fs.String("in", "", "results.json written by dpmlbench or dpmlbench-c (required)")
	md := fs.Bool("md", false, "print only the Markdown table of ratios DPML / native (best fixed and auto) per size")
	format := fs.String("format", bench.FormatTable, "table (the clients' own, with the closing summary), nccl (nccl-tests' columns: size, count, type, redop, time, algbw, busbw, #wrong) or osu (OSU's: size, avg, min, max latency, iterations)")
	nccl := fs.Bool("nccl", false, "the same as -format nccl")
	rep, err := readReport(fs, args, in)
	if err != nil {
		return err
	}
	f, err := bench.ParseFormat(*format)
	if err != nil {
		return usagef("-%v", err)
	}
	if *nccl {
		f = bench.FormatNCCL
	}
	if *md {
		bench.WriteRatios(os.Stdout, rep)
		return nil
	}
	printHeader(os.Stdout, rep)
	bench.WriteFormat(os.Stdout, rep, f)
	if f == bench.FormatTable {
		fmt.Println()
		bench.WriteBest(os.Stdout, rep)
	}
	if line := bench.CheckLine(rep.Results); line != "" {
		fmt.Println(line)
	}
	return nil
}

// printHeader writes the run's metadata lines above a table.
func printHeader(w *os.File, rep *results.Report) {
	m := rep.Meta
	tool := m.Tool
	if tool == "" {
		tool = "dpmlbench"
	}
	fmt.Fprintf(w, "# %s: %s\n", tool, m.CommandLine)
	fmt.Fprintf(w, "# %s  %d node(s) x %d ranks (%d ranks), %d CPUs usable by rank 0 (%d on its host), hosts %v\n",
		m.Date, m.Nodes, m.PPN, m.WorldSize, m.NumCPU, m.HostCPUs, m.Hosts)
	fmt.Fprintf(w, "# measured: %s\n", m.How())
	if m.DPMLLibrary != "" {
		fmt.Fprintf(w, "# libdpml: %s\n", m.DPMLLibrary)
	} else if m.Client == "c" {
		fmt.Fprintf(w, "# libdpml.so was not loaded: native only\n")
	}
	fmt.Fprintf(w, "# type %s, op %s, rotate %v, check %v, commit %s%s\n", m.Type, m.Op, m.Rotate, m.Check, orDash(m.GitCommit), prefixed(", ", m.GoVersion))
	if m.GoSched != "" {
		fmt.Fprintf(w, "# GOMAXPROCS %d, %s\n", m.GOMAXPROCS, m.GoSched)
	}
	fmt.Fprintf(w, "# MPI: %s\n", firstLine(m.MPILibrary))
	if m.Offload != "" {
		fmt.Fprintf(w, "# offload: %s\n", m.Offload)
		if strings.Contains(m.Offload, "EMULATED") {
			fmt.Fprintf(w, "# EMULATED switch: offloaded times measure the emulation on this host, not SHArP\n")
		}
	}
	if rep.MemBW != nil {
		fmt.Fprintf(w, "# memory bandwidth per node (%s): copy %.1f GB/s, triad %.1f GB/s\n", rep.MemBW.Method, rep.MemBW.CopyGBs, rep.MemBW.TriadGBs)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' || c == ',' {
			return s[:i]
		}
	}
	return s
}

// readReport parses the offline subcommands' flags and reads the required
// -in results.json.
func readReport(fs *flag.FlagSet, args []string, in *string) (*results.Report, error) {
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if *in == "" {
		return nil, usagef("-in is required")
	}
	return results.ReadJSONFile(*in)
}

// prefixed returns p+s, or "" for an empty s.
func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}
