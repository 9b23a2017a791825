package offline

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/plan"
)

// CopySample is one shared-memory copy measurement: Copies separate copies
// (the partitions of a phase; 0 means 1) moving Bytes bytes in all, with the
// node's other ranks copying at the same time, took Seconds.
// Model: Seconds = Copies*a' + Bytes*b'.
type CopySample struct {
	Bytes   int
	Copies  int
	Seconds float64
}

// ReduceSample is one intra-node reduction measurement: a leader folded
// Sources slots (the node's ppn inputs) of Bytes bytes each into one, in
// Segments separate calls (0 means 1), element class Elem, while Leaders
// leaders (0 means 1) folded their own partitions at the same time.
// Model: Seconds = Segments*r0 + (Sources-1)*Bytes*c[Elem]*(1 + (Leaders-1)/reduce_par).
type ReduceSample struct {
	Bytes    int
	Sources  int
	Segments int
	Leaders  int
	Elem     costmodel.ElemClass
	Seconds  float64
}

// InterSample is one inter-node measurement: Pairs allreduces of Bytes
// bytes each ran at once (one per leader index, or Pairs = l*k sub-chunks)
// over Nodes nodes, and one of them took Seconds (the max over ranks).
// Model: Seconds = ceil(lg Nodes) * Pairs*(a + Bytes*b) / M(Pairs, Bytes).
type InterSample struct {
	Bytes   int
	Pairs   int
	Nodes   int
	Seconds float64
}

// NativeSample is one MPI-library allreduce of Bytes bytes on Layout.
// Model: Seconds = ceil(Rounds(h*ppn)) * (native_a + Bytes*native_b).
type NativeSample struct {
	Bytes   int
	Layout  costmodel.Layout
	Seconds float64
}

// CallSample is one whole allreduce: plan, size, layout, element class and
// the measured time (max over ranks). Calibrate fits the per-segment sync
// cost s from these; Compare reports the model's error on them.
type CallSample struct {
	Plan    plan.Shape
	Bytes   int
	Layout  costmodel.Layout
	Elem    costmodel.ElemClass
	Seconds float64
}

// Samples are the measurements Calibrate fits. Any class may be empty: its
// parameters then keep the base model's values.
type Samples struct {
	Copy   []CopySample
	Reduce []ReduceSample
	Inter  []InterSample
	Native []NativeSample
	Calls  []CallSample
	Tree   []TreeSample
}

// ErrNoSamples is returned by Calibrate when there is nothing to fit.
var ErrNoSamples = errors.New("offline: no samples to fit")

// Calibrate fits a model to s, starting from DefaultModel for the
// parameters s has no samples for.
func Calibrate(s Samples) (costmodel.Model, error) { return CalibrateFrom(costmodel.DefaultModel(), s) }

