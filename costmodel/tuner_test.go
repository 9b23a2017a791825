package costmodel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpmlgo/dpml/plan"
)

func newTuners(t testing.TB, n int, cfg Config, m Model) []*Tuner {
	t.Helper()
	ts := make([]*Tuner, n)
	for i := range ts {
		var err error
		if ts[i], err = NewTuner(cfg, m); err != nil {
			t.Fatal(err)
		}
	}
	return ts
}

// bowl is a synthetic, coordinate-wise unimodal surface over (log2 l,
// pipeline level) with its minimum at (l0, lev0); native costs native x
// the minimum.
func bowl(base float64, l0, lev0 int, native float64) func(int, Arm) float64 {
	return func(_ int, a Arm) float64 {
		if a.Variant == plan.Native {
			return base * native
		}
		lev := 0
		if a.Variant == plan.Pipelined {
			lev = 1 + int(math.Log2(float64(a.Pipeline)))
		}
		dl := math.Log2(float64(a.Leaders)) - float64(l0)
		dk := float64(lev - lev0)
		return base * (1 + 0.08*dl*dl + 0.05*dk*dk)
	}
}

func perturbed() Model {
	m := DefaultModel()
	m.A *= 3
	m.B *= 0.5
	m.C[ElemAny] *= 2
	m.S *= 2
	m.Conc = ZoneCurve(1<<10, 16<<10, 8)
	return m
}

type surfaceCase struct {
	name string
	key  Key
	cost func(int, Arm) float64
}

func surfaceCases() []surfaceCase {
	var cs []surfaceCase
	def, per := DefaultModel(), perturbed()
	seg := 256 << 10
	for _, lay := range []Layout{{4, 8}, {2, 16}, {1, 32}, {8, 4}} {
		for _, lb := range []int{10, 16, 20, 24} {
			k := MakeKey(ElemFloat32, OpArith, 1<<lb, lay)
			cs = append(cs,
				surfaceCase{fmt.Sprintf("model/%v/2^%d", lay, lb), k, ModelSurface(def, k, seg)},
				surfaceCase{fmt.Sprintf("perturbed/%v/2^%d", lay, lb), k, ModelSurface(per, k, seg)})
		}
	}
	k := MakeKey(ElemFloat32, OpArith, 16<<20, Layout{4, 32})
	cs = append(cs,
		surfaceCase{"bowl/corner-l32-k8", k, bowl(1e-3, 5, 4, 3)},
		surfaceCase{"bowl/l1-dpml", k, bowl(1e-3, 0, 0, 1.5)},
		surfaceCase{"bowl/middle-l4-k2", k, bowl(1e-3, 2, 2, 2)},
		surfaceCase{"bowl/native-best", k, bowl(1e-3, 0, 3, 0.8)},
		surfaceCase{"bowl/flat", k, func(int, Arm) float64 { return 1e-3 }},
	)
	return cs
}

