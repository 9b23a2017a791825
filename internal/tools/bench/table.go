package bench

import (
	"fmt"
	"github.com/dpmlgo/dpml/internal/tools/results"
	"io"
	"math"
	"strconv"
	"strings"
)

// Table writes the human-readable result table, size by size, so a long
// sweep shows its rows as they are measured.
type Table struct {
	w      io.Writer
	header bool
}

// NewTable returns a table writer on w.
func NewTable(w io.Writer) *Table { return &Table{w: w} }

// TableLegend defines the table's ratio and #wrong, the same line in both
// clients.
const TableLegend = "# ratio = median / the MPI library's (native) median, lower is better; #wrong: wrong elements (N/A: not checked)"

const tableFormat = "%8s  %-7s %4s %3s %6s %10s %10s %10s %10s %10s %7s %7s  %s"

func (t *Table) line(args ...any) {
	fmt.Fprintln(t.w, strings.TrimRight(fmt.Sprintf(tableFormat, args...), " "))
}

// Header writes the column header (once).
func (t *Table) Header() {
	if t.header {
		return
	}
	t.header = true
	fmt.Fprintln(t.w, TableLegend)
	t.line("size", "variant", "l", "k", "iters", "min_us", "median_us", "mean_us", "p99_us", "iqr_us", "ratio", "#wrong", "")
}

// Rows writes the rows of one size. ratio is the variant's median over the
// native median of the same size (< 1: faster than native); #wrong is the
// count of wrong elements when results were checked (0 shows a check
// passed), N/A otherwise. Failed checks, skipped points and phase times are
// also shown after the numbers.
func (t *Table) Rows(rs []results.Result) {
	t.Header()
	for _, r := range rs {
		native, _ := results.NativeOf(rs, r.Bytes)
		l, k := "-", "-"
		if r.Variant == results.VariantDPML {
			l, k = dash(r.Leaders), dash(r.Pipeline)
		} else if r.Variant == results.VariantAuto && r.Plan != nil {
			l, k = strconv.Itoa(r.Plan.Leaders), strconv.Itoa(r.Plan.Pipeline)
		}
		var notes []string
		if r.Spec != "" && r.Spec != r.Variant {
			notes = append(notes, "spec "+r.Spec)
		}
		if !r.OK() {
			t.line(results.FormatSize(r.Bytes), r.Variant, l, k, "-", "-", "-", "-", "-", "-", "-", "-", strings.Join(append(notes, "skipped: "+r.Skipped), " "))
			continue
		}
		if r.Check == "mismatch" {
			notes = append(notes, fmt.Sprintf("CHECK FAILED (%d elements)", r.Mismatches))
		}
		if p := r.Plan; p != nil {
			switch {
			case r.Variant == results.VariantAuto:
				notes = append(notes, "plan "+p.Variant)
			case p.Leaders != r.Leaders && r.Leaders != 0:
				notes = append(notes, fmt.Sprintf("active l=%d", p.Leaders))
			}
			if p.Passed != "" {
				notes = append(notes, "(passed to MPI: "+p.Passed+")")
			}
		}
		if pc := r.PerCall; pc != nil {
			notes = append(notes, fmt.Sprintf("per call min %s median %s", strings.TrimSpace(fmtUS(pc.Min)), strings.TrimSpace(fmtUS(pc.Median))))
		}
		t.line(results.FormatSize(r.Bytes), r.Variant, l, k, strconv.Itoa(r.Iters),
			fmtUS(r.US.Min), fmtUS(r.US.Median), fmtUS(r.US.Mean), fmtUS(r.US.P99), fmtUS(r.US.IQR()),
			fmtRatio(results.Ratio(r, native)), wrongCell(r), strings.Join(notes, " "))
		if len(r.Phases) > 0 {
			var b strings.Builder
			b.WriteString("          phases (median us, max over ranks):")
			for _, p := range r.Phases {
				fmt.Fprintf(&b, " %s=%s", p.Name, strings.TrimSpace(fmtUS(p.MedianUS)))
			}
			fmt.Fprintln(t.w, b.String())
		}
	}
}

// WriteTable writes the whole report as a table, grouped by size.
func WriteTable(w io.Writer, rep *results.Report) {
	t := NewTable(w)
	t.Header()
	for _, s := range rep.Sizes() {
		var rs []results.Result
		for _, r := range rep.Results {
			if r.Bytes == s {
				rs = append(rs, r)
			}
		}
		t.Rows(rs)
	}
}

// dash writes n, or "-" for 0 (not forced by the variant).
func dash(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// fmtUS formats microseconds with precision adapted to the magnitude.
func fmtUS(x float64) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "-"
	case math.Abs(x) < 100:
		return strconv.FormatFloat(x, 'f', 2, 64)
	case math.Abs(x) < 100000:
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strconv.FormatFloat(x, 'f', 0, 64)
}

func fmtRatio(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	return strconv.FormatFloat(x, 'f', 3, 64)
}

