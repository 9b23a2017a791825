package costmodel

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"github.com/dpmlgo/dpml/plan"
)

// BenchRow is one row of a dpmlbench results.csv that ran a fixed plan.
type BenchRow struct {
	bytes         int
	elem          ElemClass
	op            OpClass
	lay           Layout
	variant       plan.Variant
	leaders, pipe int
	segments      int
	median        float64 // seconds
	copyIn        float64 // seconds per call, 0 if absent
	reduce        float64
	copyOut       float64
}

// ReadBenchCSV reads the rows of a dpmlbench results.csv that ran a fixed
// plan (dpml with given l, or native); rows of the auto variant are skipped.
func ReadBenchCSV(r io.Reader) ([]BenchRow, error) {
	recs, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("costmodel: empty results CSV")
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	get := func(r []string, name string) string {
		if i, ok := col[name]; ok && i < len(r) {
			return r[i]
		}
		return ""
	}
	num := func(r []string, name string) float64 {
		v, _ := strconv.ParseFloat(get(r, name), 64)
		return v
	}
	var rows []BenchRow
	for _, r := range recs[1:] {
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
			b.elem = ElemFloat32
		case "float64":
			b.elem = ElemFloat64
		default:
			b.elem = ElemAny
		}
		b.op = OpClassOf(get(r, "op"))
		b.lay = Layout{int(num(r, "nodes")), int(num(r, "ppn"))}
		b.leaders, b.pipe = int(num(r, "plan_leaders")), int(num(r, "plan_pipeline"))
		b.segments = max(int(num(r, "plan_segments")), 1)
		b.median = num(r, "median_us") * 1e-6
		b.copyIn = num(r, "phase_copy-in_median_us") * 1e-6
		b.reduce = num(r, "phase_reduce_median_us") * 1e-6
		b.copyOut = num(r, "phase_copy-out_median_us") * 1e-6
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