// TestLearnerFindsBest runs the learner on synthetic surfaces, with 1 and
// 4 ranks and several noise levels, and checks that it settles on an arm
// close to the best within a bounded number of calls.
func TestLearnerFindsBest(t *testing.T) {
	cfg := Config{SegmentBytes: 256 << 10}
	noises := []struct {
		name         string
		sigma, pOut  float64
		ranks        int
		tolFinal     float64 // final cost / best cost - 1
		maxPerArm    float64 // calls before settling / arms tried
		maxSettleCal int
	}{
		{"clean", 0, 0, 1, 0.03, 3.5, 80},
		{"noise3%x4ranks", 0.03, 0, 4, 0.05, 3.5, 100},
		{"noise5%+outliers5%x4ranks", 0.05, 0.05, 4, 0.10, 4, 120},
	}
	for _, nz := range noises {
		var perArm, gaps, settle, regrets []float64
		for _, sc := range surfaceCases() {
			for seed := uint64(1); seed <= 3; seed++ {
				if nz.sigma == 0 && seed > 1 {
					continue
				}
				name := fmt.Sprintf("%s/%s/seed%d", nz.name, sc.name, seed)
				ts := newTuners(t, nz.ranks, cfg, DefaultModel())
				res, err := Simulate(ts, sc.key, sc.cost, SimOptions{Calls: 600, Noise: nz.sigma, Outliers: nz.pOut, Seed: seed})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				gap := res.FinalCost/res.BestCost - 1
				gaps = append(gaps, gap)
				if res.FirstSettledAt < 0 {
					t.Errorf("%s: never settled", name)
					continue
				}
				pa := float64(res.FirstSettledAt) / float64(res.Explored)
				perArm = append(perArm, pa)
				settle = append(settle, float64(res.FirstSettledAt))
				regret := res.Regret[len(res.Regret)-1] / res.BestCost
				regrets = append(regrets, regret)
				msg := fmt.Sprintf("%s: final %v (+%.1f%% vs best %v), settled after %d calls, %d arms tried (%.1f calls/arm), %d commits, %d episode(s), regret %.1f best-calls",
					name, res.Final, 100*gap, res.Best, res.FirstSettledAt, res.Explored, pa, res.Commits, res.Episodes, regret)
				switch {
				case gap > nz.tolFinal:
					t.Errorf("%s: final arm %.1f%% slower than the best", msg, 100*gap)
				case res.FirstSettledAt > nz.maxSettleCal:
					t.Errorf("%s: settled after %d calls, want <= %d", msg, res.FirstSettledAt, nz.maxSettleCal)
				case pa > nz.maxPerArm:
					t.Errorf("%s: %.1f calls per arm, want <= %.1f", msg, pa, nz.maxPerArm)
				case testing.Verbose():
					t.Log(msg)
				}
			}
		}
		t.Logf("%s, %d runs: final arm at the best in %.0f%% of runs, worst +%.1f%%; settled after %.1f calls on average (max %.0f), %.2f calls per tried arm; regret over 600 calls %.1f best-call times on average (max %.1f)",
			nz.name, len(gaps), 100*fracZero(gaps), 100*maxOf(gaps), mean(settle), maxOf(settle), mean(perArm), mean(regrets), maxOf(regrets))
	}
}

func fracZero(v []float64) float64 {
	n := 0
	for _, x := range v {
		if x <= 1e-12 {
			n++
		}
	}
	return float64(n) / float64(len(v))
}

func maxOf(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = math.Max(m, x)
	}
	return m
}

