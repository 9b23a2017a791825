package costmodel

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
)

// BenchRow is one row of a dpmlbench results.csv that ran a fixed plan.
type BenchRow struct {
	bytes         int
	elem          ElemClass
	op            OpClass
	lay           Layout
	variant       Variant
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
			b.variant = VariantNative
		case "dpml":
			b.variant = VariantDPML
		case "pipelined":
			b.variant = VariantPipelined
		default:
			continue // auto: the plan is not fixed
		}
		if b.variant == VariantDPML && get(r, "plan_variant") == "pipelined" {
			b.variant = VariantPipelined // dpmlbench's fixed grid names k > 1 "dpml" too
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
		if b.variant == VariantNative {
			b.leaders, b.pipe = 1, 1
		}
		rows = append(rows, b)
	}
	return rows, nil
}

// engineSegment is the engine's default segment for ppn ranks per node
// (dpml.defaultPlan) on the device of the testdata sweeps: both buffer sets
// within half of its 300 MiB last-level cache, capped by the 1 MiB slot.
func engineSegment(ppn int) int {
	return min(1<<20, max(64<<10, (150<<20)/(2*(ppn+1))/CacheLine*CacheLine))
}

// SamplesFromBench maps dpmlbench rows (swept with -phases) to calibration
// samples (see doc.go). Plans that moved data by cross-memory attach are
// not told apart yet: calibrate from sweeps run with shared-memory copies.
func SamplesFromBench(rows []BenchRow) Samples {
	var s Samples
	for _, b := range rows {
		if b.variant == VariantNative {
			s.Native = append(s.Native, NativeSample{b.bytes, b.lay, b.median})
			continue
		}
		// The segment the run used, from its segment count.
		seg := (b.bytes + b.segments - 1) / b.segments
		seg = (seg + CacheLine - 1) / CacheLine * CacheLine
		pl := Plan{Variant: b.variant, Leaders: b.leaders, Pipeline: b.pipe, SegmentBytes: seg}
		s.Calls = append(s.Calls, CallSample{pl, b.bytes, b.lay, b.elem, b.median})
		per := b.bytes / b.segments
		la, part := split(per, b.leaders)
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
