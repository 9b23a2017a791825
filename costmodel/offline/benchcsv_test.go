package offline

import (
	"github.com/dpmlgo/dpml/internal/tools/results"
	"strings"
	"testing"

	"github.com/dpmlgo/dpml/plan"
)

const benchHeader = "bytes,type,op,nodes,ppn,variant,median_us,plan_variant,plan_leaders,plan_pipeline,plan_segments,plan_cma"

func TestReadBenchCSV(t *testing.T) {
	csv := benchHeader + ",phase_reduce_median_us\n" +
		"1024,float32,sum,2,4,native,10,,,,,,\n" +
		"1024,float32,sum,2,4,dpml,5,pipelined,4,2,1,false,1.5\n" +
		"1024,float32,sum,2,4,dpml,4,dpml,4,1,1,true,1\n" + // CMA: skipped
		"1024,float32,sum,2,4,auto,4,dpml,4,1,1,false,1\n" + // auto: skipped
		"2048,float64,max,2,4,dpml,,dpml,2,1,2,false,\n" // a failed point: empty cells
	rows, err := ReadBenchCSV(strings.NewReader(csv))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3: %+v", len(rows), rows)
	}
	if r := rows[0]; r.variant != plan.Native || r.leaders != 1 || !near(r.median, 10e-6, 1e-12) || r.lay.Nodes != 2 || r.lay.PPN != 4 {
		t.Errorf("native row: %+v", r)
	}
	if r := rows[1]; r.variant != plan.Pipelined || r.leaders != 4 || r.pipe != 2 || !near(r.reduce, 1.5e-6, 1e-12) || r.copyIn != 0 {
		t.Errorf("pipelined row: %+v", r)
	}
	if r := rows[2]; r.bytes != 2048 || r.segments != 2 || r.median != 0 {
		t.Errorf("failed point: %+v", r)
	}
}

// A column dpmlbench renamed, or a CSV of something else, must not read as
// zeros.
func TestReadBenchCSVRejects(t *testing.T) {
	for _, c := range []struct{ name, csv, want string }{
		{"renamed", strings.Replace(benchHeader, "median_us", "p50_us", 1) + "\n1,float32,sum,1,2,dpml,3,dpml,1,1,1,false\n", "median_us"},
		{"two-missing", "bytes,variant\n8,dpml\n", "type, op, nodes"},
		{"not-a-number", benchHeader + "\n1024,float32,sum,2,4,dpml,fast,dpml,1,1,1,false\n", `line 2, column median_us: "fast"`},
		{"empty", "", "empty"},
	} {
		_, err := ReadBenchCSV(strings.NewReader(c.csv))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
}

// The columns the reader needs are the ones dpmlbench writes
// (internal/tools/results.CSVHeader), phase columns included.
func TestBenchColumnsAreWritten(t *testing.T) {
	rep := &results.Report{Results: []results.Result{{Phases: []results.Phase{{Name: "copy-in"}, {Name: "reduce"}, {Name: "copy-out"}}}}}
	head := "," + strings.Join(results.CSVHeader(rep), ",") + ","
	for _, c := range append(benchColumns, phaseColumns...) {
		if !strings.Contains(head, ","+c+",") {
			t.Errorf("dpmlbench's CSV header lacks %s: %s", c, head)
		}
	}
}

// TreeSamplesFromReport keeps fixed single-tree plans on one node and
// drops auto, l > 1 trees, other transports and multi-node runs.
func TestTreeSamplesFromReport(t *testing.T) {
	res := func(variant string, p results.PlanInfo) results.Result {
		r := results.Result{Bytes: 64, Variant: variant, Plan: &p}
		r.US.Median = 2
		return r
	}
	rep := &results.Report{Results: []results.Result{
		res("dpml", results.PlanInfo{Variant: "dpml", Leaders: 1, Intra: "tree", Radix: 4}),
		res("auto", results.PlanInfo{Variant: "dpml", Leaders: 1, Intra: "tree", Radix: 8}),
		res("dpml", results.PlanInfo{Variant: "dpml", Leaders: 2, Intra: "tree", Radix: 8}),
		res("dpml", results.PlanInfo{Variant: "dpml", Leaders: 1, Intra: "shm"}),
	}}
	rep.Meta.Nodes, rep.Meta.PPN, rep.Meta.Type = 1, 16, "float32"
	ts := TreeSamplesFromReport(rep)
	if len(ts) != 1 || ts[0].Radix != 4 || ts[0].PPN != 16 || ts[0].Seconds != 2e-6 {
		t.Fatalf("samples %+v, want the one fixed single tree (r=4, 2 us)", ts)
	}
	rep.Meta.Nodes = 2
	if ts := TreeSamplesFromReport(rep); len(ts) != 0 {
		t.Fatalf("two nodes: samples %+v, want none", ts)
	}
}