// WriteBest writes the closing summary: per size, the best fixed plan and
// auto with their ratios to native (median / native median, lower is
// better), and the memory-bandwidth floor when known.
func WriteBest(w io.Writer, rep *results.Report) {
	fmt.Fprintf(w, "%8s  %-16s %10s %8s  %10s %8s  %10s\n", "size", "best fixed plan", "median_us", "ratio", "auto_us", "ratio", "floor_us")
	for _, row := range summaryRows(rep) {
		s, native, best, okb, auto, oka := row.bytes, row.native, row.best, row.okBest, row.auto, row.okAuto
		bl, bm, bs := "-", "-", "-"
		if okb {
			bl, bm, bs = fmt.Sprintf("l=%d k=%d", best.Leaders, best.Pipeline), fmtUS(best.US.Median), fmtRatio(results.Ratio(best, native))
		}
		am, as := "-", "-"
		if oka {
			am, as = fmtUS(auto.US.Median), fmtRatio(results.Ratio(auto, native))
		}
		fl := "-"
		if native.FloorUS > 0 {
			fl = fmtUS(native.FloorUS)
		}
		fmt.Fprintf(w, "%8s  %-16s %10s %8s  %10s %8s  %10s\n", results.FormatSize(s), bl, bm, bs, am, as, fl)
	}
}

// BestFixed returns the fixed dpml plan with the lowest median at a size.
func BestFixed(rs []results.Result, bytes int) (results.Result, bool) {
	var best results.Result
	found := false
	for _, r := range rs {
		if r.Bytes == bytes && r.Variant == results.VariantDPML && r.OK() && (!found || r.US.Median < best.US.Median) {
			best, found = r, true
		}
	}
	return best, found
}

func find(rs []results.Result, bytes int, variant string) (results.Result, bool) {
	for _, r := range rs {
		if r.Bytes == bytes && r.Variant == variant && r.OK() {
			return r, true
		}
	}
	return results.Result{}, false
}

// WriteRatios writes a Markdown table of the ratios DPML / native (medians
// of the same run; below 1 is faster): best fixed plan and auto, per size,
// with auto's plan, auto / best, and the memory floor when measured.
func WriteRatios(w io.Writer, rep *results.Report) {
	fmt.Fprintln(w, "| size | native us | best fixed | us | ratio | auto plan | auto us | ratio | auto / best | floor us |")
	fmt.Fprintln(w, "| ---: | ---: | :--- | ---: | ---: | :--- | ---: | ---: | ---: | ---: |")
	for _, row := range summaryRows(rep) {
		s, native, best, okb, auto, oka := row.bytes, row.native, row.best, row.okBest, row.auto, row.okAuto
		cell := func(ok bool, f func() string) string {
			if !ok {
				return "-"
			}
			return f()
		}
		ratio := func(r results.Result) string { return fmtRatio(r.US.Median / native.US.Median) }
		fl := "-"
		if native.FloorUS > 0 {
			fl = fmtUS(native.FloorUS)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", results.FormatSize(s), fmtUS(native.US.Median),
			cell(okb, func() string { return fmt.Sprintf("l=%d k=%d", best.Leaders, best.Pipeline) }),
			cell(okb, func() string { return fmtUS(best.US.Median) }), cell(okb, func() string { return ratio(best) }),
			cell(oka && auto.Plan != nil, func() string { return planLabel(*auto.Plan) }),
			cell(oka, func() string { return fmtUS(auto.US.Median) }), cell(oka, func() string { return ratio(auto) }),
			cell(oka && okb, func() string { return fmtRatio(auto.US.Median / best.US.Median) }), fl)
	}
}

// planLabel is a plan's short name: "native", "dpml l=8" or "pipelined
// l=8 k=4", with "+cma" for cross-memory attach.
func planLabel(p results.PlanInfo) string {
	var s string
	switch p.Variant {
	case "native":
		return "native"
	case "dpml":
		s = fmt.Sprintf("dpml l=%d", p.Leaders)
	default:
		s = fmt.Sprintf("%s l=%d k=%d", p.Variant, p.Leaders, p.Pipeline)
	}
	switch {
	case p.CMA:
		s += "+cma"
	case p.Intra == "tree":
		s = fmt.Sprintf("tree r=%d", p.Radix)
		if p.Pipeline > 1 {
			s += fmt.Sprintf(" k=%d", p.Pipeline)
		}
	}
	return s
}

// summaryRow is one size of a summary: native, the best fixed plan and auto.
type summaryRow struct {
	bytes              int
	native, best, auto results.Result
	okBest, okAuto     bool
}

// summaryRows lists the sizes that have a native result, with the best
// fixed plan and auto where measured.
func summaryRows(rep *results.Report) []summaryRow {
	var out []summaryRow
	for _, s := range rep.Sizes() {
		native, ok := rep.Native(s)
		if !ok {
			continue
		}
		r := summaryRow{bytes: s, native: native}
		r.best, r.okBest = BestFixed(rep.Results, s)
		r.auto, r.okAuto = find(rep.Results, s, results.VariantAuto)
		out = append(out, r)
	}
	return out
}
