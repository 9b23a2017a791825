package learn_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/costmodel/learn"
	"github.com/dpmlgo/dpml/costmodel/offline"
)

// TestBudgetBoundsExploration drives budgeted tuners (the default
// configuration) over surfaces where the model's pick is not the best arm,
// with one-sided noise, for 10 to 100,000 calls. The oracle is the surface
// itself: the time lost to learning is every call's true time beyond the
// model's pick's, plus the tuner's overhead for each call it timed; it must
// stay within the budget's fraction of the pick's time for the same calls
// plus a constant: two calls (a warm-up and one sample) of each arm the
// model prices within the candidates' bound, at that arm's excess (what a
// candidate the model misprices can cost before it is dropped). The first
// call runs the model's pick, and with enough calls the key must have
// learned (moved off a pick that is clearly not the best); with 10 calls
// it must have tried nothing else.
func TestBudgetBoundsExploration(t *testing.T) {
	const overhead = 20e-6 // seconds per timed call, noted by every rank
	cfg := learn.Config{SegmentBytes: 256 << 10}
	budget := learn.DefaultConfig().Budget
	per := learn.Perturbed()
	var cases []surfaceCase
	for _, lb := range []int{12, 16, 20, 24} {
		k := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<lb, costmodel.Layout{Nodes: 4, PPN: 8})
		cases = append(cases, surfaceCase{fmt.Sprintf("perturbed/4x8/2^%d", lb), k, offline.ModelSurface(per, k, 256<<10)})
	}
	k := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 16<<20, costmodel.Layout{Nodes: 4, PPN: 32})
	cases = append(cases,
		surfaceCase{"bowl/corner-l32-k8", k, learn.Bowl(1e-3, 5, 4, 3)},
		surfaceCase{"bowl/native-best", k, learn.Bowl(1e-3, 0, 3, 0.8)})
	learned := 0
	for _, sc := range cases {
		ts := learn.NewTestTuners(t, 2, cfg, costmodel.DefaultModel())
		arms := ts[0].Arms(sc.key)
		pick, truth := arms[0], map[costmodel.Arm]float64{}
		for _, a := range arms {
			truth[a] = sc.cost(0, a)
			if ts[0].Predicted(sc.key, a) < ts[0].Predicted(sc.key, pick) {
				pick = a
			}
		}
		cost := func(_ int, a costmodel.Arm) float64 { return truth[a] }
		slack := 0.0
		for _, a := range arms {
			if ts[0].Predicted(sc.key, a) <= cfg1(cfg).Candidates*ts[0].Predicted(sc.key, pick) {
				slack += 2 * max(0, truth[a]-truth[pick])
			}
		}
		best := math.Inf(1)
		for _, a := range arms {
			best = min(best, truth[a])
		}
		for _, n := range []int{10, 100, 1000, 10000, 100000} {
			ts := learn.NewTestTuners(t, 2, cfg, costmodel.DefaultModel())
			res, err := offline.Simulate(ts, sc.key, cost, offline.SimOptions{Calls: n, Noise: 0.03, Seed: uint64(n), Overhead: overhead})
			if err != nil {
				t.Fatalf("%s/%d: %v", sc.name, n, err)
			}
			if res.Chosen[0] != pick {
				t.Errorf("%s/%d: first call ran %v, the model picks %v", sc.name, n, res.Chosen[0], pick)
			}
			if n <= 10 && slices.ContainsFunc(res.Chosen, func(a costmodel.Arm) bool { return a != pick }) {
				t.Errorf("%s/%d: a key of %d calls tried another arm than the model's: %v", sc.name, n, n, res.Chosen)
			}
			lost := overhead * float64(res.Recorded)
			for _, a := range res.Chosen {
				lost += max(0, truth[a]-truth[pick])
			}
			allowed := budget*float64(n)*truth[pick]*1.1 + slack
			msg := fmt.Sprintf("%s/%d calls: lost %.3g s to learning (%.2f%% of the pick's time; %d calls timed), allowed %.3g s; final %v at %.3f x the best (pick %.3f x)",
				sc.name, n, lost, 100*lost/(float64(n)*truth[pick]), res.Recorded, allowed, res.Final, res.FinalCost/best, truth[pick]/best)
			if lost > allowed {
				t.Error(msg)
			} else if testing.Verbose() {
				t.Log(msg)
			}
			if n == 100000 && truth[pick] > 1.1*best && res.FinalCost < 0.95*truth[pick] {
				learned++
			}
		}
	}
	if learned == 0 {
		t.Errorf("in 100,000 calls no key left a pick at least 10%% slower than the best")
	}
}

func cfg1(c learn.Config) learn.Config {
	t, err := learn.NewTuner(c, costmodel.DefaultModel())
	if err != nil {
		panic(err)
	}
	return t.Config()
}
