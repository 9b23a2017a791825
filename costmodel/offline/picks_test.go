package offline

import (
	"strings"
	"testing"

	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/plan"
)

// Picks: with measurements equal to the model's predictions the model picks
// the fastest plan (no penalty); when the plan it prefers measured slower,
// the penalty is that plan's excess over the fastest.
func TestPicks(t *testing.T) {
	m := costmodel.DefaultModel()
	lay := costmodel.Layout{Nodes: 2, PPN: 8}
	plans := []plan.Shape{{Variant: plan.DPML, Leaders: 1, Pipeline: 1}, {Variant: plan.DPML, Leaders: 8, Pipeline: 1},
		{Variant: plan.Pipelined, Leaders: 8, Pipeline: 4, Overlap: true}}
	const bytes = 4 << 20
	var s Samples
	for _, p := range plans {
		s.Calls = append(s.Calls, CallSample{Plan: p, Bytes: bytes, Layout: lay, Elem: costmodel.ElemFloat32,
			Seconds: m.Breakdown(p, bytes, lay, costmodel.ElemFloat32).Total})
	}
	s.Native = append(s.Native, NativeSample{Bytes: bytes, Layout: lay, Seconds: m.Predict(plan.Shape{Variant: plan.Native}, bytes, lay)})
	ps := Picks(&m, s)
	if len(ps) != 1 || ps[0].Measured != 4 || ps[0].Penalty != 0 || ps[0].Chosen != ps[0].Best {
		t.Fatalf("exact model: %+v", ps)
	}
	// Make the model's choice measure 30% slower than the runner-up.
	chosen := ps[0].Chosen
	second := 1e9
	if chosen.Variant == plan.Native {
		t.Fatal("the default model should prefer a DPML plan at 4 MiB on 2 x 8")
	}
	for _, c := range s.Calls {
		if c.Plan != chosen && c.Seconds < second {
			second = c.Seconds
		}
	}
	if nat := s.Native[0].Seconds; nat < second {
		second = nat
	}
	for i := range s.Calls {
		if s.Calls[i].Plan == chosen {
			s.Calls[i].Seconds = 1.3 * second
		}
	}
	ps = Picks(&m, s)
	if len(ps) != 1 || ps[0].Chosen != chosen || ps[0].Penalty < 0.299 || ps[0].Penalty > 0.301 {
		t.Fatalf("slow choice: %+v", ps)
	}
	if out := PicksString(ps); !strings.Contains(out, "within 20% of the fastest at 0") {
		t.Errorf("summary:\n%s", out)
	}
}
