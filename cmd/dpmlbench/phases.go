package main

// The adapter between dpml's phase timers and dpmlbench: the only place to
// change if dpml.PhaseTimes changes.

import "github.com/dpmlgo/dpml/dpml"

// phaseNames are the phases reported, in the order phaseValues fills them.
var phaseNames = []string{"copy-in", "reduce", "inter", "copy-out", "wait-in", "wait-out", "native", "setup", "total"}

// phaseValues writes the phase times of pt in seconds into dst
// (len(dst) == len(phaseNames)).
func phaseValues(pt dpml.PhaseTimes, dst []float64) {
	for i, d := range [...]float64{
		pt.CopyIn.Seconds(), pt.Reduce.Seconds(), pt.Inter.Seconds(), pt.CopyOut.Seconds(),
		pt.WaitIn.Seconds(), pt.WaitOut.Seconds(), pt.Native.Seconds(), pt.Setup.Seconds(), pt.Total.Seconds(),
	} {
		dst[i] = d
	}
}

// phaseOptions are the dpml.New options that turn the timers on.
func phaseOptions(on bool) []dpml.Option {
	if !on {
		return nil
	}
	return []dpml.Option{dpml.WithPhaseTiming(true)}
}

// resetPhases clears the timers before a call (they accumulate).
func resetPhases(d *dpml.Comm) { d.ResetPhaseTimes() }
