package offline

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/plan"
)

// Point is one measurement next to the model's prediction.
type Point struct {
	Kind      string // "copy", "reduce", "inter", "native" or "call"
	Label     string // the inputs, for humans
	Bytes     int
	Measured  float64 // seconds
	Predicted float64 // seconds
	RelErr    float64 // |Predicted - Measured| / Measured
}

// Report is the model's error over a set of measurements.
type Report struct {
	Points []Point
	Median float64            // median RelErr over all points
	P90    float64            // 90th percentile
	Max    float64            // largest RelErr
	ByKind map[string]float64 // median RelErr per kind
}

// Compare predicts every sample of s with m and reports the relative errors.
// Samples with a non-positive time are skipped.
func Compare(m *costmodel.Model, s Samples) Report {
	var r Report
	add := func(kind, label string, bytes int, meas, pred float64) {
		if !ok(meas) {
			return
		}
		r.Points = append(r.Points, Point{kind, label, bytes, meas, pred, math.Abs(pred-meas) / meas})
	}
	for _, c := range s.Copy {
		add("copy", fmt.Sprintf("copies=%d", max(c.Copies, 1)), c.Bytes, c.Seconds, m.CopyTime(c.Copies, c.Bytes))
	}
	for _, c := range s.Reduce {
		pred := m.ReduceTime(c.Segments, c.Sources, c.Bytes, c.Leaders, c.Elem)
		add("reduce", fmt.Sprintf("sources=%d seg=%d l=%d %s", c.Sources, max(c.Segments, 1), max(c.Leaders, 1), c.Elem), c.Bytes, c.Seconds, pred)
	}
	for _, c := range s.Inter {
		if c.Nodes <= 1 {
			continue
		}
		add("inter", fmt.Sprintf("pairs=%d h=%d", c.Pairs, c.Nodes), c.Bytes, c.Seconds, m.InterTime(c.Pairs, c.Bytes, c.Nodes))
	}
	for _, c := range s.Native {
		add("native", c.Layout.String(), c.Bytes, c.Seconds, m.Predict(plan.Shape{Variant: plan.Native}, c.Bytes, c.Layout))
	}
	for _, c := range s.Calls {
		add("call", c.Plan.String()+" "+c.Layout.String(), c.Bytes, c.Seconds, m.Breakdown(c.Plan, c.Bytes, c.Layout, c.Elem).Total)
	}
	r.summarise()
	return r
}

func (r *Report) summarise() {
	r.ByKind = map[string]float64{}
	if len(r.Points) == 0 {
		r.Median, r.P90, r.Max = math.NaN(), math.NaN(), math.NaN()
		return
	}
	all := make([]float64, 0, len(r.Points))
	kinds := map[string][]float64{}
	for _, p := range r.Points {
		all = append(all, p.RelErr)
		kinds[p.Kind] = append(kinds[p.Kind], p.RelErr)
	}
	sort.Float64s(all)
	r.Median = median(append([]float64(nil), all...))
	r.P90 = all[int(math.Ceil(0.9*float64(len(all))))-1]
	r.Max = all[len(all)-1]
	for k, v := range kinds {
		r.ByKind[k] = median(v)
	}
}

// String renders the report as a table, one line per point, then the summary.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-7s %-36s %12s %12s %12s %8s\n", "kind", "inputs", "bytes", "measured_us", "predicted_us", "rel_err")
	for _, p := range r.Points {
		fmt.Fprintf(&b, "%-7s %-36s %12d %12.3f %12.3f %7.1f%%\n", p.Kind, p.Label, p.Bytes, p.Measured*1e6, p.Predicted*1e6, 100*p.RelErr)
	}
	fmt.Fprintf(&b, "points %d: median %.1f%%, p90 %.1f%%, max %.1f%%", len(r.Points), 100*r.Median, 100*r.P90, 100*r.Max)
	kinds := make([]string, 0, len(r.ByKind))
	for k := range r.ByKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(&b, "; %s %.1f%%", k, 100*r.ByKind[k])
	}
	b.WriteString("\n")
	return b.String()
}

// Pick is the model's choice among the plans measured for one size and
// layout, next to the fastest of them.
type Pick struct {
	Bytes    int
	Layout   costmodel.Layout
	Chosen   plan.Shape // the plan the model predicts fastest
	Best     plan.Shape // the plan measured fastest
	Penalty  float64    // measured(Chosen) / measured(Best) - 1
	Measured int        // plans measured for this size (native included)
}

// Picks asks, for every size and layout of s.Calls (with s.Native as the
// native plan), which measured plan m predicts fastest, and how much slower
// that plan measured than the fastest one: the model used alone, with no
// online step.
func Picks(m *costmodel.Model, s Samples) []Pick {
	type key struct {
		bytes int
		lay   costmodel.Layout
	}
	type cand struct {
		shape plan.Shape
		meas  float64
		pred  float64
	}
	groups := map[key][]cand{}
	var order []key
	add := func(k key, c cand) {
		if !ok(c.meas) {
			return
		}
		if _, seen := groups[k]; !seen {
			order = append(order, k)
		}
		groups[k] = append(groups[k], c)
	}
	for _, c := range s.Calls {
		add(key{c.Bytes, c.Layout}, cand{shape: c.Plan, meas: c.Seconds, pred: m.Breakdown(c.Plan, c.Bytes, c.Layout, c.Elem).Total})
	}
	for _, c := range s.Native {
		if _, has := groups[key{c.Bytes, c.Layout}]; !has {
			continue // a size with no DPML plan measured: nothing to choose
		}
		nat := plan.Shape{Variant: plan.Native}
		add(key{c.Bytes, c.Layout}, cand{shape: nat, meas: c.Seconds, pred: m.Predict(nat, c.Bytes, c.Layout)})
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].lay != order[j].lay {
			return order[i].lay.String() < order[j].lay.String()
		}
		return order[i].bytes < order[j].bytes
	})
	var out []Pick
	for _, k := range order {
		cs := groups[k]
		chosen, best := cs[0], cs[0]
		for _, c := range cs[1:] {
			if c.pred < chosen.pred {
				chosen = c
			}
			if c.meas < best.meas {
				best = c
			}
		}
		out = append(out, Pick{Bytes: k.bytes, Layout: k.lay, Chosen: chosen.shape, Best: best.shape,
			Penalty: chosen.meas/best.meas - 1, Measured: len(cs)})
	}
	return out
}

// PicksString renders picks as a table with the median and largest penalty.
func PicksString(ps []Pick) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %12s %-22s %-22s %8s\n", "layout", "bytes", "model picks", "fastest measured", "penalty")
	pen := make([]float64, 0, len(ps))
	for _, p := range ps {
		fmt.Fprintf(&b, "%-8s %12d %-22s %-22s %7.1f%%\n", p.Layout, p.Bytes, p.Chosen, p.Best, 100*p.Penalty)
		pen = append(pen, p.Penalty)
	}
	if len(pen) > 0 {
		sort.Float64s(pen)
		within := 0
		for _, x := range pen {
			if x <= 0.20 {
				within++
			}
		}
		fmt.Fprintf(&b, "sizes %d: median penalty %.1f%%, max %.1f%%, within 20%% of the fastest at %d\n",
			len(pen), 100*median(append([]float64(nil), pen...)), 100*pen[len(pen)-1], within)
	}
	return b.String()
}
