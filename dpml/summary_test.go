package dpml

import (
	"math"
	"strings"
	"testing"

	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/costmodel/learn"
	"github.com/dpmlgo/dpml/plan"
)

// TestSizeSummary: DPML_VERBOSE=1's lines at Close, one per size class
// called: the plan, calls, the time per call and the MPI library's where
// the learner measured them, "not measured" where it did not.
func TestSizeSummary(t *testing.T) {
	native := plan.Shape{Variant: plan.Native}
	dpml1 := plan.Shape{Variant: plan.DPML, Leaders: 1, Pipeline: 1}
	key := func(log2 uint8) costmodel.Key {
		return costmodel.Key{Elem: costmodel.ElemClass(0), Op: costmodel.OpClass(0), SizeLog2: log2, Nodes: 2, PPN: 2}
	}
	for _, tc := range []struct {
		name string
		in   learn.Info
		rng  string // the class's byte range
		want string // the line's text after the key
	}{
		{"this run and the MPI library estimated", learn.Info{Key: key(16), Arm: dpml1, Calls: 500, Estimate: 40e-6, Samples: 17, Cost: 41.5e-6,
			Measured: []learn.ArmSample{{Arm: native, Estimate: 95.5e-6, Samples: 8}, {Arm: dpml1, Estimate: 40e-6, Samples: 9}}},
			"64K-128K", "plan dpml l=1 k=1, 500 calls, 41.50 us per call (this run), MPI library 95.50 us per call (learner's estimate)"},
		{"settled from the model", learn.Info{Key: key(3), Arm: dpml1, Calls: 543, Estimate: math.NaN(), Prior: 18e-6},
			"8-16", "plan dpml l=1 k=1, 543 calls, not measured (model 18.00 us), MPI library not measured"},
		{"native, this run", learn.Info{Key: key(10), Arm: native, Calls: 20, Estimate: math.NaN(), Samples: 4, Cost: 30e-6},
			"1K-2K", "plan native, 20 calls, 30.00 us per call (this run), MPI library 30.00 us per call (this run)"},
		{"estimates only", learn.Info{Key: key(12), Arm: dpml1, Calls: 7, Estimate: 9e-6,
			Measured: []learn.ArmSample{{Arm: native, Estimate: 12e-6, Samples: 3}}},
			"4K-8K", "plan dpml l=1 k=1, 7 calls, 9.00 us per call (learner's estimate), MPI library 12.00 us per call (learner's estimate)"},
		{"nothing known", learn.Info{Key: key(20), Arm: native, Calls: 1, Estimate: math.NaN()},
			"1M-2M", "plan native, 1 calls, not measured, MPI library not measured"},
	} {
		var b strings.Builder
		writeSizeSummary(&b, []learn.Info{tc.in, {Key: key(30), Arm: native}}) // the second was never called
		lines := strings.Split(strings.TrimSpace(b.String()), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "dpml: per size class") {
			t.Errorf("%s: want a header and one line:\n%s", tc.name, b.String())
			continue
		}
		if !strings.HasPrefix(lines[1], "dpml:   "+tc.rng+" ") || !strings.HasSuffix(lines[1], ": "+tc.want) {
			t.Errorf("%s: %q, want the range %s and %q", tc.name, lines[1], tc.rng, tc.want)
		}
	}
	var b strings.Builder
	writeSizeSummary(&b, nil)
	if b.Len() != 0 {
		t.Errorf("no calls: %q, want nothing", b.String())
	}
}
