package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/nccl"
)

func readSweepFile(path string) (*nccl.Sweep, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sw, err := nccl.ReadSweep(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return sw, nil
}

func cmdTable(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("table", flag.ContinueOnError)
	in := fs.String("in", "", "sweep.csv of ncclsweep with nccl@COMM and C@COMM variants (required)")
	out := fs.String("out", "", "the tuning table to write (required)")
	comm := fs.String("comm", "", "communicator setting whose rows make the table (default: the one of the fixed-answer rows)")
	atlas := fs.String("atlas", "", "PNG (or SVG, PDF) of the channel atlas to write")
	forced := fs.String("forced", "", "more sweep CSVs (comma-separated) for the atlas's communicator-wide channel counts (nccl@N rows)")
	md := fs.String("md", "", "also write the Markdown table of picks to this file")
	note := fs.String("note", "", "note for the table's provenance")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *in == "" || *out == "" {
		return usageError{"-in and -out are required"}
	}
	sw, err := readSweepFile(*in)
	if err != nil {
		return err
	}
	tb, picks, err := nccl.BuildTable(sw, nccl.BuildOptions{Comm: *comm, Note: *note,
		Command: "dpmlnccl table " + strings.Join(args, " ")})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := tb.Write(&buf); err != nil {
		return err
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	var text bytes.Buffer
	writePicks(&text, sw, picks, commOf(tb.Provenance.Layout))
	fmt.Fprintf(&text, "\ntable: %s (%d entries; %s)\n", *out, len(tb.Entries), tb.Provenance.Layout)
	if _, err := stdout.Write(text.Bytes()); err != nil {
		return err
	}
	if *md != "" {
		if err := os.WriteFile(*md, text.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if *atlas != "" {
		sweeps := []*nccl.Sweep{sw}
		for _, p := range splitList(*forced) {
			s, err := readSweepFile(p)
			if err != nil {
				return err
			}
			sweeps = append(sweeps, s)
		}
		if err := plotAtlas(*atlas, sweeps, picks, tb.Provenance.MPI); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "atlas: %s\n", *atlas)
	}
	return nil
}

// commOf returns the communicator setting from a provenance layout "1x2, min32".
func commOf(layout string) string {
	if _, c, ok := strings.Cut(layout, ", "); ok {
		return c
	}
	return "?"
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func gbs(n int64, sec float64, ranks int) float64 {
	if !(sec > 0) {
		return math.NaN()
	}
	return float64(n) / sec / 1e9 * 2 * float64(ranks-1) / float64(max(ranks, 1))
}

func fmtBW(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// writePicks prints the table's choice per bucket with the evidence.
func writePicks(w io.Writer, sw *nccl.Sweep, picks []nccl.Pick, comm string) {
	ranks := 2
	if len(sw.Rows) > 0 {
		ranks = sw.Rows[0].Ranks
	}
	fmt.Fprintf(w, "bus bandwidth GB/s (median; a bucket of several sizes: their mean time)\n\n")
	fmt.Fprintf(w, "| bytes | NCCL default (nccl@dflt) | NCCL on nccl@%s | best fixed | GB/s | table answer | GB/s | vs default |\n", comm)
	fmt.Fprintf(w, "| ---: | ---: | ---: | :--- | ---: | :--- | ---: | ---: |\n")
	for _, p := range picks {
		n := p.Sizes[0]
		label := config.FormatBytes(n)
		if p.Coll != "" && p.Coll != "allreduce" {
			label = p.Coll + " " + label
		}
		if len(p.Sizes) > 1 {
			label += fmt.Sprintf(" (+%d)", len(p.Sizes)-1)
		}
		ratio := "-"
		if p.Default > 0 && p.Time > 0 {
			ratio = fmt.Sprintf("%.3f", p.Default/p.Time)
		}
		best := "-"
		if p.BestTime > 0 {
			best = p.Best.String()
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", label,
			fmtBW(gbs(n, p.Default, ranks)), fmtBW(gbs(n, p.Native, ranks)), best, fmtBW(gbs(n, p.BestTime, ranks)),
			p.Choice, fmtBW(gbs(n, p.Time, ranks)), ratio)
	}
}

func cmdReport(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	in := fs.String("in", "", "sweep.csv of ncclsweep (required)")
	base := fs.String("base", nccl.DefaultVariant, "the variant ratios are taken against")
	plotPath := fs.String("plot", "", "PNG (or SVG, PDF) of bus bandwidth against size to write")
	md := fs.String("md", "", "also write the report to this file")
	minRatio := fs.Float64("min", 0.98, "the criterion: plugin variants at or above this ratio at every size")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *in == "" {
		return usageError{"-in is required"}
	}
	sw, err := readSweepFile(*in)
	if err != nil {
		return err
	}
	var text bytes.Buffer
	colls := sw.Colls()
	for _, c := range colls {
		if len(colls) > 1 {
			fmt.Fprintf(&text, "### %s\n\n", c)
		}
		if err := writeReport(&text, sw.ForColl(c), *base, *minRatio); err != nil {
			return fmt.Errorf("%s: %w", c, err)
		}
		if len(colls) > 1 {
			fmt.Fprintln(&text)
		}
	}
	if _, err := stdout.Write(text.Bytes()); err != nil {
		return err
	}
	if *md != "" {
		if err := os.WriteFile(*md, text.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if *plotPath != "" {
		if err := plotBusBW(*plotPath, sw.ForColl(colls[0])); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "plot: %s\n", *plotPath)
	}
	return nil
}

func isPluginVariant(v string) bool {
	return strings.HasPrefix(v, "plugin@") || strings.HasPrefix(v, "model@")
}

func writeReport(w io.Writer, sw *nccl.Sweep, base string, minRatio float64) error {
	vars := sw.Variants()
	found := false
	for _, v := range vars {
		found = found || v == base
	}
	if !found {
		return fmt.Errorf("no rows of the base variant %q (variants: %s)", base, strings.Join(vars, ", "))
	}
	m := sw.Meta
	fmt.Fprintf(w, "ncclsweep %s on %s (%s x %s), NCCL %s, %s\n", orDash(m["label"]), orDash(m["host"]), orDash(m["gpus"]), orDash(m["gpu0"]),
		nccl.VersionString(m["nccl_version"]), orDash(m["date"]))
	fmt.Fprintf(w, "bus bandwidth GB/s (median of %s samples); in parentheses: speed relative to %s; plugin answers after the slash\n\n", orDash(m["reps"]), base)
	fmt.Fprintf(w, "| bytes |")
	for _, v := range vars {
		fmt.Fprintf(w, " %s |", v)
	}
	fmt.Fprintf(w, "\n| ---: |%s\n", strings.Repeat(" ---: |", len(vars)))
	for _, n := range sw.Sizes() {
		fmt.Fprintf(w, "| %s |", config.FormatBytes(n))
		for _, v := range vars {
			r, ok := sw.Row(v, n)
			if !ok {
				fmt.Fprintf(w, " - |")
				continue
			}
			cell := fmtBW(r.BusBW)
			if r.Check == "fail" {
				cell += " FAIL"
			}
			if v != base {
				if s, ok := sw.Speedup(v, base, n); ok {
					cell += fmt.Sprintf(" (%.2f)", s)
				}
			}
			if isPluginVariant(v) && r.TunerChoice != "" && r.TunerChoice != "-" {
				cell += " /" + r.TunerChoice
			}
			fmt.Fprintf(w, " %s |", cell)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	for _, v := range vars {
		if !isPluginVariant(v) {
			continue
		}
		lo, loAt := math.Inf(1), int64(0)
		var below, above []string
		for _, n := range sw.Sizes() {
			s, ok := sw.Speedup(v, base, n)
			if !ok {
				continue
			}
			if s < lo {
				lo, loAt = s, n
			}
			if s < minRatio {
				below = append(below, fmt.Sprintf("%s (%.3f)", config.FormatBytes(n), s))
			}
			if s > 1.02 {
				above = append(above, fmt.Sprintf("%s (%.3f)", config.FormatBytes(n), s))
			}
		}
		if math.IsInf(lo, 1) {
			continue
		}
		verdict := "meets"
		if len(below) > 0 {
			verdict = "MISSES"
		}
		fmt.Fprintf(w, "%s vs %s: %s >= %.2f at every size (lowest %.3f at %s)", v, base, verdict, minRatio, lo, config.FormatBytes(loAt))
		if len(below) > 0 {
			fmt.Fprintf(w, "; below at %s", strings.Join(below, ", "))
		}
		if len(above) > 0 {
			fmt.Fprintf(w, "; faster by > 2%% at %s", strings.Join(above, ", "))
		} else {
			fmt.Fprintf(w, "; faster by > 2%% nowhere")
		}
		fmt.Fprintln(w)
	}
	var fails []string
	for _, r := range sw.Rows {
		if r.Check == "fail" {
			fails = append(fails, fmt.Sprintf("%s at %s", r.Variant, config.FormatBytes(r.Bytes)))
		}
	}
	if len(fails) > 0 {
		fmt.Fprintf(w, "RESULT CHECKS FAILED: %s\n", strings.Join(fails, ", "))
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func cmdShow(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("show", flag.ContinueOnError)
	ranks := fs.Int("ranks", 2, "ranks of the communicator")
	nodes := fs.Int("nodes", 1, "nodes of the communicator")
	policy := fs.String("policy", "auto", "DPML_NCCL_POLICY: auto, model, off, C[/ALGO/PROTO]")
	table := fs.String("table", "", "DPML_NCCL_TABLE")
	collName := fs.String("coll", "", "one collective (default: all)")
	gpu := fs.String("gpu", "", "GPU model for the built-in data (what the plugin detects by NVML)")
	link := fs.String("link", "", "link for the built-in data: nvlink or pcie")
	floorSetting := fs.String("floor", "auto", "DPML_NCCL_FLOOR: auto, off or N")
	hostGPUs := fs.Int("host-gpus", 0, "GPUs of the host, for the floor (default: the communicator's ranks on one node, else unknown)")
	if err := parse(fs, args); err != nil {
		return err
	}
	s, err := nccl.ParseSettings(*policy, *table)
	if err != nil {
		return err
	}
	s.GPU, s.Link = *gpu, *link
	p, err := nccl.New(s, nccl.Layout{Ranks: *ranks, Nodes: *nodes})
	fmt.Fprintf(stdout, "%d ranks on %d nodes: %s\n", *ranks, *nodes, p.Source)
	if err != nil {
		fmt.Fprintf(stdout, "error: %v (the plugin answers NCCL's default)\n", err)
	}
	fset, err := nccl.ParseFloorSetting(*floorSetting)
	if err != nil {
		return err
	}
	hg := *hostGPUs
	if hg == 0 && *nodes == 1 {
		hg = *ranks
	}
	fd, err := nccl.DecideFloor(nccl.FloorQuery{Ranks: *ranks, HostGPUs: hg, Settings: s, Floor: fset})
	switch {
	case err != nil:
		fmt.Fprintf(stdout, "channel floor: none: %v\n", err)
	case fd.Channels > 0:
		fmt.Fprintf(stdout, "channel floor (minCTAs at creation, library preloaded): %d (%s)\n", fd.Channels, fd.Source)
	default:
		fmt.Fprintf(stdout, "channel floor: none (%s)\n", fd.Source)
	}
	colls := []nccl.Coll{nccl.AllReduce, nccl.AllGather, nccl.ReduceScatter, nccl.Broadcast, nccl.Reduce}
	if *collName != "" {
		c, err := nccl.ParseColl(*collName)
		if err != nil {
			return err
		}
		colls = []nccl.Coll{c}
	}
	fmt.Fprintf(stdout, "%-10s", "bytes")
	for _, c := range colls {
		fmt.Fprintf(stdout, " %-16s", c)
	}
	fmt.Fprintln(stdout)
	for b := 0; b <= 34; b++ {
		fmt.Fprintf(stdout, "%-10s", config.FormatBytes(int64(1)<<b))
		for _, c := range colls {
			fmt.Fprintf(stdout, " %-16s", p.Choice(c, b))
		}
		fmt.Fprintln(stdout)
	}
	return nil
}

// bestPerSize returns, per size, the rows' best (smallest median) among
// those keep accepts, and the channel count val gives it.
func bestPerSize(sweeps []*nccl.Sweep, keep func(*nccl.SweepRow) (int, bool)) map[int64]int {
	type best struct {
		med float64
		ch  int
	}
	bs := map[int64]best{}
	for _, sw := range sweeps {
		for i := range sw.Rows {
			r := &sw.Rows[i]
			if r.Check == "fail" {
				continue
			}
			ch, ok := keep(r)
			if !ok {
				continue
			}
			if b, seen := bs[r.Bytes]; !seen || r.Median < b.med {
				bs[r.Bytes] = best{r.Median, ch}
			}
		}
	}
	out := map[int64]int{}
	for n, b := range bs {
		out[n] = b.ch
	}
	return out
}

func sortedSizes(m map[int64]int) []int64 {
	var out []int64
	for n := range m {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