// CalibrateFrom fits a model to s, starting from base:
//
//	copy    (Copies, Bytes)        -> a', b'     robust least squares
//	reduce  (Segments, (Src-1)*B)  -> r0, c      joint: one r0, one c per element class;
//	                                             reduce_par by a 1-D search (>= 3 leader counts)
//	inter   Pairs = 1, Nodes > 1   -> a, b       on Seconds / ceil(lg h)
//	inter   Pairs > 1              -> Conc       median multiplier per (size, pairs)
//	native                         -> native_a, native_b
//	calls                          -> s          robust fit of the residual
//	tree    (depth, fan-ins, 1)    -> tree_hop, tree_kid, tree_release  (one node,
//	                                             after the bytes terms of c and b')
//
// Every linear fit is iteratively reweighted least squares, Huber weights
// (k = 1.345, MAD scale) then Tukey bisquare (k = 4.685), on relative
// residuals (each row divided by
// the median time of its group of identical inputs, so every size counts
// alike), under non-negativity (active set: a coefficient that comes out
// negative is fixed at 0 and the rest refitted).
func CalibrateFrom(base costmodel.Model, s Samples) (costmodel.Model, error) {
	m := base
	m.Conc = base.Conc.Clone()
	if len(s.Copy)+len(s.Reduce)+len(s.Inter)+len(s.Native)+len(s.Calls)+len(s.Tree) == 0 {
		return m, ErrNoSamples
	}
	var errs []string
	fail := func(what string, err error) { errs = append(errs, what+": "+err.Error()) }
	if len(s.Copy) > 0 {
		X, y := make([][]float64, 0, len(s.Copy)), make([]float64, 0, len(s.Copy))
		for _, c := range s.Copy {
			if ok(c.Seconds) && c.Bytes >= 0 {
				X = append(X, []float64{float64(max(c.Copies, 1)), float64(c.Bytes)})
				y = append(y, c.Seconds)
			}
		}
		if beta, err := RobustFit(X, y); err != nil {
			fail("copy", err)
		} else {
			m.Ap, m.Bp = beta[0], beta[1]
		}
	}
	if len(s.Reduce) > 0 {
		if err := fitReduce(&m, s.Reduce); err != nil {
			fail("reduce", err)
		}
	}
	if len(s.Inter) > 0 {
		if err := fitInter(&m, s.Inter); err != nil {
			fail("inter", err)
		}
	}
	natives := append([]NativeSample(nil), s.Native...)
	var calls []CallSample
	for _, c := range s.Calls {
		if c.Plan.Variant == plan.Native {
			natives = append(natives, NativeSample{Bytes: c.Bytes, Layout: c.Layout, Seconds: c.Seconds})
		} else if ok(c.Seconds) && c.Bytes > 0 {
			calls = append(calls, c)
		}
	}
	if len(natives) > 0 {
		X, y := [][]float64{}, []float64{}
		for _, n := range natives {
			if !ok(n.Seconds) || n.Bytes < 0 {
				continue
			}
			steps := max(costmodel.Rounds(max(n.Layout.Nodes, 1)*max(n.Layout.PPN, 1)), 1)
			X = append(X, []float64{steps, steps * float64(n.Bytes)})
			y = append(y, n.Seconds)
		}
		if beta, err := RobustFit(X, y); err != nil {
			fail("native", err)
		} else {
			m.NativeA, m.NativeB = beta[0], beta[1]
		}
	}
	if len(calls) > 0 {
		m.S = fitSync(m, calls)
	}
	if len(s.Tree) > 0 {
		if err := fitTree(&m, s.Tree); err != nil {
			fail("tree", err)
		}
	}
	if err := m.Validate(); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return m, fmt.Errorf("offline: calibrate: %s", strings.Join(errs, "; "))
	}
	return m, nil
}

func ok(v float64) bool { return v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }

func fitReduce(m *costmodel.Model, rs []ReduceSample) error {
	// One joint fit: a shared r0 and one c per element class present; the
	// contention parameter reduce_par by a 1-D search around it (the fit is
	// linear once it is fixed). Without samples at several leader counts
	// reduce_par keeps the base value.
	var col [costmodel.NumElemClasses]int
	var classes []costmodel.ElemClass
	for i := range col {
		col[i] = -1
	}
	leaders := map[int]bool{}
	for _, r := range rs {
		if e := r.Elem; e < costmodel.NumElemClasses && col[e] < 0 {
			col[e] = 1 + len(classes)
			classes = append(classes, e)
		}
		leaders[max(r.Leaders, 1)] = true
	}
	fit := func(par float64) ([]float64, float64, error) {
		mm := costmodel.Model{RedPar: par}
		var X [][]float64
		var y []float64
		for _, r := range rs {
			if !ok(r.Seconds) || r.Bytes < 0 || r.Sources < 1 || r.Elem >= costmodel.NumElemClasses {
				continue
			}
			row := make([]float64, 1+len(classes))
			row[0] = float64(max(r.Segments, 1))
			row[col[r.Elem]] = float64(r.Sources-1) * float64(r.Bytes) * mm.Contention(max(r.Leaders, 1))
			X = append(X, row)
			y = append(y, r.Seconds)
		}
		beta, err := RobustFit(X, y)
		if err != nil {
			return nil, 0, err
		}
		// Objective: mean squared relative residual of the best 80% of
		// the rows (timing outliers are one-sided and rarely more).
		res := make([]float64, len(y))
		for i := range y {
			f := 0.0
			for j, x := range X[i] {
				f += x * beta[j]
			}
			res[i] = (f/y[i] - 1) * (f/y[i] - 1)
		}
		sort.Float64s(res)
		keep := res[:max(1, len(res)*4/5)]
		sum := 0.0
		for _, v := range keep {
			sum += v
		}
		return beta, sum / float64(len(keep)), nil
	}
	par := m.RedPar
	if len(leaders) >= 3 {
		// Grid over 0 (no contention) and 2^(i/2), 1/2..1024; then golden
		// section in log2 between the best grid point's neighbours.
		obj := func(lp float64) float64 {
			p := 0.0
			if !math.IsInf(lp, -1) {
				p = math.Exp2(lp)
			}
			if _, e, err := fit(p); err == nil {
				return e
			}
			return math.Inf(1)
		}
		grid := []float64{math.Inf(-1)}
		for i := -2; i <= 20; i++ {
			grid = append(grid, float64(i)/2)
		}
		bi, be := 0, math.Inf(1)
		for i, lp := range grid {
			if e := obj(lp); e < be {
				bi, be = i, e
			}
		}
		best := grid[bi]
		if bi > 0 {
			lo, hi := best-0.5, best+0.5
			const g = 0.6180339887498949
			x1, x2 := hi-g*(hi-lo), lo+g*(hi-lo)
			f1, f2 := obj(x1), obj(x2)
			for it := 0; it < 16; it++ {
				if f1 <= f2 {
					hi, x2, f2 = x2, x1, f1
					x1 = hi - g*(hi-lo)
					f1 = obj(x1)
				} else {
					lo, x1, f1 = x1, x2, f2
					x2 = lo + g*(hi-lo)
					f2 = obj(x2)
				}
			}
			if c := (lo + hi) / 2; obj(c) <= be {
				best = c
			}
		}
		par = 0
		if !math.IsInf(best, -1) {
			par = math.Exp2(best)
		}
	}
	beta, _, err := fit(par)
	if err != nil {
		return err
	}
	m.RedPar = par
	m.R0 = beta[0]
	sum := 0.0
	for i, e := range classes {
		m.C[e] = beta[1+i]
		sum += beta[1+i]
	}
	if col[costmodel.ElemAny] < 0 {
		m.C[costmodel.ElemAny] = sum / float64(len(classes)) // no generic samples: the classes' mean
	}
	return nil
}

