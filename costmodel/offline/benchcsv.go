package offline

import (
	"encoding/csv"
	"fmt"
	"github.com/dpmlgo/dpml/internal/tools/results"
	"io"
	"strconv"
	"strings"

	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/plan"
)

// BenchRow is one row of a dpmlbench results.csv that ran a fixed plan.
type BenchRow struct {
	bytes         int
	elem          costmodel.ElemClass
	op            costmodel.OpClass
	lay           costmodel.Layout
	variant       plan.Variant
	leaders, pipe int
	segments      int
	median        float64 // seconds
	copyIn        float64 // seconds per call, 0 if absent
	reduce        float64
	copyOut       float64
}

// benchColumns are the columns of dpmlbench's results.csv (internal/tools/results
// CSVHeader) that ReadBenchCSV reads on every row: a CSV without one of
// them is an error, so that a renamed column cannot read as zeros.
var benchColumns = []string{"bytes", "type", "op", "nodes", "ppn", "variant", "median_us",
	"plan_variant", "plan_leaders", "plan_pipeline", "plan_segments", "plan_cma"}

// phaseColumns are the per-phase medians ReadBenchCSV reads when present:
// dpmlbench writes a phase's column only with -phases and only when some
// plan of the run had that phase, so a missing one gives no samples of
// its kind.
var phaseColumns = []string{"phase_copy-in_median_us", "phase_reduce_median_us", "phase_copy-out_median_us"}

// ReadBenchCSV reads the rows of a dpmlbench results.csv that ran a fixed
// plan (dpml with given l, or native); rows of the auto variant and rows
// that moved data by cross-memory attach are skipped. A missing column of
// benchColumns, or a cell that is neither empty nor a number, is an error
// naming it; empty cells (a failed or skipped point) read as 0.
func ReadBenchCSV(r io.Reader) ([]BenchRow, error) {
	recs, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("offline: empty results CSV")
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	var missing []string
	for _, c := range benchColumns {
		if _, ok := col[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("offline: results CSV lacks column(s) %s (not a dpmlbench results.csv, or one from an older dpmlbench)",
			strings.Join(missing, ", "))
	}
	var line int
	var bad error
	get := func(r []string, name string) string {
		if i, ok := col[name]; ok && i < len(r) {
			return r[i]
		}
		return ""
	}
	num := func(r []string, name string) float64 {
		v := get(r, name)
		if v == "" {
			return 0
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil && bad == nil {
			bad = fmt.Errorf("offline: results CSV line %d, column %s: %q is not a number", line, name, v)
		}
		return x
	}
	var rows []BenchRow
	for i, r := range recs[1:] {
		line = i + 2
		var b BenchRow
		switch get(r, "variant") {
		case "native":
			b.variant = plan.Native
		case "dpml":
			b.variant = plan.DPML
		case "pipelined":
			b.variant = plan.Pipelined
		default:
			continue // auto: the plan is not fixed
		}
		if b.variant == plan.DPML && get(r, "plan_variant") == "pipelined" {
			b.variant = plan.Pipelined // dpmlbench's fixed grid names k > 1 "dpml" too
		}
		if get(r, "plan_cma") == "true" {
			continue // cross-memory attach: the model prices the copies
		}
		b.bytes = int(num(r, "bytes"))
		switch get(r, "type") {
		case "float32":
			b.elem = costmodel.ElemFloat32
		case "float64":
			b.elem = costmodel.ElemFloat64
		default:
			b.elem = costmodel.ElemAny
		}
		b.op = costmodel.OpClassOf(get(r, "op"))
		b.lay = costmodel.Layout{Nodes: int(num(r, "nodes")), PPN: int(num(r, "ppn"))}
		b.leaders, b.pipe = int(num(r, "plan_leaders")), int(num(r, "plan_pipeline"))
		b.segments = max(int(num(r, "plan_segments")), 1)
		b.median = num(r, "median_us") * 1e-6
		b.copyIn = num(r, phaseColumns[0]) * 1e-6
		b.reduce = num(r, phaseColumns[1]) * 1e-6
		b.copyOut = num(r, phaseColumns[2]) * 1e-6
		if bad != nil {
			return nil, bad
		}
		if b.variant == plan.Native {
			b.leaders, b.pipe = 1, 1
		}
		rows = append(rows, b)
	}
	return rows, nil
}

// SamplesFromBench maps dpmlbench rows (swept with -phases) to calibration
// samples (see doc.go). Plans that moved data by cross-memory attach are
// not told apart yet: calibrate from sweeps run with shared-memory copies.
func SamplesFromBench(rows []BenchRow) Samples {
	var s Samples
	for _, b := range rows {
		if b.variant == plan.Native {
			s.Native = append(s.Native, NativeSample{b.bytes, b.lay, b.median})
			continue
		}
		// The segment the run used, from its segment count.
		seg := (b.bytes + b.segments - 1) / b.segments
		seg = plan.CeilDiv(seg, plan.CacheLine) * plan.CacheLine
		pl := plan.Shape{Variant: b.variant, Leaders: b.leaders, Pipeline: b.pipe, SegmentBytes: seg, Intra: plan.IntraShm, Overlap: b.variant.Overlaps()}
		s.Calls = append(s.Calls, CallSample{pl, b.bytes, b.lay, b.elem, b.median})
		per := b.bytes / b.segments
		la, part := plan.Split(per, b.leaders, plan.CacheLine)
		if b.copyIn > 0 {
			s.Copy = append(s.Copy, CopySample{b.bytes, b.segments * la, b.copyIn})
		}
		if b.copyOut > 0 {
			s.Copy = append(s.Copy, CopySample{b.bytes, b.segments * la, b.copyOut})
		}
		if b.reduce > 0 {
			s.Reduce = append(s.Reduce, ReduceSample{part * b.segments, b.lay.PPN, b.segments, la, b.elem, b.reduce})
		}
	}
	return s
}

// TreeSamplesFromReport returns the reduction-tree calls of a results.json
// (dpmlbench or the C client, fixed plans "dpml:intra=tree,r=R") on one
// node: the samples fitTree needs. Other results, skipped points, runs on
// several nodes and plans of l > 1 trees (fitTree prices one) give none.
func TreeSamplesFromReport(rep *results.Report) []TreeSample {
	if rep == nil || rep.Meta.Nodes != 1 {
		return nil
	}
	elem := costmodel.ElemAny
	switch rep.Meta.Type {
	case "float32":
		elem = costmodel.ElemFloat32
	case "float64":
		elem = costmodel.ElemFloat64
	}
	var ts []TreeSample
	for _, r := range rep.Results {
		p := r.Plan
		if p == nil || p.Intra != "tree" || p.Leaders > 1 || r.Skipped != "" || p.Radix < 1 || r.Variant == "auto" || !ok(r.US.Median) {
			continue
		}
		ts = append(ts, TreeSample{Radix: p.Radix, Bytes: r.Bytes, PPN: rep.Meta.PPN, Elem: elem, Seconds: r.US.Median * 1e-6})
	}
	return ts
}