func containsU8(v []uint8, x uint8) bool {
	for _, y := range v {
		if y == x {
			return true
		}
	}
	return false
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// TestLearnerDrift: the surface's optimum moves after 400 calls, with the
// whole surface slower or faster (a new engine path); the frozen key must
// notice, re-explore and settle on the new optimum.
func TestLearnerDrift(t *testing.T) {
	k := MakeKey(ElemFloat32, OpArith, 16<<20, Layout{4, 32})
	for _, tc := range []struct {
		name          string
		before, after func(int, Arm) float64
		seed          uint64
	}{
		{"slower", bowl(1e-3, 1, 0, 3), bowl(2e-3, 4, 3, 3), 9},
		{"faster", bowl(2e-3, 1, 0, 3), bowl(0.5e-3, 4, 3, 3), 11},
	} {
		cost := func(call int, a Arm) float64 {
			if call < 400 {
				return tc.before(call, a)
			}
			return tc.after(call, a)
		}
		ts := newTuners(t, 4, Config{SegmentBytes: 256 << 10}, DefaultModel())
		res, err := Simulate(ts, k, cost, SimOptions{Calls: 1500, Noise: 0.03, Seed: tc.seed})
		if err != nil {
			t.Fatal(err)
		}
		if res.Episodes < 2 {
			t.Fatalf("%s: no re-exploration after the drift (episodes %d)", tc.name, res.Episodes)
		}
		if gap := res.FinalCost/res.BestCost - 1; gap > 0.08 {
			t.Errorf("%s: after drift: final %v is %.1f%% slower than best %v", tc.name, res.Final, 100*gap, res.Best)
		}
		t.Logf("drift %s: %d episodes, final %v (best %v), re-settled at call %d, regret %.1f best-calls",
			tc.name, res.Episodes, res.Final, res.Best, res.SettledAt, res.Regret[len(res.Regret)-1]/res.BestCost)
	}
	// No drift: a stationary noisy surface must not re-explore.
	ts := newTuners(t, 4, Config{SegmentBytes: 256 << 10}, DefaultModel())
	res, err := Simulate(ts, k, bowl(1e-3, 1, 0, 3), SimOptions{Calls: 3000, Noise: 0.05, Outliers: 0.02, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Episodes > 1 {
		t.Errorf("stationary surface re-explored %d times", res.Episodes-1)
	}
}

// TestDeterminismFourRanks: four ranks with different local timings (their
// own noise and outliers, one rank systematically slower) and several keys
// interleaved feed Record / Pending / max / Commit; every rank must take
// the same decision on every call.
func TestDeterminismFourRanks(t *testing.T) {
	const ranks = 4
	cfg := Config{SegmentBytes: 256 << 10, Batch: 8}
	ts := newTuners(t, ranks, cfg, DefaultModel())
	// Rank tables: a loaded (frozen) key too, to cover stride sampling.
	for _, tu := range ts {
		tb := &Table{Schema: SchemaVersion, Entries: []Entry{{Elem: "float64", Op: "arith", Log2Bytes: 12, Nodes: 4, PPN: 8, Variant: "dpml", Leaders: 2, Pipeline: 1, Estimate: 1e-5, State: "frozen"}}}
		if n, err := tu.LoadTable(tb); err != nil || n != 1 {
			t.Fatalf("LoadTable = %d, %v", n, err)
		}
	}
	lay := Layout{4, 8}
	keys := []Key{
		MakeKey(ElemFloat32, OpArith, 1<<10, lay),
		MakeKey(ElemFloat32, OpArith, 1<<18, lay),
		MakeKey(ElemFloat64, OpArith, 1<<22, lay),
		MakeKey(ElemInt, OpLogic, 1<<14, lay),
		MakeKey(ElemFloat64, OpArith, 1<<12, lay), // the loaded one
	}
	truth := perturbed()
	seq := rand.New(rand.NewPCG(42, 0)) // the application's call sequence: the same everywhere
	rngs := make([]*rand.Rand, ranks)
	for r := range rngs {
		rngs[r] = rand.New(rand.NewPCG(100+uint64(r), 1))
	}
	commits := 0
	maxed := make([]float64, 0, cfg.Batch)
	for call := 0; call < 5000; call++ {
		k := keys[seq.IntN(len(keys))]
		if call >= 2000 && call < 2600 {
			truth.A *= 1.0005 // a slow drift in the middle
		}
		a := ts[0].Choose(k)
		var flags [ranks]bool
		for r, tu := range ts {
			if b := tu.Choose(k); b != a {
				t.Fatalf("call %d key %v: rank %d chose %v, rank 0 chose %v", call, k, r, b, a)
			}
			v := truth.Breakdown(priced(a, cfg.SegmentBytes), k.Bytes(), k.Layout(), k.Elem).Total
			v *= math.Exp(0.05*rngs[r].NormFloat64()) * (1 + 0.1*float64(r)) // rank 3 is 30% slower
			if rngs[r].Float64() < 0.03 {
				v *= 10
			}
			flags[r] = tu.Record(k, a, v)
		}
		for r := 1; r < ranks; r++ {
			if flags[r] != flags[0] {
				t.Fatalf("call %d: ranks disagree on committing", call)
			}
		}
		if !flags[0] {
			continue
		}
		maxed = append(maxed[:0], ts[0].Pending()...)
		for _, tu := range ts[1:] {
			for i, v := range tu.Pending() {
				maxed[i] = math.Max(maxed[i], v)
			}
		}
		for _, tu := range ts {
			p := tu.Pending()
			copy(p, maxed) // the in-place max-allreduce
			if err := tu.Commit(p); err != nil {
				t.Fatal(err)
			}
		}
		commits++
		fp := ts[0].Fingerprint()
		for r := 1; r < ranks; r++ {
			if f := ts[r].Fingerprint(); f != fp {
				t.Fatalf("call %d: rank %d fingerprint %x != rank 0's %x", call, r, f, fp)
			}
		}
	}
	frozen := 0
	for _, in := range ts[0].Infos() {
		if in.State == Frozen {
			frozen++
		}
		t.Logf("%v: %v %s, estimate %.2f us, %d calls, %d samples, %d episode(s)", in.Key, in.Arm, in.State, in.Estimate*1e6, in.Calls, in.Samples, in.Episodes)
	}
	t.Logf("%d commits over 5000 calls", commits)
	if frozen < len(keys)-1 {
		t.Errorf("only %d of %d keys settled", frozen, len(keys))
	}
}

func TestCommitLengthMismatch(t *testing.T) {
	tu := newTuners(t, 1, Config{}, DefaultModel())[0]
	k := MakeKey(ElemFloat32, OpArith, 4096, Layout{2, 4})
	tu.Record(k, tu.Choose(k), 1e-5)
	if err := tu.Commit(nil); err == nil {
		t.Error("Commit with the wrong length: no error")
	}
	if err := tu.Commit(tu.Pending()); err != nil {
		t.Error(err)
	}
}

func TestModelMode(t *testing.T) {
	tu := newTuners(t, 1, Config{Mode: ModeModel, SegmentBytes: 256 << 10}, DefaultModel())[0]
	for _, lb := range []int{3, 10, 16, 20, 24} {
		k := MakeKey(ElemFloat32, OpArith, 1<<lb, Layout{4, 16})
		a := tu.Choose(k)
		best := math.Inf(1)
		for _, x := range tu.Arms(k) {
			best = math.Min(best, tu.Predicted(k, x))
		}
		if tu.Predicted(k, a) != best {
			t.Errorf("2^%d: model mode chose %v, not the predicted best", lb, a)
		}
		if tu.Record(k, a, 1) {
			t.Error("model mode asked for a commit")
		}
		t.Logf("2^%d B on 4x16: %v (%.1f us predicted)", lb, a, 1e6*best)
	}
	if len(tu.Pending()) != 0 {
		t.Error("model mode buffered samples")
	}
}

func TestArmSets(t *testing.T) {
	cfg, _ := Config{SegmentBytes: 1 << 20}.normalize()
	cases := []struct {
		key   Key
		arms  int
		check func([]Arm) string
	}{
		// 8 B on one node: l = 1 only (+ native).
		{MakeKey(ElemFloat32, OpArith, 8, Layout{1, 32}), 2, nil},
		// 1 MiB on one node, ppn 24: l in 1..16 and 24, DPML only (+ native).
		{MakeKey(ElemFloat32, OpArith, 1<<20, Layout{1, 24}), 7, func(as []Arm) string {
			for _, a := range as {
				if a.Variant == plan.Pipelined {
					return "pipelined arm on one node"
				}
			}
			return ""
		}},
		// ppn 1: native only.
		{MakeKey(ElemFloat32, OpArith, 1<<20, Layout{4, 1}), 1, nil},
		// 4 MiB on 4x8, segment 1 MiB: l in {1,2,4,8} x {dpml, p1, p2, p4, p8} + native.
		{MakeKey(ElemFloat32, OpArith, 4<<20, Layout{4, 8}), 21, nil},
		// 64 KiB on 4x8: one segment, so no Pipelined k = 1.
		{MakeKey(ElemFloat32, OpArith, 64<<10, Layout{4, 8}), 17, func(as []Arm) string {
			for _, a := range as {
				if a.Variant == plan.Pipelined && a.Pipeline == 1 {
					return "pipelined k=1 with one segment"
				}
			}
			return ""
		}},
		// 256 B on 4x8: l*k*64 <= 511: (1,dpml) (1,p2) (1,p4) (2,dpml) (2,p2) (4,dpml) + native.
		{MakeKey(ElemFloat32, OpArith, 256, Layout{4, 8}), 7, nil},
	}
	for _, c := range cases {
		s := newArmSet(c.key, &cfg)
		if len(s.arms) != c.arms {
			t.Errorf("%v: %d arms %v, want %d", c.key, len(s.arms), s.arms, c.arms)
		}
		if c.check != nil {
			if msg := c.check(s.arms); msg != "" {
				t.Errorf("%v: %s", c.key, msg)
			}
		}
		for i, a := range s.arms {
			switch {
			case a.Variant == plan.Native && a.Intra != plan.IntraAuto:
				t.Errorf("%v: native arm with transport %v", c.key, a.Intra)
			case a.Variant != plan.Native && a.Intra != plan.IntraShm && a.Intra != plan.IntraCMA:
				t.Errorf("%v: arm %v without an explicit transport", c.key, a)
			case a.Overlap != a.Variant.Overlaps() || a.SegmentBytes != 0:
				t.Errorf("%v: arm %+v: overlap or segment set wrong", c.key, a)
			}
			if j := s.index(a); j != i {
				t.Errorf("%v: index(%v) = %d, want %d", c.key, a, j, i)
			}
			if len(s.nbr[i]) > maxNeighbours {
				t.Errorf("%v: %v has %d neighbours", c.key, a, len(s.nbr[i]))
			}
			for _, nb := range s.nbr[i] {
				if !containsU8(s.nbr[nb], uint8(i)) {
					t.Errorf("%v: neighbourhood not symmetric at %v", c.key, a)
				}
			}
		}
		if s.index(Arm{Variant: plan.DPML, Leaders: 3, Pipeline: 1}) != -1 {
			t.Errorf("%v: l=3 found", c.key)
		}
	}
}

func TestSteadyStateAllocations(t *testing.T) {
	tu := newTuners(t, 1, Config{SegmentBytes: 256 << 10}, DefaultModel())[0]
	k := MakeKey(ElemFloat32, OpArith, 1<<20, Layout{4, 8})
	cost := ModelSurface(DefaultModel(), k, 256<<10)
	for i := 0; i < 2000; i++ { // settle
		a := tu.Choose(k)
		if tu.Record(k, a, cost(i, a)) {
			_ = tu.Commit(tu.Pending())
		}
	}
	if in, _ := tu.Info(k); in.State != Frozen {
		t.Fatalf("key did not settle: %+v", in)
	}
	k2 := MakeKey(ElemFloat32, OpArith, 1<<10, Layout{4, 8})
	tu.Choose(k2)
	i := 0
	allocs := testing.AllocsPerRun(5000, func() {
		kk := k
		if i%3 == 0 {
			kk = k2 // defeat the one-entry cache
		}
		a := tu.Choose(kk)
		if tu.Record(kk, a, cost(i, a)) {
			_ = tu.Commit(tu.Pending())
		}
		i++
	})
	if allocs != 0 {
		t.Errorf("Choose/Record/Commit allocate %.2f times per call in steady state", allocs)
	}
}

// TestRegretSeries writes the regret-over-calls series of a few runs as CSV
// to $COSTMODEL_REGRET_DIR/regret.csv when that is set (for plotting).
func TestRegretSeries(t *testing.T) {
	k := MakeKey(ElemFloat32, OpArith, 4<<20, Layout{4, 8})
	var b strings.Builder
	for i, sc := range []struct {
		name string
		cost func(int, Arm) float64
	}{{"model", ModelSurface(DefaultModel(), k, 256<<10)}, {"perturbed", ModelSurface(perturbed(), k, 256<<10)}, {"bowl", bowl(1e-3, 3, 3, 3)}} {
		ts := newTuners(t, 4, Config{SegmentBytes: 256 << 10}, DefaultModel())
		res, err := Simulate(ts, k, sc.cost, SimOptions{Calls: 300, Noise: 0.03, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := res.WriteCSV(&b, sc.name, i == 0); err != nil {
			t.Fatal(err)
		}
		// Regret is non-decreasing and stops growing once settled on the best arm.
		for j := 1; j < len(res.Regret); j++ {
			if res.Regret[j] < res.Regret[j-1] {
				t.Fatalf("%s: regret decreases at call %d", sc.name, j)
			}
		}
		if res.Final == res.Best && res.SettledAt >= 0 {
			if tail := res.Regret[len(res.Regret)-1] - res.Regret[res.SettledAt]; tail > 1e-12 {
				t.Errorf("%s: regret grew by %g after settling on the best arm", sc.name, tail)
			}
		}
		t.Logf("%s: settled on %v after %d calls; regret %.1f best-call times", sc.name, res.Final, res.SettledAt, res.Regret[len(res.Regret)-1]/res.BestCost)
	}
	if dir := os.Getenv("COSTMODEL_REGRET_DIR"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "regret.csv"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLearnerPicksIntraPath: with Config.CMA the arms come in pairs (copies,
// cross-memory attach); the learner must find the faster path of each size.
func TestLearnerPicksIntraPath(t *testing.T) {
	for _, tc := range []struct {
		bytes   int
		cmaGain float64 // CMA arm time = copy arm time * cmaGain
	}{
		{4 << 20, 0.7}, {4 << 20, 1.4}, {256 << 10, 0.8},
	} {
		k := MakeKey(ElemFloat32, OpArith, tc.bytes, Layout{1, 32})
		base := bowl(1e-3, 3, 0, 3)
		cost := func(call int, a Arm) float64 {
			c := base(call, a)
			if a.Intra == plan.IntraCMA {
				c *= tc.cmaGain
			}
			return c
		}
		ts := newTuners(t, 4, Config{SegmentBytes: 256 << 10, CMA: true}, DefaultModel())
		res, err := Simulate(ts, k, cost, SimOptions{Calls: 800, Noise: 0.03, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		if (res.Final.Intra == plan.IntraCMA) != (tc.cmaGain < 1) {
			t.Errorf("%d B, CMA x%.1f: settled on %v (best %v)", tc.bytes, tc.cmaGain, res.Final, res.Best)
		}
		if gap := res.FinalCost/res.BestCost - 1; gap > 0.08 {
			t.Errorf("%d B, CMA x%.1f: final %v is %.1f%% slower than best %v", tc.bytes, tc.cmaGain, res.Final, 100*gap, res.Best)
		}
	}
	// Small buckets get no CMA arms.
	tu, err := NewTuner(Config{CMA: true}, DefaultModel())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range tu.Arms(MakeKey(ElemFloat32, OpArith, 1<<10, Layout{1, 32})) {
		if a.Intra == plan.IntraCMA {
			t.Fatalf("a 1 KiB bucket offers %v", a)
		}
	}
}

// TestColdFirstCalls: every arm's first two calls cost 50 times its steady
// time (connections opened and pages faulted on first use). The key must
// still settle once, with a reference estimate from steady calls, and not
// re-explore because its steady calls look "faster" than the cold ones.
func TestColdFirstCalls(t *testing.T) {
	k := MakeKey(ElemFloat32, OpArith, 16<<20, Layout{4, 32})
	steady := bowl(1e-3, 1, 0, 3)
	tu := newTuners(t, 1, Config{SegmentBytes: 256 << 10}, DefaultModel())[0]
	rng := rand.New(rand.NewPCG(7, 1))
	used := map[Arm]int{}
	for call := 0; call < 800; call++ {
		a := tu.Choose(k)
		v := steady(call, a) * math.Exp(0.03*rng.NormFloat64())
		if used[a]++; used[a] <= 2 {
			v *= 50
		}
		if tu.Record(k, a, v) {
			if err := tu.Commit(append([]float64(nil), tu.Pending()...)); err != nil {
				t.Fatal(err)
			}
		}
	}
	in, ok := tu.Info(k)
	if !ok || in.State != Frozen {
		t.Fatalf("not settled: %+v", in)
	}
	if in.Episodes > 1 {
		t.Errorf("re-explored %d times after cold first calls", in.Episodes-1)
	}
	if want := steady(0, in.Arm); math.Abs(in.Estimate/want-1) > 0.1 {
		t.Errorf("reference estimate %.3g s, steady time of %v is %.3g s", in.Estimate, in.Arm, want)
	}
}