func fitInter(m *costmodel.Model, is []InterSample) error {
	var X [][]float64
	var y []float64
	for _, s := range is {
		if s.Pairs == 1 && s.Nodes > 1 && ok(s.Seconds) && s.Bytes >= 0 {
			X = append(X, []float64{1, float64(s.Bytes)})
			y = append(y, s.Seconds/costmodel.Rounds(s.Nodes))
		}
	}
	if len(y) == 0 {
		return errors.New("need samples with Pairs = 1 and Nodes > 1 to fit a and b")
	}
	beta, err := RobustFit(X, y)
	if err != nil {
		return err
	}
	m.A, m.B = beta[0], beta[1]
	// Concurrency: M = pairs * t1(x) / (Seconds / lg h), median per cell.
	type cell struct {
		lx    float64
		pairs int
	}
	cells := map[cell][]float64{}
	for _, s := range is {
		if s.Pairs <= 1 || s.Nodes <= 1 || !ok(s.Seconds) || s.Bytes <= 0 {
			continue
		}
		t1 := m.A + float64(s.Bytes)*m.B
		mult := float64(s.Pairs) * t1 / (s.Seconds / costmodel.Rounds(s.Nodes))
		mult = math.Min(math.Max(mult, costmodel.MinMult), float64(s.Pairs))
		k := cell{math.Log2(float64(s.Bytes)), s.Pairs}
		cells[k] = append(cells[k], mult)
	}
	if len(cells) == 0 {
		return nil // keep the base curve
	}
	var lxs []float64
	var ps []float64
	seenX, seenP := map[float64]bool{}, map[float64]bool{}
	for k := range cells {
		if !seenX[k.lx] {
			seenX[k.lx] = true
			lxs = append(lxs, k.lx)
		}
		if p := float64(k.pairs); !seenP[p] {
			seenP[p] = true
			ps = append(ps, p)
		}
	}
	sort.Float64s(lxs)
	sort.Float64s(ps)
	c := costmodel.Concurrency{Log2Bytes: lxs, Pairs: ps, Mult: make([][]float64, len(lxs))}
	for i, lx := range lxs {
		c.Mult[i] = make([]float64, len(ps))
		for j, p := range ps {
			if v, found := cells[cell{lx, int(p)}]; found {
				c.Mult[i][j] = median(v)
				continue
			}
			// Missing cell: the nearest size measured with this pair count.
			best, bd := 1.0, math.Inf(1)
			for k, v := range cells {
				if float64(k.pairs) == p {
					if d := math.Abs(k.lx - lx); d < bd || (d == bd && k.lx < lx) {
						best, bd = median(v), d
					}
				}
			}
			c.Mult[i][j] = best
		}
	}
	m.Conc = c
	return nil
}

