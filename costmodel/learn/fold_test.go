package learn

import (
	"github.com/dpmlgo/dpml/costmodel"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFoldVerdicts: the commit step by fold (Stamps, Fold, Merge,
// Verdicts) gives every buffered call the cost each rule defines,
// computed here from the ranks' own entries and exits by sorting them,
// and every rank commits the same verdicts. Five ranks with their own
// timings; confirmation blocks (ConfirmBlock 4) exercise the block gaps;
// the fold runs over ranks 0-2 and 3-4 and merges the two, as a node's
// folds merge across nodes.
func TestFoldVerdicts(t *testing.T) {
	for _, cost := range []Cost{CostSecondExit, CostLastExit, CostMeanExit, CostSlowest, CostPenult} {
		t.Run(Costs[cost], func(t *testing.T) {
			const ranks = 5
			cfg := Config{Budget: -1, SegmentBytes: 256 << 10, Batch: 8, Cost: cost, ConfirmCalls: 200, ConfirmBlock: 4}
			model := costmodel.DefaultModel()
			ts := newTuners(t, ranks, cfg, model)
			lay := Layout{Nodes: 1, PPN: 16}
			keys := []Key{costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 64, lay), costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 64<<10, lay)}
			seq := rand.New(rand.NewPCG(7, 0))
			rngs := make([]*rand.Rand, ranks)
			for r := range rngs {
				rngs[r] = rand.New(rand.NewPCG(50+uint64(r), 3))
			}
			exits := make([]float64, ranks) // each rank's last exit: its next call enters after it
			commits, gaps, blocks := 0, 0, 0
			for call := 0; call < 3000; call++ {
				k := keys[0]
				if seq.IntN(8) == 0 {
					k = keys[1]
				}
				a := ts[0].Choose(k)
				// A collective: every rank enters after its last exit
				// and leaves after the last entry.
				var due [ranks]bool
				var entries [ranks]float64
				last := 0.0
				for r := range ts {
					entries[r] = exits[r] + 1e-6*(1+rngs[r].Float64())
					last = max(last, entries[r])
				}
				base := model.Breakdown(priced(a, cfg.SegmentBytes), k.Bytes(), k.Layout(), k.Elem).Total
				for r, tu := range ts {
					if b := tu.Choose(k); b != a {
						t.Fatalf("call %d: rank %d chose %v, rank 0 %v", call, r, b, a)
					}
					exits[r] = last + base*(1+0.05*float64(r)+0.02*rngs[r].Float64())
					due[r] = tu.RecordSpan(k, a, entries[r], exits[r])
				}
				if !due[0] {
					continue
				}
				want := bruteVerdicts(ts, cost)
				f1 := make([]float64, FoldLen(len(ts[0].Stamps())))
				f2 := make([]float64, len(f1))
				for r, tu := range ts {
					f := f1
					if r >= 3 {
						f = f2
					}
					if err := Fold(f, tu.Stamps(), r == 0 || r == 3); err != nil {
						t.Fatal(err)
					}
				}
				if err := Merge(f1, f2); err != nil {
					t.Fatal(err)
				}
				v, err := ts[0].Verdicts(f1)
				if err != nil {
					t.Fatal(err)
				}
				n := ts[0].np
				for i := range n {
					if ts[0].pb[i] > 1 {
						blocks++
					}
				}
				for j := range want {
					if d := math.Abs(v[j] - want[j]); d > 1e-12 {
						t.Fatalf("commit %d, value %d of %d (field %d, call %d): fold %g, sorted %g", commits, j, len(v), j/n, j%n, v[j], want[j])
					}
					if j >= 3*n && j < 4*n && v[j] != 0 {
						gaps++
					}
				}
				v = slices.Clone(v)
				for _, tu := range ts {
					if err := tu.CommitVerdicts(v); err != nil {
						t.Fatal(err)
					}
				}
				commits++
				for r := 1; r < ranks; r++ {
					if ts[r].Fingerprint() != ts[0].Fingerprint() {
						t.Fatalf("commit %d: rank %d's state differs from rank 0's", commits, r)
					}
				}
			}
			for _, in := range ts[0].Infos() {
				t.Logf("%v: %v %s, %d calls, %d samples, %d episodes", in.Key, in.Arm, in.State, in.Calls, in.Samples, in.Episodes)
			}
			if commits < 15 {
				t.Fatalf("%d commits", commits)
			}
			if cost == CostSecondExit && gaps == 0 {
				t.Error("no block call owed a lag: the gaps went untested")
			}
			t.Logf("%d commits, %d block calls, %d block lags", commits, blocks, gaps)
		})
	}
}

// bruteVerdicts computes Verdicts' buffer from every rank's buffered
// entries and exits by sorting, from the cost rules' definitions.
func bruteVerdicts(ts []*Tuner, cost Cost) []float64 {
	t0 := ts[0]
	n := t0.np
	v := make([]float64, 4*n+1)
	es, xs := make([]float64, len(ts)), make([]float64, len(ts))
	costOf := func(i int) (last, c, skew float64) {
		for r, tu := range ts {
			es[r], xs[r] = tu.pe[i], tu.px[i]
		}
		slices.Sort(es)
		slices.Sort(xs)
		m := len(ts) - 1
		last = es[m]
		switch cost {
		case CostLastExit:
			c = xs[m] - last
		case CostMeanExit:
			var s float64
			for _, x := range xs {
				s += x
			}
			c = s/float64(len(ts)) - last
		case CostSlowest:
			for _, tu := range ts {
				c = max(c, tu.px[i]-tu.pe[i])
			}
		case CostSecondExit:
			c = xs[m-1] - last
		case CostPenult:
			c = (xs[m-1] - last) - (es[m-1] - last)
		}
		return last, c, last - es[0]
	}
	for i := 0; i < n; i++ {
		v[i], v[n+i], v[2*n+i] = costOf(i)
	}
	for i := 1; i < n; i++ {
		if cost != CostSecondExit || t0.pb[i] <= 1 {
			continue
		}
		// The time the call before's second-to-last rank left before
		// this call's last entry, less the shortest time a rank spent
		// between the calls, at most the call before's last exit.
		shortest := math.Inf(1)
		lastExitPrev := math.Inf(-1)
		for _, tu := range ts {
			shortest = min(shortest, tu.pe[i]-tu.px[i-1])
			lastExitPrev = max(lastExitPrev, tu.px[i-1])
		}
		second := v[i-1] + v[n+i-1]
		v[3*n+i] = max(0, min(v[i]-shortest, lastExitPrev)-second)
	}
	for _, tu := range ts {
		v[4*n] = max(v[4*n], tu.ovhLocal/float64(n))
	}
	return v
}

// TestExchangeBounds: the buffers an engine keeps in memory of its own
// fit the bounds it sizes that memory by: Stamps' and Verdicts' within
// ExchangeValues (a node segment's exchange area), a fold within
// FoldValues. Mutation: five verdict values per call -> "Verdicts' 5121
// values, ExchangeValues 4097".
func TestExchangeBounds(t *testing.T) {
	if n := stampLen(maxSlots); n > ExchangeValues {
		t.Errorf("Stamps' %d values, ExchangeValues %d", n, ExchangeValues)
	}
	if n := verdictLen(maxSlots); n > ExchangeValues {
		t.Errorf("Verdicts' %d values, ExchangeValues %d", n, ExchangeValues)
	}
	if n := foldLen(maxSlots); n > FoldValues {
		t.Errorf("a fold's %d values, FoldValues %d", n, FoldValues)
	}
}
