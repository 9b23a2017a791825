package dpml

import (
	"fmt"
	"io"
	"math"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/costmodel/learn"
	"github.com/dpmlgo/dpml/plan"
)

// writeSizeSummary writes what DPML_VERBOSE=1 prints at Close: one line per
// size class this communicator called, with the plan the class settled
// on, its calls, its time per call and the MPI library's time per call,
// each where the learner measured it. A user reads in it whether DPML paid
// off for the program's sizes without a benchmark; the learner's table
// (printTuner), printed after it, holds the detail.
func writeSizeSummary(w io.Writer, infos []learn.Info) {
	var used []learn.Info
	for _, in := range infos {
		if in.Calls > 0 {
			used = append(used, in)
		}
	}
	if len(used) == 0 {
		return
	}
	fmt.Fprintf(w, "dpml: per size class [from, to) bytes: plan, calls, time per call and the MPI library's: this run's mean over the calls the learner timed, or the learner's estimate (which a tuning table or machine profile may have brought in)\n")
	for _, in := range used {
		lo, hi := in.Key.Range()
		us := "not measured"
		if t, how := planTime(in); t > 0 {
			us = fmt.Sprintf("%.2f us per call (%s)", t*1e6, how)
		} else if in.Prior > 0 && !math.IsInf(in.Prior, 0) {
			us = fmt.Sprintf("not measured (model %.2f us)", in.Prior*1e6)
		}
		mpiLib := "MPI library not measured"
		if t, how := nativeTime(in); t > 0 {
			mpiLib = fmt.Sprintf("MPI library %.2f us per call (%s)", t*1e6, how)
		}
		fmt.Fprintf(w, "dpml:   %s-%s %s/%s %dx%d: plan %v, %d calls, %s, %s\n",
			config.FormatBytes(int64(lo)), config.FormatBytes(int64(hi)+1), in.Key.Elem, in.Key.Op, in.Key.Nodes, in.Key.PPN,
			in.Arm, in.Calls, us, mpiLib)
	}
}

// How a time was known.
const (
	thisRun  = "this run"
	estimate = "learner's estimate"
)

// planTime is the seconds per call of the class's plan: the running mean
// of the calls the learner timed in this process, else its estimate of the
// plan; 0 when it has neither.
func planTime(in learn.Info) (float64, string) {
	if in.Samples > 0 && in.Cost > 0 {
		return in.Cost, thisRun
	}
	if in.Estimate > 0 && !math.IsNaN(in.Estimate) && !math.IsInf(in.Estimate, 0) {
		return in.Estimate, estimate
	}
	for _, m := range in.Measured {
		if m.Arm == in.Arm && m.Samples > 0 && m.Estimate > 0 {
			return m.Estimate, estimate
		}
	}
	return 0, ""
}

// nativeTime is the seconds per call of the MPI library's allreduce for the
// class: the learner's estimate when it sampled it, or the plan's time when
// the plan is the MPI library's; 0 when unknown.
func nativeTime(in learn.Info) (float64, string) {
	if in.Arm.Variant == plan.Native {
		return planTime(in)
	}
	for _, m := range in.Measured {
		if m.Arm.Variant == plan.Native && m.Samples > 0 && m.Estimate > 0 {
			return m.Estimate, estimate
		}
	}
	return 0, ""
}