// fitSync fits s >= 0 to whole-call times: measured - predicted(s = 0) is
// regressed robustly (as RobustFit, relative to the measured time) on the
// number of synchronisations on the critical path, d_i. For DPML d_i is the
// segment count; with pipelining some waits hide behind the network, so d_i
// is refreshed as (predicted(s) - predicted(0)) / s and the fit repeated.
func fitSync(m costmodel.Model, calls []CallSample) float64 {
	m.S = 0
	pred0 := make([]float64, len(calls))
	X := make([][]float64, len(calls))
	y := make([]float64, len(calls))
	ref := make([]float64, len(calls))
	for i, c := range calls {
		b := m.Breakdown(c.Plan, c.Bytes, c.Layout, c.Elem)
		pred0[i] = b.Total
		X[i] = []float64{float64(max(b.Segments, 1))}
		y[i] = c.Seconds - b.Total
		ref[i] = c.Seconds
	}
	s := 0.0
	for iter := 0; iter < 4; iter++ {
		beta, err := robustFit(X, y, ref)
		if err != nil {
			return s
		}
		if beta[0] == s || beta[0] <= 0 {
			return beta[0]
		}
		s = beta[0]
		m.S = s
		for i, c := range calls {
			X[i][0] = (m.Breakdown(c.Plan, c.Bytes, c.Layout, c.Elem).Total - pred0[i]) / s
		}
	}
	return s
}

// RobustFit fits y ~ X beta with beta >= 0 by iteratively reweighted least
// squares (gonum QR) on relative residuals: each row is divided by the
// median y of the rows with the same X (its group), so that small and large
// messages weigh alike and an outlier cannot set its own scale. Weights are
// Huber's (k = 1.345 MAD-scaled sigmas) until the fit settles, then Tukey's
// bisquare (k = 4.685), which drops gross outliers. It needs at least as
// many distinct X rows as columns.
func RobustFit(X [][]float64, y []float64) ([]float64, error) {
	if len(X) != len(y) {
		return nil, fmt.Errorf("%d rows for %d values", len(X), len(y))
	}
	return robustFit(X, y, y)
}

