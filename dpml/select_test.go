package dpml

import (
	"testing"

	"github.com/dpmlgo/dpml/costmodel/learn"
	"github.com/dpmlgo/dpml/mpi"
)

// TestSelectPrecedence: the selector's precedence (select.go), case by
// case on one communicator: a per-call override, the communicator's, or
// a plan setting takes the call from the learner; the learner takes calls
// with data that force nothing, on the arm its state names next; with no
// learner, or nothing to reduce, nothing decides per call. Mutation: the
// communicator's override ignored by the learner's test (tuned on o
// alone) -> "SetOverride: tuned true, untuned false; want false, true".
func TestSelectPrecedence(t *testing.T) {
	c, done := stubNodeComm(t, 2)
	defer done()
	tu, err := learn.NewTunerFromDefault(learn.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	forced := Override{Variant: DPML, Leaders: 2, Intra: IntraShm}
	for _, tc := range []struct {
		name                 string
		tuner                bool
		o, fixed, env        Override
		count                int
		tuned, untuned, peek bool // peek: o is the learner's next arm
	}{
		{name: "per-call override", tuner: true, o: forced, count: 64, tuned: false, untuned: false},
		{name: "SetOverride", tuner: true, fixed: forced, count: 64, tuned: false, untuned: true},
		{name: "plan setting", tuner: true, env: forced, count: 64, tuned: false, untuned: true},
		{name: "learner", tuner: true, count: 64, tuned: true, untuned: false, peek: true},
		{name: "no data", tuner: true, count: 0, tuned: false, untuned: true},
		{name: "no learner", count: 64, tuned: false, untuned: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.tuner, c.fixed, c.env, c.keyMemo = nil, tc.fixed, tc.env, keyMemo{}
			if tc.tuner {
				c.tuner = tu
			}
			var want Override
			if tc.peek {
				want = Override(tu.State(c.tunerKey(mpi.KindFloat32, mpi.OpSum, tc.count)).Peek())
			}
			s := c.selectPlan(mpi.KindFloat32, mpi.OpSum, tc.count, tc.o)
			if s.tuned != tc.tuned || s.untuned != tc.untuned {
				t.Fatalf("%s: tuned %v, untuned %v; want %v, %v", tc.name, s.tuned, s.untuned, tc.tuned, tc.untuned)
			}
			switch {
			case tc.peek && s.o != want:
				t.Errorf("the learner's call runs %+v, its state names %+v", s.o, want)
			case !tc.peek && s.o != tc.o:
				t.Errorf("a call the learner does not take runs %+v, want the caller's %+v", s.o, tc.o)
			}
			// The key's next call without an override of its own.
			wantPeek := tc.tuner && tc.count > 0 && tc.fixed == (Override{}) && tc.env == (Override{})
			o, tuned, _, _ := c.peekPlan(mpi.KindFloat32, mpi.OpSum, tc.count)
			if tuned != wantPeek || !tuned && o != (Override{}) {
				t.Errorf("peekPlan: %+v, tuned %v; want tuned %v", o, tuned, wantPeek)
			}
		})
	}
}
