package dpml

import (
	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/costmodel/learn"
	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/plan"
)

// Plan selection has one home: selectPlan decides, for each call the
// engine runs, the override its plan is resolved from (plan, in
// choose.go) and what the learner takes part in. Precedence, first match
// wins:
//
//  1. The caller's per-call Override, then the communicator's
//     (SetOverride), then the DPML_* plan settings (DPML_LEADERS,
//     DPML_PIPELINE, DPML_INTRA, ...): any part forced takes the call
//     out of the learner's hands; the rest of the plan comes from the
//     built-in policy (defaultPlan), and the offload's dispatch rule
//     (routeOffload) may still send it to the in-network offload.
//  2. The learner (learn.Tuner: DPML_TUNER=auto, the default, or
//     model), for calls with data on a communicator with more than one
//     rank on some node: the key's next arm, a whole shape. A key's first
//     call runs the cost model's pick (or the machine profile's or tuning
//     table's verdict); the learner leaves it only on the key's own
//     evidence, within its exploration budget (costmodel/learn/budget.go). An
//     offload arm runs its host twin when the offload does not take the
//     call's type and op.
//  3. Without a learner (DPML_TUNER=static): the offload's dispatch rule,
//     then the built-in policy.
//
// Whatever was chosen, plan then applies the fallbacks a plan's
// preconditions need: the MPI library's allreduce with one rank per node
// (or one rank), the copies where cross-memory attach is not permitted or
// a tree's message exceeds a slot.
type selection struct {
	o Override // the plan's override: forced parts, or the learner's arm
	// tuned: the learner chose (key, ks, arm) and must see the call
	// (Record; timed: with its clock); untuned: nothing decides per call,
	// the plan is fixed for these arguments (a clearance may skip the
	// engine for the next calls).
	tuned, untuned, timed bool
	key                   costmodel.Key
	ks                    learn.KeyState
	arm                   costmodel.Arm
}

// selectPlan is the selector (see above) for a call of count elements of
// kind with op and the caller's override o.
func (c *Comm) selectPlan(kind mpi.Kind, op mpi.Op, count int, o Override) selection {
	s := selection{o: o}
	s.tuned = c.tuned(o, count, kind.Size())
	s.untuned = !s.tuned && o == (Override{})
	if !s.tuned {
		if c.off != nil {
			s.o = c.routeOffload(kind, op, count, o)
		}
		return s
	}
	s.key, s.ks = c.keyState(kind, op, count)
	s.arm, s.timed = s.ks.Next()
	if s.arm.Offload == plan.OffloadSharp && (c.off == nil || c.off.caps.Supports(kind, op) != nil) {
		// A key's element and op classes may hold types the offload does
		// not take: those calls run (and are recorded as) the host twin.
		s.arm.Offload = plan.OffloadAuto
	}
	s.o = Override(s.arm) // an arm is a whole shape: variant, l, k, transport and offload
	return s
}

// peekPlan is selectPlan for a key's next call, without the call: the
// override the engine's own runs that ready the key (Warm, parkReady)
// start it on, and whether the learner decides it (key, ks). A call
// forced by the communicator or the settings is not the learner's: its
// override is empty, and the plan comes from them.
func (c *Comm) peekPlan(kind mpi.Kind, op mpi.Op, count int) (o Override, tuned bool, key costmodel.Key, ks learn.KeyState) {
	if !c.tuned(Override{}, count, kind.Size()) {
		return Override{}, false, key, ks
	}
	key = c.tunerKey(kind, op, count)
	ks = c.tuner.State(key)
	return Override(ks.Peek()), true, key, ks
}
