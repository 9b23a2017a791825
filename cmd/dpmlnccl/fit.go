package main

import (
	"bytes"
	"flag"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/nccl"
)

// cmdFit: forced-channel sweeps (pass 0) -> the plugin's built-in data on
// stdout, and optionally a tuning table, the picks and the atlas.
func cmdFit(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("fit", flag.ContinueOnError)
	link := fs.String("link", "", "the GPUs' link: nvlink or pcie (required: the sweep does not record it)")
	gpu := fs.String("gpu", "", "GPU model of the key (default: the sweep's gpu0)")
	machine := fs.String("machine", "", "machine description for the provenance (default: the sweep's host and GPUs)")
	source := fs.String("source", "", "where the sweep files come from, for the provenance (default: their names)")
	tablePath := fs.String("table", "", "also write the picks as a tuning table (DPML_NCCL_TABLE)")
	md := fs.String("md", "", "also write the picks as a Markdown table")
	atlas := fs.String("atlas", "", "also draw the atlas (PNG, SVG or PDF): the fastest forced channel count per size and collective")
	improve := fs.Float64("improve", 0, "margin a forced count must win by (median over runs; 0: 3%)")
	defCh := fs.Int("default-channels", 0, "channels of NCCL's default communicator on this machine (its \"N coll channels\" INFO line): from 2 MiB up, buckets left to NCCL where the floor's count ran slower answer it (0: not known)")
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fs.SetOutput(os.Stderr)
			fs.PrintDefaults()
			return err
		}
		return usageError{strings.TrimSpace(err.Error())}
	}
	files := fs.Args()
	if len(files) == 0 || *link == "" {
		return usageError{"usage: dpmlnccl fit -link nvlink|pcie [-gpu MODEL] [-machine TEXT] [-source TEXT] [-default-channels N] [-table t.json] [-md picks.md] [-atlas atlas.png] sweep.csv... > builtin.json"}
	}
	var sweeps []*nccl.Sweep
	for _, f := range files {
		sw, err := readSweepFile(f)
		if err != nil {
			return err
		}
		sweeps = append(sweeps, sw)
	}
	picks, lay, err := nccl.FitForced(sweeps, nccl.FitOptions{Improve: *improve})
	if err != nil {
		return err
	}
	m0 := sweeps[0].Meta
	for i, sw := range sweeps[1:] {
		for _, k := range []string{"nccl_version", "gpus", "gpu0"} {
			if sw.Meta[k] != m0[k] {
				return fmt.Errorf("%s: %s %q, the first file says %q: one machine and NCCL per fit", files[i+1], k, sw.Meta[k], m0[k])
			}
		}
	}
	key := nccl.Machine{GPUs: lay.Ranks, Nodes: lay.Nodes, GPU: *gpu, Link: *link}
	if key.GPU == "" {
		key.GPU = m0["gpu0"]
	}
	desc := *machine
	if desc == "" {
		desc = fmt.Sprintf("%s: %s x %s", orDash(m0["host"]), orDash(m0["gpus"]), orDash(m0["gpu0"]))
	}
	colls := map[string]bool{}
	for _, p := range picks {
		colls[p.Coll] = true
	}
	var cl []string
	for c := range colls {
		cl = append(cl, c)
	}
	sort.Strings(cl)
	floor, noFloor := nccl.FitFloor(picks, nccl.FitOptions{Improve: *improve})
	floorNote := "no channel floor: " + noFloor
	if floor != nil {
		floorNote = fmt.Sprintf("channel floor %d: the forced count that does best in the largest %d size buckets of every collective, "+
			"never slower than the default in their medians", floor.Channels, nccl.FloorBuckets)
		if *defCh > 0 && floor.Channels > *defCh {
			floorNote += fmt.Sprintf("; from 2^%d up, a bucket left to NCCL where the floor's count ran slower than the default answers the default communicator's %d channels",
				nccl.DefaultAnswerMinLog2, *defCh)
		}
	}
	picks = nccl.AnswerDefault(picks, floor, *defCh)
	src := *source
	if src == "" {
		src = strings.Join(files, " ")
	}
	prov := nccl.BuiltinProvenance{
		Machine: desc,
		NCCL:    nccl.VersionString(m0["nccl_version"]),
		Date:    m0["date"],
		Measured: fmt.Sprintf("%s, %s %s, NCCL's default communicator against communicators with the channel count forced "+
			"(ncclsweep nccl@N: minCTAs = maxCTAs = N), %d run(s) paired run by run; a count is kept where its median speedup "+
			"is at least the margin and it lost in no run, elsewhere NCCL's default; %s", strings.Join(cl, ", "),
			orDash(m0["dtype"]), orDash(m0["op"]), len(sweeps), floorNote),
		Source:  src,
		Command: "dpmlnccl fit " + shellJoin(args),
	}
	b, err := nccl.FitBuiltin(picks, key, prov)
	if err != nil {
		return err
	}
	b.Floor = floor
	if err := b.Validate(); err != nil {
		return err
	}
	var out bytes.Buffer
	if err := b.Write(&out); err != nil {
		return err
	}
	if _, err := stdout.Write(out.Bytes()); err != nil {
		return err
	}
	if *md != "" {
		var t strings.Builder
		fmt.Fprintf(&t, "forced channel counts against NCCL's default: %s x %s, NCCL %s, %d run(s)\n\n", orDash(m0["gpus"]), orDash(m0["gpu0"]),
			nccl.VersionString(m0["nccl_version"]), len(sweeps))
		nccl.WriteForcedPicks(&t, picks, lay.Ranks)
		if floor != nil {
			fmt.Fprintf(&t, "\nchannel floor (minCTAs at communicator creation): %s\n", floor.Evidence)
		} else {
			fmt.Fprintf(&t, "\nchannel floor: none (%s)\n", noFloor)
		}
		if err := os.WriteFile(*md, []byte(t.String()), 0o644); err != nil {
			return err
		}
	}
	if *tablePath != "" {
		tb, err := nccl.ForcedTable(picks, lay, sweeps[0], "dpmlnccl fit "+shellJoin(args))
		if err != nil {
			return err
		}
		var tbuf bytes.Buffer
		if err := tb.Write(&tbuf); err != nil {
			return err
		}
		if err := os.WriteFile(*tablePath, tbuf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if *atlas != "" {
		fl := 0
		if floor != nil {
			fl = floor.Channels
		}
		if err := plotFitAtlas(*atlas, picks, lay, m0, fl); err != nil {
			return err
		}
	}
	return nil
}

// plotFitAtlas draws, per collective, the fastest forced channel count
// per size (solid) and the answer kept (dashed; 0 = NCCL's default), and
// the channel floor (grey; 0: none).
func plotFitAtlas(path string, picks []nccl.ForcedPick, lay nccl.Layout, meta map[string]string, floor int) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("channel atlas: %d x %s, NCCL %s (forced channels vs default)", lay.Ranks, orDash(meta["gpu0"]),
		nccl.VersionString(meta["nccl_version"]))
	p.X.Label.Text = "message size (bytes)"
	p.Y.Label.Text = "channels (answer 0 = NCCL's default)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = sizeTicks{}
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	byColl := map[string][2]plotter.XYs{}
	var order []string
	for _, pk := range picks {
		x := math.Exp2(float64(pk.Log2))
		v, ok := byColl[pk.Coll]
		if !ok {
			order = append(order, pk.Coll)
		}
		v[0] = append(v[0], plotter.XY{X: x, Y: float64(pk.Best)})
		v[1] = append(v[1], plotter.XY{X: x, Y: float64(pk.Channels)})
		byColl[pk.Coll] = v
	}
	colors := []color.Color{color.RGBA{B: 200, A: 255}, color.RGBA{R: 200, A: 255}, color.RGBA{G: 150, A: 255}}
	var ss []series
	for i, c := range order {
		col := colors[i%len(colors)]
		ss = append(ss, series{name: c + ": fastest forced count", xy: byColl[c][0], color: col, width: 2},
			series{name: c + ": answer", xy: byColl[c][1], color: col, dash: true})
	}
	if floor > 0 && len(picks) > 0 {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, pk := range picks {
			x := math.Exp2(float64(pk.Log2))
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
		ss = append(ss, series{name: fmt.Sprintf("channel floor (%d)", floor), xy: plotter.XYs{{X: lo, Y: float64(floor)}, {X: hi, Y: float64(floor)}},
			color: color.Gray{Y: 120}, width: 1})
	}
	if err := addLines(p, ss); err != nil {
		return err
	}
	return p.Save(9*vg.Inch, 5*vg.Inch, path)
}

// runSet is a repeatable -run LABEL=FILE,FILE,... flag.
type runSet struct {
	labels []string
	files  map[string][]string
}

func (r *runSet) String() string { return strings.Join(r.labels, ",") }

func (r *runSet) Set(v string) error {
	label, list, ok := strings.Cut(v, "=")
	if !ok || label == "" || list == "" {
		return fmt.Errorf("want LABEL=FILE,FILE,...")
	}
	if r.files == nil {
		r.files = map[string][]string{}
	}
	if _, dup := r.files[label]; dup {
		return fmt.Errorf("label %s given twice", label)
	}
	r.labels = append(r.labels, label)
	r.files[label] = splitList(list)
	return nil
}

// cmdCompare: alternated runs of several configurations (each run one
// sweep file) -> per collective and size the median over runs, the ratio
// to the first configuration, and the criteria.
func cmdCompare(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	var runs runSet
	fs.Var(&runs, "run", "LABEL=sweep.csv,sweep.csv#VARIANT,... (repeat; the first label is the baseline; #VARIANT takes one variant of a file of several)")
	forced := fs.String("forced", "", "forced-channel sweeps (comma-separated): the headroom the criteria use")
	md := fs.String("md", "", "also write the comparison to this file")
	gain := fs.Float64("gain", 1.03, "criterion: at least this ratio where the forced sweep shows -headroom")
	headroom := fs.Float64("headroom", 1.05, "forced-sweep speedup that makes a size demand -gain")
	floor := fs.Float64("floor", 0.98, "criterion: at least this ratio at every size")
	paired := fs.Bool("paired", false, "the labels' K-th files are one run (variants of one process, FILE#VARIANT): the ratio is the median of the per-run ratios")
	if err := parse(fs, args); err != nil {
		return err
	}
	if len(runs.labels) < 2 {
		return usageError{"give at least two -run LABEL=FILES (the first is the baseline)"}
	}
	type key struct {
		coll  string
		bytes int64
	}
	med := map[string]map[key][]float64{} // label -> key -> per-run medians (seconds)
	// byRun: label -> run index -> key -> median (for -paired).
	byRun := map[string][]map[key]float64{}
	var meta map[string]string
	for _, l := range runs.labels {
		med[l] = map[key][]float64{}
		if *paired && len(runs.files[l]) != len(runs.files[runs.labels[0]]) {
			return usageError{fmt.Sprintf("-paired: %s has %d files, %s %d: one per run each", l, len(runs.files[l]), runs.labels[0], len(runs.files[runs.labels[0]]))}
		}
		for _, spec := range runs.files[l] {
			f, variant, _ := strings.Cut(spec, "#")
			sw, err := readSweepFile(f)
			if err != nil {
				return err
			}
			if meta == nil {
				meta = sw.Meta
			}
			if variant == "" {
				if vs := sw.Variants(); len(vs) != 1 {
					return fmt.Errorf("%s: %d variants (%s): one per run file, or name one (FILE#VARIANT)", f, len(vs), strings.Join(vs, ", "))
				}
			} else if !hasVariant(sw, variant) {
				return fmt.Errorf("%s: no variant %s (it has %s)", f, variant, strings.Join(sw.Variants(), ", "))
			}
			run := map[key]float64{}
			for _, r := range sw.Rows {
				if variant != "" && r.Variant != variant {
					continue
				}
				if r.Check == "fail" {
					return fmt.Errorf("%s: %s %s at %d bytes: wrong results", f, r.Variant, r.Coll, r.Bytes)
				}
				k := key{r.Coll, r.Bytes}
				med[l][k] = append(med[l][k], r.Seconds())
				run[k] = r.Seconds()
			}
			byRun[l] = append(byRun[l], run)
		}
	}
	head := map[key]float64{} // by coll and bucket start
	if *forced != "" {
		var sweeps []*nccl.Sweep
		for _, f := range splitList(*forced) {
			sw, err := readSweepFile(f)
			if err != nil {
				return err
			}
			sweeps = append(sweeps, sw)
		}
		picks, _, err := nccl.FitForced(sweeps, nccl.FitOptions{})
		if err != nil {
			return err
		}
		for _, p := range picks {
			head[key{p.Coll, int64(p.Log2)}] = p.Speedup
		}
	}
	base := runs.labels[0]
	var keys []key
	for k := range med[base] {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].coll != keys[j].coll {
			return keys[i].coll < keys[j].coll
		}
		return keys[i].bytes < keys[j].bytes
	})
	var w bytes.Buffer
	how := "the ratio to " + base
	if *paired {
		how = "the median over runs of each run's ratio to its own " + base + " (paired: variants of one process)"
	}
	fmt.Fprintf(&w, "%s x %s, NCCL %s: bus bandwidth GB/s, median over runs of each run's median; in parentheses %s\n\n",
		orDash(meta["gpus"]), orDash(meta["gpu0"]), nccl.VersionString(meta["nccl_version"]), how)
	fmt.Fprintf(&w, "| coll | bytes | forced headroom |")
	for _, l := range runs.labels {
		fmt.Fprintf(&w, " %s (%d runs) |", l, len(runs.files[l]))
	}
	fmt.Fprintf(&w, "\n| :--- | ---: | ---: |%s\n", strings.Repeat(" ---: |", len(runs.labels)))
	ranks := 2
	fmt.Sscan(meta["gpus"], &ranks)
	type verdict struct {
		below, missed []string
		lowest        float64
	}
	verdicts := map[string]*verdict{}
	for _, l := range runs.labels[1:] {
		verdicts[l] = &verdict{lowest: math.Inf(1)}
	}
	for _, k := range keys {
		h, hok := head[key{k.coll, int64(nccl.Bucket(uint64(k.bytes)))}]
		hs := "-"
		if hok {
			hs = fmt.Sprintf("%.3f", h)
		}
		fmt.Fprintf(&w, "| %s | %s | %s |", k.coll, config.FormatBytes(k.bytes), hs)
		bt := median(med[base][k])
		for i, l := range runs.labels {
			t := median(med[l][k])
			bw := busbw(k.coll, k.bytes, t, ranks)
			if i == 0 || math.IsNaN(t) {
				fmt.Fprintf(&w, " %s |", fmtBW(bw))
				continue
			}
			ratio := bt / t
			if *paired {
				var rs []float64
				for i, run := range byRun[l] {
					a, ok1 := byRun[base][i][k]
					b, ok2 := run[k]
					if ok1 && ok2 && b > 0 {
						rs = append(rs, a/b)
					}
				}
				ratio = median(rs)
			}
			fmt.Fprintf(&w, " %s (%.3f) |", fmtBW(bw), ratio)
			v := verdicts[l]
			v.lowest = math.Min(v.lowest, ratio)
			at := fmt.Sprintf("%s %s (%.3f)", k.coll, config.FormatBytes(k.bytes), ratio)
			if ratio < *floor {
				v.below = append(v.below, at)
			}
			if hok && h >= *headroom && ratio < *gain {
				v.missed = append(v.missed, at)
			}
		}
		fmt.Fprintln(&w)
	}
	fmt.Fprintln(&w)
	for _, l := range runs.labels[1:] {
		v := verdicts[l]
		ok := len(v.below) == 0 && len(v.missed) == 0
		res := "MEETS"
		if !ok {
			res = "MISSES"
		}
		fmt.Fprintf(&w, "%s vs %s: %s (>= %.2f everywhere, >= %.2f where the forced sweep shows >= %.2f; lowest ratio %.3f)", l, base, res,
			*floor, *gain, *headroom, v.lowest)
		if len(v.below) > 0 {
			fmt.Fprintf(&w, "; below %.2f at %s", *floor, strings.Join(v.below, ", "))
		}
		if len(v.missed) > 0 {
			fmt.Fprintf(&w, "; headroom not taken at %s", strings.Join(v.missed, ", "))
		}
		if len(head) == 0 {
			fmt.Fprintf(&w, " (no -forced sweep: the gain criterion was not checked)")
		}
		fmt.Fprintln(&w)
	}
	if _, err := stdout.Write(w.Bytes()); err != nil {
		return err
	}
	if *md != "" {
		return os.WriteFile(*md, w.Bytes(), 0o644)
	}
	return nil
}

// shellJoin joins args as a shell would read them back: an argument with
// anything but letters, digits and -_./=,:@+ is single-quoted.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		plain := a != ""
		for _, r := range a {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=,:@+", r)) {
				plain = false
				break
			}
		}
		if plain {
			out[i] = a
		} else {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

func hasVariant(sw *nccl.Sweep, v string) bool {
	for _, x := range sw.Variants() {
		if x == v {
			return true
		}
	}
	return false
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// busbw is nccl-tests' bus bandwidth in GB/s: bytes/time times 2(n-1)/n
// for allreduce, (n-1)/n for reduce-scatter and allgather.
func busbw(coll string, n int64, sec float64, ranks int) float64 {
	if !(sec > 0) || ranks < 1 {
		return math.NaN()
	}
	f := float64(ranks-1) / float64(ranks)
	if coll == "allreduce" {
		f *= 2
	}
	return float64(n) / sec / 1e9 * f
}