// robustFit is RobustFit with the group scale taken from ref instead of y.
func robustFit(X [][]float64, y, ref []float64) ([]float64, error) {
	n := len(y)
	if n == 0 {
		return nil, errors.New("no usable samples")
	}
	p := len(X[0])
	// Group rows by identical X; scale = median ref of the group.
	groups := map[string][]int{}
	var order []string
	for i, r := range X {
		if len(r) != p {
			return nil, fmt.Errorf("row %d has %d columns, want %d", i, len(r), p)
		}
		k := fmt.Sprint(r)
		if _, seen := groups[k]; !seen {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	if len(order) < p {
		return nil, fmt.Errorf("%d distinct inputs for %d parameters", len(order), p)
	}
	scale := make([]float64, n)
	for _, k := range order {
		idx := groups[k]
		v := make([]float64, len(idx))
		for j, i := range idx {
			v[j] = math.Abs(ref[i])
		}
		s := median(v)
		if s <= 0 || math.IsNaN(s) {
			s = 1
		}
		for _, i := range idx {
			scale[i] = s
		}
	}
	const (
		huberK    = 1.345
		bisquareK = 4.685
	)
	w := make([]float64, n)
	for i := range w {
		w[i] = 1
	}
	r := make([]float64, n)
	absr := make([]float64, n)
	var beta []float64
	// Stage 1: Huber weights until the fit settles (a monotone, convex
	// start); stage 2: Tukey's bisquare from there, which gives gross
	// outliers (one-sided, as timing outliers are) no weight at all.
	for stage, iters := 0, 0; stage < 2; iters++ {
		nb, err := nnls(X, y, scale, w)
		if err != nil {
			return nil, err
		}
		for i := range y {
			f := 0.0
			for j, x := range X[i] {
				f += x * nb[j]
			}
			r[i] = (y[i] - f) / scale[i]
		}
		med := median(append(absr[:0], r...))
		for i := range r {
			absr[i] = math.Abs(r[i] - med)
		}
		sigma := 1.4826 * median(absr)
		if sigma < 1e-12 {
			sigma = 1e-12
		}
		for i := range r {
			a := math.Abs(r[i])
			switch {
			case stage == 0 && a <= huberK*sigma:
				w[i] = 1
			case stage == 0:
				w[i] = huberK * sigma / a
			case a >= bisquareK*sigma:
				w[i] = 0
			default:
				u := a / (bisquareK * sigma)
				w[i] = (1 - u*u) * (1 - u*u)
			}
		}
		done := beta != nil
		for j := range nb {
			if done && math.Abs(nb[j]-beta[j]) > 1e-9*math.Max(math.Abs(nb[j]), 1e-300) {
				done = false
			}
		}
		beta = nb
		if done || iters >= 50 {
			stage, iters = stage+1, 0
		}
	}
	return beta, nil
}

// nnls solves min sum w_i ((y_i - X_i b)/s_i)^2 subject to b >= 0 by an
// active set: columns whose coefficient comes out negative are fixed at 0,
// the most negative first, and the rest refitted.
func nnls(X [][]float64, y, s, w []float64) ([]float64, error) {
	n, p := len(y), len(X[0])
	free := make([]bool, p)
	for j := range free {
		free[j] = true
	}
	beta := make([]float64, p)
	for {
		var cols []int
		for j, f := range free {
			if f {
				cols = append(cols, j)
			}
		}
		if len(cols) == 0 {
			return beta, nil
		}
		A := mat.NewDense(n, len(cols), nil)
		b := mat.NewVecDense(n, nil)
		for i := 0; i < n; i++ {
			sw := math.Sqrt(w[i]) / s[i]
			for c, j := range cols {
				A.Set(i, c, X[i][j]*sw)
			}
			b.SetVec(i, y[i]*sw)
		}
		var qr mat.QR
		qr.Factorize(A)
		var x mat.VecDense
		if err := qr.SolveVecTo(&x, false, b); err != nil {
			return nil, fmt.Errorf("least squares: %w", err)
		}
		worst, wv := -1, 0.0
		for c, j := range cols {
			beta[j] = x.AtVec(c)
			if beta[j] < wv {
				worst, wv = j, beta[j]
			}
		}
		if worst < 0 {
			return beta, nil
		}
		free[worst] = false
		for j := range beta {
			beta[j] = 0
		}
	}
}

// median returns the median of v, reordering v. NaN for an empty slice.
func median(v []float64) float64 {
	n := len(v)
	if n == 0 {
		return math.NaN()
	}
	sort.Float64s(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// TreeSample is one whole reduction-tree call on one node (the C client's
// or dpmlbench's fixed tree plans: "dpml:intra=tree,r=R"), for the tree's
// parameters.
type TreeSample struct {
	Radix   int
	Bytes   int
	PPN     int
	Elem    costmodel.ElemClass
	Seconds float64
}

// fitTree fits tree_hop, tree_kid and tree_release from whole tree calls
// on one node: the model's tree time is
//
//	depth*hop + (sum of the path's fan-ins)*kid + release + bytes terms
//
// where the bytes terms (the children's partials folded, and above
// plan.InlineBytes moved and copied out: c and b') come from m's fitted
// copy and reduce parameters and are subtracted first. Several radixes
// (depths) and sizes are needed to tell the three apart; the fit is the
// same robust non-negative least squares as the others.
func fitTree(m *costmodel.Model, ts []TreeSample) error {
	var X [][]float64
	var y []float64
	for _, t := range ts {
		if !ok(t.Seconds) || t.PPN < 2 || t.Radix < 1 || t.Bytes <= 0 {
			continue
		}
		fans := plan.TreeFanIn(t.PPN, t.Radix)
		kids := 0
		for _, k := range fans {
			kids += k
		}
		perKid := float64(t.Bytes) * m.C.Of(t.Elem)
		rest := 0.0
		if t.Bytes > plan.InlineBytes {
			perKid += float64(t.Bytes) * m.Bp
			rest = float64(t.Bytes) * m.Bp
		}
		X = append(X, []float64{float64(len(fans)), float64(kids), 1})
		y = append(y, max(t.Seconds-float64(kids)*perKid-rest, 0))
	}
	if len(y) < 3 {
		return fmt.Errorf("%d usable tree samples, want at least 3 (several radixes and sizes)", len(y))
	}
	beta, err := RobustFit(X, y)
	if err != nil {
		return err
	}
	m.TreeHop, m.TreeKid, m.TreeRelease = beta[0], beta[1], beta[2]
	return nil
}
