package learn

import (
	"fmt"
	"github.com/dpmlgo/dpml/costmodel"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
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
	m := costmodel.DefaultModel()
	m.A *= 3
	m.B *= 0.5
	m.C[costmodel.ElemAny] *= 2
	m.S *= 2
	m.Conc = costmodel.ZoneCurve(1<<10, 16<<10, 8)
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

// TestDeterminismFourRanks: four ranks with different local timings (their
// own noise and outliers, one rank systematically slower) and several keys
// interleaved feed Record / Pending / max / Commit; every rank must take
// the same decision on every call.
func TestDeterminismFourRanks(t *testing.T) {
	const ranks = 4
	cfg := Config{Budget: -1, SegmentBytes: 256 << 10, Batch: 8}
	ts := newTuners(t, ranks, cfg, costmodel.DefaultModel())
	// Rank tables: a loaded (frozen) key too, to cover stride sampling.
	for _, tu := range ts {
		tb := &Table{Schema: costmodel.SchemaVersion, Entries: []Entry{{Elem: "float64", Op: "arith", Log2Bytes: 12, Nodes: 4, PPN: 8, Variant: "dpml", Leaders: 2, Pipeline: 1, Estimate: 1e-5, State: "frozen"}}}
		if n, err := tu.LoadTable(tb); err != nil || n != 1 {
			t.Fatalf("LoadTable = %d, %v", n, err)
		}
	}
	lay := Layout{Nodes: 4, PPN: 8}
	keys := []Key{
		costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<10, lay),
		costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<18, lay),
		costmodel.MakeKey(costmodel.ElemFloat64, costmodel.OpArith, 1<<22, lay),
		costmodel.MakeKey(costmodel.ElemInt, costmodel.OpLogic, 1<<14, lay),
		costmodel.MakeKey(costmodel.ElemFloat64, costmodel.OpArith, 1<<12, lay), // the loaded one
	}
	truth := perturbed()
	seq := rand.New(rand.NewPCG(42, 0)) // the application's call sequence: the same everywhere
	rngs := make([]*rand.Rand, ranks)
	for r := range rngs {
		rngs[r] = rand.New(rand.NewPCG(100+uint64(r), 1))
	}
	commits := 0
	maxed := make([]float64, 0, 3*cfg.Batch)
	summed := make([]int64, 0, cfg.Batch+1)
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
		summed = summed[:0]
		for r, tu := range ts {
			for i, v := range tu.Exits(maxed) {
				if r == 0 {
					summed = append(summed, v)
				} else {
					summed[i] = tu.Second().Combine(summed[i], v)
				}
			}
		}
		for _, tu := range ts {
			p := tu.Pending()
			copy(p, maxed) // the in-place max-allreduce
			x := tu.Exits(maxed)
			copy(x, summed) // the in-place second allreduce
			if err := tu.Commit(p, x); err != nil {
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
	tu := newTuners(t, 1, Config{Budget: -1}, costmodel.DefaultModel())[0]
	k := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 4096, Layout{Nodes: 2, PPN: 4})
	tu.Record(k, tu.Choose(k), 1e-5)
	if err := tu.Commit(nil, nil); err == nil {
		t.Error("Commit with the wrong length: no error")
	}
	if err := commitLocal(tu); err != nil {
		t.Error(err)
	}
}

func TestModelMode(t *testing.T) {
	tu := newTuners(t, 1, Config{Budget: -1, Mode: ModeModel, SegmentBytes: 256 << 10}, costmodel.DefaultModel())[0]
	for _, lb := range []int{3, 10, 16, 20, 24} {
		k := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<lb, Layout{Nodes: 4, PPN: 16})
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
	cfg, _ := Config{Budget: -1, SegmentBytes: 1 << 20}.normalize()
	cases := []struct {
		key   Key
		arms  int
		check func([]Arm) string
	}{
		// 8 B on one node: l = 1 only, the tree with radix 4..32 (32 is
		// flat for ppn 32: 64 would build the same tree), native.
		{costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 8, Layout{Nodes: 1, PPN: 32}), 6, func(as []Arm) string {
			var rs []int
			for _, a := range as {
				if a.Intra == plan.IntraTree {
					rs = append(rs, a.Radix)
				}
			}
			if !slices.Equal(rs, []int{4, 8, 16, 32}) {
				return fmt.Sprintf("tree radixes %v, want 4 8 16 32", rs)
			}
			return ""
		}},
		// 16 KiB is the tree arms' last bucket (radix 4 and 8; one node:
		// no multi-tree arms); 32 KiB has none.
		{costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 16<<10, Layout{Nodes: 1, PPN: 8}), 5 + 2, nil},
		// On 2 nodes the same bucket adds l = 2, 4, 8 trees at radix 8.
		{costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 16<<10, Layout{Nodes: 2, PPN: 8}), 0, func(as []Arm) string {
			var ls []int
			for _, a := range as {
				if a.Intra == plan.IntraTree && a.Leaders > 1 {
					ls = append(ls, a.Leaders)
					if a.Radix != costmodel.DefaultTreeRadix {
						return fmt.Sprintf("multi-tree arm %v: want radix %d", a, costmodel.DefaultTreeRadix)
					}
				}
			}
			if !slices.Equal(ls, []int{2, 4, 8}) {
				return fmt.Sprintf("multi-tree arms l = %v, want 2 4 8", ls)
			}
			return ""
		}},
		{costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 32<<10, Layout{Nodes: 1, PPN: 8}), 5, nil},
		// 1 MiB on one node, ppn 24: l in 1..16 and 24, DPML only (+ native).
		{costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<20, Layout{Nodes: 1, PPN: 24}), 7, func(as []Arm) string {
			for _, a := range as {
				if a.Variant == plan.Pipelined {
					return "pipelined arm on one node"
				}
			}
			return ""
		}},
		// ppn 1: native only.
		{costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<20, Layout{Nodes: 4, PPN: 1}), 1, nil},
		// 4 MiB on 4x8, segment 1 MiB: l in {1,2,4,8} x {dpml, p1, p2, p4, p8},
		// each with its ring twin, + native.
		{costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 4<<20, Layout{Nodes: 4, PPN: 8}), 41, nil},
		// The same on two nodes: no ring twins.
		{costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 4<<20, Layout{Nodes: 2, PPN: 8}), 21, nil},
		// 32 KiB on 4x8: below RingBytes, no ring twins.
		{costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 32<<10, Layout{Nodes: 4, PPN: 8}), 0, func(as []Arm) string {
			for _, a := range as {
				if a.Inter != plan.InterAuto {
					return fmt.Sprintf("arm %v below RingBytes", a)
				}
			}
			return ""
		}},
		// 64 KiB on 4x8: one segment, so no Pipelined k = 1; ring twins.
		{costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 64<<10, Layout{Nodes: 4, PPN: 8}), 33, func(as []Arm) string {
			for _, a := range as {
				if a.Variant == plan.Pipelined && a.Pipeline == 1 {
					return "pipelined k=1 with one segment"
				}
			}
			return ""
		}},
		// 256 B on 4x8: l*k*64 <= 511: (1,dpml) (1,p2) (1,p4) (2,dpml) (2,p2) (4,dpml),
		// the tree with radix 4, 8, l = 2 and 4 trees (l*64 <= 511), native.
		{costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 256, Layout{Nodes: 4, PPN: 8}), 11, nil},
	}
	for _, c := range cases {
		s := newArmSet(c.key, &cfg)
		if c.arms > 0 && len(s.arms) != c.arms {
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
			case a.Variant != plan.Native && a.Intra != plan.IntraShm && a.Intra != plan.IntraCMA && a.Intra != plan.IntraTree:
				t.Errorf("%v: arm %v without an explicit transport", c.key, a)
			case a.Intra == plan.IntraTree && (a.Leaders < 1 || a.Leaders > plan.MaxTrees || a.Pipeline != 1 || a.Variant != plan.DPML || a.Radix < 2):
				t.Errorf("%v: tree arm %+v: want dpml l=1..%d k=1 with a radix", c.key, a, plan.MaxTrees)
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
				// Symmetric but for the tree's one-way links to the
				// two ends of the leader axis.
				oneWay := a.Intra == plan.IntraTree && s.arms[nb].Intra != plan.IntraTree && s.arms[nb].Variant != plan.Native
				if !oneWay && !containsU8(s.nbr[nb], uint8(i)) {
					t.Errorf("%v: neighbourhood not symmetric at %v", c.key, a)
				}
			}
		}
		if s.index(Arm{Variant: plan.DPML, Leaders: 3, Pipeline: 1}) != -1 {
			t.Errorf("%v: l=3 found", c.key)
		}
		// Every tree arm reaches both ends of the leader axis in one move.
		if len(s.tree) > 0 && len(s.grid) > 0 {
			lo, hi := s.grid[0][0], s.grid[len(s.grid)-1][0]
			for _, ti := range s.tree {
				for _, g := range []int16{lo, hi} {
					if g >= 0 && !containsU8(s.nbr[ti], uint8(g)) {
						t.Errorf("%v: %v is not a neighbour of tree arm %v", c.key, s.arms[g], s.arms[ti])
					}
				}
			}
		}
	}
}

func TestSteadyStateAllocations(t *testing.T) {
	tu := newTuners(t, 1, Config{Budget: -1, SegmentBytes: 256 << 10}, costmodel.DefaultModel())[0]
	k := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<20, Layout{Nodes: 4, PPN: 8})
	cost := modelSurface(costmodel.DefaultModel(), k, 256<<10)
	for i := 0; i < 2000; i++ { // settle
		a := tu.Choose(k)
		if tu.Record(k, a, cost(i, a)) {
			_ = commitLocal(tu)
		}
	}
	if in, _ := tu.Info(k); in.State != Frozen {
		t.Fatalf("key did not settle: %+v", in)
	}
	k2 := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<10, Layout{Nodes: 4, PPN: 8})
	tu.Choose(k2)
	i := 0
	allocs := testing.AllocsPerRun(5000, func() {
		kk := k
		if i%3 == 0 {
			kk = k2 // defeat the one-entry cache
		}
		a := tu.Choose(kk)
		if tu.Record(kk, a, cost(i, a)) {
			_ = commitLocal(tu)
		}
		i++
	})
	if allocs != 0 {
		t.Errorf("Choose/Record/Commit allocate %.2f times per call in steady state", allocs)
	}
}

// TestColdFirstCalls: every arm's first two calls cost 50 times its steady
// time (connections opened and pages faulted on first use). The key must
// still settle once, with a reference estimate from steady calls, and not
// re-explore because its steady calls look "faster" than the cold ones.
func TestColdFirstCalls(t *testing.T) {
	k := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 16<<20, Layout{Nodes: 4, PPN: 32})
	steady := bowl(1e-3, 1, 0, 3)
	tu := newTuners(t, 1, Config{Budget: -1, SegmentBytes: 256 << 10}, costmodel.DefaultModel())[0]
	rng := rand.New(rand.NewPCG(7, 1))
	used := map[Arm]int{}
	for call := 0; call < 800; call++ {
		a := tu.Choose(k)
		v := steady(call, a) * math.Exp(0.03*rng.NormFloat64())
		if used[a]++; used[a] <= 2 {
			v *= 50
		}
		if tu.Record(k, a, v) {
			if err := commitLocal(tu); err != nil {
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

// TestRingArms: on three nodes or more and for buckets from RingBytes,
// every grid arm gets a twin with the ring as its inter-node step, one
// move away from its host arm; none on two nodes, below the threshold or
// with RingBytes negative.
func TestRingArms(t *testing.T) {
	set := func(cfg Config, k Key) *armSet {
		c, err := cfg.normalize()
		if err != nil {
			t.Fatal(err)
		}
		return newArmSet(k, &c)
	}
	rings := func(s *armSet) int {
		n := 0
		for _, a := range s.arms {
			if a.Inter == plan.InterRing {
				n++
			}
		}
		return n
	}
	for _, c := range []struct {
		cfg   Config
		key   Key
		twins int
	}{
		{Config{Budget: -1}, costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<20, Layout{Nodes: 3, PPN: 4}), -1},
		{Config{Budget: -1, CMA: true}, costmodel.MakeKey(costmodel.ElemFloat64, costmodel.OpArith, 16<<20, Layout{Nodes: 5, PPN: 2}), -1},
		{Config{Budget: -1}, costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<20, Layout{Nodes: 2, PPN: 4}), 0},
		{Config{Budget: -1}, costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 32<<10, Layout{Nodes: 4, PPN: 4}), 0},
		{Config{Budget: -1, RingBytes: -1}, costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<20, Layout{Nodes: 4, PPN: 4}), 0},
		{Config{Budget: -1, RingBytes: 8 << 10}, costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 8<<10, Layout{Nodes: 4, PPN: 4}), -1},
		{Config{Budget: -1}, costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<20, Layout{Nodes: 4, PPN: 1}), 0}, // ppn 1: native only
	} {
		s := set(c.cfg, c.key)
		grid := 0
		for _, row := range s.grid {
			for _, i := range row {
				if i >= 0 {
					grid++
				}
			}
		}
		want := c.twins
		if want < 0 {
			want = grid // every grid arm
		}
		if got := rings(s); got != want || want > 0 && grid == 0 {
			t.Errorf("%v: %d ring arms (%d grid arms), want %d", c.key, got, grid, want)
		}
		for i, a := range s.arms {
			if a.Inter != plan.InterRing {
				continue
			}
			h := a
			h.Inter = plan.InterAuto
			j := s.index(h)
			if j < 0 || int(s.ring[j]) != i || s.index(a) != i {
				t.Errorf("%v: ring twin %v (arm %d) not paired with its host arm (%d)", c.key, a, i, j)
				continue
			}
			if !containsU8(s.nbr[i], uint8(j)) || !containsU8(s.nbr[j], uint8(i)) {
				t.Errorf("%v: ring twin %v and its host arm are not neighbours", c.key, a)
			}
			if m := h; true {
				m.Inter = plan.InterMPI // the default step, named: the host arm
				if s.index(m) != j {
					t.Errorf("%v: index(%v) = %d, want the host arm %d", c.key, m, s.index(m), j)
				}
			}
		}
	}
}

// The ring's cost is its own: 2(n-1) rounds of one chunk (plan.Split of
// the step in n cache-line pieces), against the MPI library's ceil(lg n)
// rounds of the whole step; so the ring loses small steps and wins large
// ones from three nodes on, and loses on two.
func TestRingCost(t *testing.T) {
	m := costmodel.DefaultModel()
	m.Conc = costmodel.Concurrency{} // one pair: no concurrency curve
	for _, c := range []struct{ bytes, nodes int }{{1 << 20, 4}, {1000, 3}, {64, 5}, {4 << 20, 8}} {
		_, chunk := plan.Split(c.bytes, c.nodes, plan.CacheLine)
		want := float64(2*(c.nodes-1)) * (m.A + float64(chunk)*m.B)
		if got := m.InterStep(plan.InterRing, 1, 1, c.bytes, c.nodes); math.Abs(got/want-1) > 1e-12 {
			t.Errorf("ring, %d B on %d nodes: %g s, want 2(n-1)(a + chunk b) = %g", c.bytes, c.nodes, got, want)
		}
		rd := costmodel.Rounds(c.nodes) * (m.A + float64(c.bytes)*m.B)
		if got := m.InterStep(plan.InterMPI, 1, 1, c.bytes, c.nodes); math.Abs(got/rd-1) > 1e-12 {
			t.Errorf("mpi, %d B on %d nodes: %g s, want ceil(lg n)(a + n b) = %g", c.bytes, c.nodes, got, rd)
		}
	}
	d := costmodel.DefaultModel()
	big, small := Arm{Variant: plan.Pipelined, Leaders: 8, Pipeline: 2, Intra: plan.IntraShm, Overlap: true}, Arm{Variant: plan.DPML, Leaders: 1, Pipeline: 1, Intra: plan.IntraShm}
	ring := func(a Arm) Arm { a.Inter = plan.InterRing; return a }
	lay4, lay2 := Layout{Nodes: 4, PPN: 8}, Layout{Nodes: 2, PPN: 8}
	if r, h := d.Predict(ring(big), 64<<20, lay4), d.Predict(big, 64<<20, lay4); !(r < h) {
		t.Errorf("64 MiB on 4x8: ring %g s, MPI %g s: want the ring cheaper", r, h)
	}
	if r, h := d.Predict(ring(small), 4<<10, lay4), d.Predict(small, 4<<10, lay4); !(r > h) {
		t.Errorf("4 KiB on 4x8: ring %g s, MPI %g s: want the ring dearer", r, h)
	}
	if r, h := d.Predict(ring(big), 64<<20, lay2), d.Predict(big, 64<<20, lay2); !(r > h) {
		t.Errorf("64 MiB on 2x8: ring %g s, MPI %g s: want the ring dearer", r, h)
	}
	// One node: no inter-node step, whatever the algorithm.
	if r, h := d.Predict(ring(big), 1<<20, Layout{Nodes: 1, PPN: 8}), d.Predict(big, 1<<20, Layout{Nodes: 1, PPN: 8}); r != h {
		t.Errorf("one node: ring %g s, MPI %g s", r, h)
	}
}

// TestOffloadArms: on several nodes and for buckets up to OffloadBytes,
// the arms the offload serves get twins with the inter-node step
// in-network, one move away from their host arm; none on one node or
// above the threshold. Node level twins the tree's arms, socket level the
// DPML copies arm with l = OffloadLeaders.
func TestOffloadArms(t *testing.T) {
	twins := func(cfg Config, k Key) (host []Arm, s *armSet) {
		c, err := cfg.normalize()
		if err != nil {
			t.Fatal(err)
		}
		s = newArmSet(k, &c)
		for i, a := range s.arms {
			if a.Offload != plan.OffloadSharp {
				continue
			}
			h := a
			h.Offload = plan.OffloadAuto
			j := s.index(h)
			if j < 0 || int(s.twin[j]) != i || s.index(a) != i {
				t.Errorf("%v: twin %v (arm %d) not paired with its host arm (%d)", k, a, i, j)
				continue
			}
			if !containsU8(s.nbr[i], uint8(j)) || !containsU8(s.nbr[j], uint8(i)) {
				t.Errorf("%v: twin %v and its host arm are not neighbours", k, a)
			}
			host = append(host, h)
		}
		return host, s
	}
	node := Config{Budget: -1, OffloadBytes: 4 << 10}
	host, _ := twins(node, costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 8, Layout{Nodes: 2, PPN: 8}))
	if len(host) != 2 {
		t.Errorf("2x8, 8 B, node level: twins of %v, want the two tree arms (r=4, 8)", host)
	}
	for _, a := range host {
		if a.Intra != plan.IntraTree {
			t.Errorf("node level twin of %v, want tree arms only", a)
		}
	}
	if host, _ := twins(node, costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 8<<10, Layout{Nodes: 2, PPN: 8})); len(host) != 0 {
		t.Errorf("8 KiB over a 4 KiB threshold: twins of %v", host)
	}
	if host, _ := twins(node, costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 8, Layout{Nodes: 1, PPN: 8})); len(host) != 0 {
		t.Errorf("one node: twins of %v", host)
	}
	socket := Config{Budget: -1, OffloadBytes: 4 << 10, OffloadLeaders: 2}
	host, _ = twins(socket, costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<10, Layout{Nodes: 2, PPN: 8}))
	if len(host) != 1 || host[0] != (Arm{Variant: plan.DPML, Leaders: 2, Pipeline: 1, Intra: plan.IntraShm}) {
		t.Errorf("socket level (2 leaders), 1 KiB: twins of %v, want dpml l=2 with copies", host)
	}
	// The model prices the offloaded step apart from the host's.
	m := costmodel.DefaultModel()
	tr := Arm{Variant: plan.DPML, Leaders: 1, Pipeline: 1, Intra: plan.IntraTree, Radix: 8}
	off := tr
	off.Offload = plan.OffloadSharp
	lay := Layout{Nodes: 32, PPN: 8}
	if a, b := m.Predict(off, 8, lay), m.Predict(tr, 8, lay); !(a < b) {
		t.Errorf("32 nodes, 8 B: offloaded tree %g s, host tree %g s: want the offload cheaper (no rounds over nodes)", a, b)
	}
}

// commitLocal is the commit step of a single-rank communicator: the
// allreduces over one rank leave both buffers as they are.
func commitLocal(tu *Tuner) error {
	b := tu.Pending()
	return tu.Commit(b, tu.Exits(b))
}

// TestKeyStateSkip: the calls Untimed promises (a settled key's calls
// before its next stride sample) credited with Skip leave the learner as
// Next and Record of each would: the engine's fused calls that libdpml.so
// runs in C rely on it (dpml/fused.go). Two single-rank learners see the
// same timed calls; one also sees every untimed call, the other skips them.
func TestKeyStateSkip(t *testing.T) {
	for _, mode := range []Mode{ModeLearn, ModeModel} {
		t.Run(map[Mode]string{ModeLearn: "learn", ModeModel: "model"}[mode], func(t *testing.T) {
			ts := newTuners(t, 2, Config{Budget: -1, Mode: mode}, costmodel.DefaultModel())
			k := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 8, Layout{Nodes: 1, PPN: 16})
			cost := bowl(1e-6, 1, 0, 3)
			rng := rand.New(rand.NewPCG(1, 2))
			// call makes one call of k on tuner i, timed as it asks.
			call := func(i int, v float64) (timed bool) {
				ks := ts[i].State(k)
				a, timed := ks.Next()
				if timed {
					v *= cost(0, a)
				} else {
					v = 0
				}
				if ks.Record(a, 0, v) {
					if err := commitLocal(ts[i]); err != nil {
						t.Fatal(err)
					}
				}
				return timed
			}
			for n := 0; n < 3000; n++ { // both explore and settle alike
				v := 1 + 0.1*rng.Float64()
				call(0, v)
				call(1, v)
			}
			if in, _ := ts[0].Info(k); in.State != Frozen {
				t.Fatalf("not settled after 3000 calls: %+v", in)
			}
			skipped := 0
			for round := 0; round < 400; round++ {
				u := ts[0].State(k).Untimed()
				if u2 := ts[1].State(k).Untimed(); u2 != u {
					t.Fatalf("round %d: Untimed %d and %d on equal learners", round, u, u2)
				}
				if mode == ModeModel {
					u = 1 + rng.IntN(1000) // any number: the model learns nothing
				}
				for j := 0; j < u; j++ {
					if call(0, 1) && mode != ModeModel {
						t.Fatalf("round %d: call %d of %d Untimed calls was timed", round, j+1, u)
					}
				}
				ts[1].State(k).Skip(u)
				skipped += u
				v := 1 + 0.1*rng.Float64()
				// Timed after the untimed calls of a settled key (u > 0);
				// a key exploring again may be at a warm-up call.
				if a, b := call(0, v), call(1, v); a != b || !a && mode != ModeModel && u > 0 {
					t.Fatalf("round %d: the call after %d untimed ones timed %v, after Skip %v; want both timed", round, u, a, b)
				}
				if fa, fb := ts[0].Fingerprint(), ts[1].Fingerprint(); fa != fb {
					t.Fatalf("round %d: learners differ after Skip(%d): fingerprints %#x and %#x", round, u, fa, fb)
				}
			}
			ia, _ := ts[0].Info(k)
			ib, _ := ts[1].Info(k)
			if ia.Calls != ib.Calls {
				t.Errorf("calls %d and %d after skipping %d", ia.Calls, ib.Calls, skipped)
			}
			t.Logf("%d calls, %d of them skipped; stride %d", ia.Calls, skipped, ia.Stride)
		})
	}
}

// TestKeyStateSamples: a settled key's stride samples planned by Samples
// and credited by RecordSampled (libdpml.so's C layer runs and stamps
// them: dpml/fused.go) leave the learner as Next and Record of each call
// would, across commit steps and re-explorations. Two single-rank learners
// see the same calls at the same times: one every call, the other each
// planned run at once, cut short at a random call as when the program
// moves to another size. The sample that makes the commit step due must be
// the last planned, and RecordSampled must say so when it ran.
//
// Mutation checks: Samples ignoring the batch (n = max) -> "commit due at
// sample 1 of 16"; RecordSampled skipping one call fewer before each
// sample -> "RecordSampled says commit false, the calls one by one true".
func TestKeyStateSamples(t *testing.T) {
	ts := newTuners(t, 2, Config{Budget: -1, Batch: 6}, costmodel.DefaultModel())
	k := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 8, Layout{Nodes: 1, PPN: 16})
	cost := bowl(1e-6, 1, 0, 3)
	rng := rand.New(rand.NewPCG(3, 4))
	times := func(a Arm, v float64) float64 { return v * cost(0, a) }
	// call makes one call of k on tuner i at time v (scaled by its arm's cost), as the engine does.
	call := func(i int, v float64) (timed, commit bool) {
		ks := ts[i].State(k)
		a, timed := ks.Next()
		x := 0.0
		if timed {
			x = times(a, v)
		}
		if commit = ks.Record(a, 0, x); commit {
			if err := commitLocal(ts[i]); err != nil {
				t.Fatal(err)
			}
		}
		return timed, commit
	}
	for n := 0; n < 3000; n++ {
		v := 1 + 0.1*rng.Float64()
		call(0, v)
		call(1, v)
	}
	planned, commits := 0, 0
	for round := 0; round < 3000; round++ {
		ks := ts[1].State(k)
		gap, stride, n := ks.Samples(16)
		if n == 0 {
			v := 1 + 0.1*rng.Float64()
			call(0, v)
			call(1, v)
			continue
		}
		planned++
		total := gap + (n-1)*stride + 1
		ran := total
		if rng.IntN(4) == 0 {
			ran = rng.IntN(total + 1) // cut short
		}
		a := ks.Peek()
		var es, xs []float64
		commit0 := false
		for j := 0; j < ran; j++ {
			v := 1 + 0.1*rng.Float64()
			timed, c := call(0, v)
			sample := j >= gap && (j-gap)%stride == 0
			if timed != sample {
				t.Fatalf("round %d: call %d of a run planned (gap %d, stride %d, %d samples) timed %v", round, j, gap, stride, n, timed)
			}
			if c && j != total-1 {
				t.Fatalf("round %d: commit due at sample %d of %d", round, (j-gap)/stride+1, n)
			}
			commit0 = commit0 || c
			if sample {
				es, xs = append(es, 0), append(xs, times(a, v))
			}
		}
		commit1 := ks.RecordSampled(gap, stride, ran, es, xs)
		if commit1 != commit0 {
			t.Fatalf("round %d: RecordSampled says commit %v, the calls one by one %v", round, commit1, commit0)
		}
		if commit1 {
			commits++
			if err := commitLocal(ts[1]); err != nil {
				t.Fatal(err)
			}
		}
		if fa, fb := ts[0].Fingerprint(), ts[1].Fingerprint(); fa != fb {
			t.Fatalf("round %d: learners differ after %d of %d planned calls: fingerprints %#x and %#x", round, ran, total, fa, fb)
		}
	}
	if planned == 0 || commits == 0 {
		t.Fatalf("%d planned runs, %d commit steps through them: the path did not run", planned, commits)
	}
	ia, _ := ts[0].Info(k)
	t.Logf("%d planned runs, %d commits; %d calls, stride %d", planned, commits, ia.Calls, ia.Stride)
}

// TestKeyStateBlock: the confirmation's blocks that a caller runs without
// Next and Record on every call and reports with RecordBlock (libdpml.so's
// C layer does: dpml/fused.go) leave the learner exactly as Next and
// Record of each call would. Two single-rank learners see the same calls at
// the same times; one is told each block at once (whole, or 3 of its calls
// and then one call by call, as when another key's call cuts it short),
// the other every call. With warm set, the call before each fresh block
// is a warm-up (Warm) on both, as the engine makes it, and must be no
// sample: the block after it is still a whole block.
//
// Mutation checks: RecordBlock counting the block as one call, or giving
// every call the block's first entry, makes the fingerprints part; Warm recording
// its call as a block's first (Record) fails the whole-block check.
func TestKeyStateBlock(t *testing.T) {
	k := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<10, Layout{Nodes: 1, PPN: 16})
	for _, tc := range []struct {
		cut  int
		warm bool
	}{{0, false}, {3, false}, {0, true}, {3, true}} {
		cut := tc.cut
		t.Run(fmt.Sprintf("cut=%d,warm=%v", cut, tc.warm), func(t *testing.T) {
			ts := newTuners(t, 2, Config{Budget: -1, ConfirmCalls: 300}, costmodel.DefaultModel())
			cb := ts[0].Config().ConfirmBlock
			cost := func(n int, a Arm) float64 {
				c := 3e-6
				if a.Intra == plan.IntraTree {
					c = (1 + 0.05*float64(a.Radix%5)) * 1e-6
				}
				return c * (1 + 0.2*float64((n*7919)%13)/13)
			}
			var now [2]float64
			// call makes call n on learner i through Next and Record.
			call := func(i, n int) {
				ks := ts[i].State(k)
				a, timed := ks.Next()
				entry, exit := now[i], now[i]+cost(n, a)
				now[i] = exit
				if !timed {
					entry, exit = 0, 0
				}
				if ks.Record(a, entry, exit) {
					if err := commitLocal(ts[i]); err != nil {
						t.Fatal(err)
					}
				}
			}
			blocks, blockCalls, warms := 0, 0, 0
			warmed := false
			for n := 0; n < 6000; {
				a, m := ts[1].State(k).Block()
				switch {
				case m == 0:
					call(0, n)
					call(1, n)
					n++
				case tc.warm && m == cb && !warmed:
					for i := range ts {
						ks := ts[i].State(k)
						a, _ := ks.Next()
						now[i] += cost(n, a)
						ks.Warm(a)
					}
					n++
					warms++
					warmed = true
					if b, m := ts[1].State(k).Block(); m != cb || b != a {
						t.Fatalf("call %d: after a warm-up call of %v the block is %d calls of %v, want %d of it", n, a, m, b, cb)
					}
				default:
					warmed = false
					if cut > 0 {
						m = min(m, cut)
					}
					entries, exits := make([]float64, m), make([]float64, m)
					for j := range m {
						call(0, n+j)
						entries[j] = now[1]
						now[1] += cost(n+j, a)
						exits[j] = now[1]
					}
					if ts[1].State(k).RecordBlock(a, entries, exits) {
						if err := commitLocal(ts[1]); err != nil {
							t.Fatal(err)
						}
					}
					n += m
					blocks++
					blockCalls += m
					if cut > 0 { // the block's next call goes call by call
						call(0, n)
						call(1, n)
						n++
					}
				}
				if fa, fb := ts[0].Fingerprint(), ts[1].Fingerprint(); fa != fb {
					t.Fatalf("call %d (%d blocks so far): learners differ: fingerprints %#x and %#x", n, blocks, fa, fb)
				}
			}
			ia, _ := ts[0].Info(k)
			ib, _ := ts[1].Info(k)
			if !reflect.DeepEqual(ia, ib) {
				t.Errorf("learners differ:\n call by call %+v\n in blocks    %+v", ia, ib)
			}
			if blocks == 0 || !ia.Confirmed {
				t.Fatalf("%d blocks, confirmed %v: the test saw no block", blocks, ia.Confirmed)
			}
			t.Logf("%d blocks of %d calls in all, %d warm-up calls; %v, %s, %d episodes", blocks, blockCalls, warms, ia.Arm, ia.State, ia.Episodes)
		})
	}
}

// TestPeriodStrideAfterConfirmation: the key that settles after its
// scheduled confirmation samples about one call per SamplePeriod from its
// very next call, at the rate of its settled calls before (Config's
// period), not after drift windows at a stride a thousand times shorter.
// Mutation check: without freeze's period stride the stride right after
// the confirmation is FrozenStride and the test fails.
func TestPeriodStrideAfterConfirmation(t *testing.T) {
	k := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 8, Layout{Nodes: 1, PPN: 16})
	tu := newTuners(t, 1, Config{Budget: -1}, costmodel.DefaultModel())[0]
	cost := bowl(1e-6, 1, 0, 3)
	now := 0.0
	for n := 0; n < 40000; n++ {
		ks := tu.State(k)
		a, timed := ks.Next()
		entry, exit := now, now+cost(n, a)
		now = exit
		if !timed {
			entry, exit = 0, 0
		}
		if ks.Record(a, entry, exit) {
			if err := commitLocal(tu); err != nil {
				t.Fatal(err)
			}
			in, _ := tu.Info(k)
			if in.Confirmed && in.State == Frozen && in.Episodes == 2 {
				// The commit that ended the confirmation.
				rate := 1 / cost(n, in.Arm) // the key's calls follow each other
				if want := rate * tu.Config().SamplePeriod; float64(in.Stride) < want/2.5 {
					t.Fatalf("call %d: settled after the confirmation at stride %d, want about %.0f (one call per %g s)", n, in.Stride, want, tu.Config().SamplePeriod)
				}
				t.Logf("call %d: settled after the confirmation on %v, stride %d", n, in.Arm, in.Stride)
				return
			}
		}
	}
	t.Fatal("no confirmation in 40000 calls")
}

// TestBlocksLeaveOutGaps: a single-rank learner driven through KeyState
// as libdpml.so's engine drives it. Tree r=4 runs 1.0 us per call, but
// before each of its calls the rank spends 0.5 us outside the engine (a
// C caller's trip into Go until the key settles and the C layer runs the
// tree; a program's barrier or computation is the same to the learner);
// every other arm runs 1.2 us or more with nothing between its calls. A
// confirmation block is timed call by call, and the time between its
// calls counts for no plan: r=4 keeps winning (1.0 against 1.2). Timed
// from its first entry to its last exit, its blocks read 1.44 and the
// key leaves it.
//
// Mutation check: with Tuner.lag timing from the call's last entry
// rather than from the last entrant's exit of the call before (so that
// the time between the calls counts), the key leaves r=4 at its
// confirmation and the test fails.
func TestBlocksLeaveOutGaps(t *testing.T) {
	k := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<10, Layout{Nodes: 1, PPN: 16})
	isR4 := func(a Arm) bool { return a.Intra == plan.IntraTree && a.Radix == 4 }
	{
		tu := newTuners(t, 1, Config{Budget: -1}, costmodel.DefaultModel())[0]
		now := 0.0
		for n := 0; n < 12000; n++ {
			ks := tu.State(k)
			a, timed := ks.Next()
			c, trip := 1.2e-6, 0.0
			if isR4(a) {
				c, trip = 1e-6, 0.5e-6
			} else if a.Intra != plan.IntraTree {
				c = 3e-6
			}
			now += trip // the trip comes before the engine's entry
			entry, exit := now, now+c
			now = exit
			if !timed {
				entry, exit = 0, 0
			}
			if ks.Record(a, entry, exit) {
				if err := commitLocal(tu); err != nil {
					t.Fatal(err)
				}
			}
		}
		in, _ := tu.Info(k)
		t.Logf("%v, %s, %d episodes, confirmed %v; measured %+v", in.Arm, in.State, in.Episodes, in.Confirmed, in.Measured)
		if !in.Confirmed {
			t.Fatal("no confirmation in 12000 calls")
		}
		if !isR4(in.Arm) {
			t.Errorf("the key runs %v after its confirmation, want the radix-4 tree", in.Arm)
		}
	}
}

// TestArmSetsShared: tuners of the same configuration share one arm set
// per set key (built once per process), and a configuration that changes
// the arms gets its own. Mutation: sets keyed by the set key alone ->
// "cross-memory attach on: the same set as off".
func TestArmSetsShared(t *testing.T) {
	k := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<20, Layout{Nodes: 1, PPN: 32})
	cfg := DefaultConfig()
	cfg.SegmentBytes = 1 << 20
	a := newTuners(t, 2, cfg, costmodel.DefaultModel())
	cfg.CMA = true
	b := newTuners(t, 1, cfg, costmodel.DefaultModel())[0]
	if a[0].setFor(k) != a[1].setFor(k) {
		t.Error("two tuners of one configuration built two sets")
	}
	sb := b.setFor(k)
	if sb == a[0].setFor(k) {
		t.Fatal("cross-memory attach on: the same set as off")
	}
	if len(sb.arms) <= len(a[0].setFor(k).arms) {
		t.Errorf("cross-memory attach on: %d arms, off %d; want its twins", len(sb.arms), len(a[0].setFor(k).arms))
	}
}

// TestTrialVerdictBeforeCandidate drives a budgeted tuner as the engine
// does: a commit step holds the tuner for lag calls before it commits.
// Every arm but the model's pick costs three times the pick, so each
// trial's candidate is rejected on its first sample (ProbeReject); the
// candidate must then run at most its warm-up and that sample, whatever
// the lag: the key runs the incumbent until the verdict. Mutation: the
// candidate's first sample not ending the batch (or the key running the
// candidate under the hold) -> runs of 6 and more candidate calls.
func TestTrialVerdictBeforeCandidate(t *testing.T) {
	for _, lag := range []int{4, 8, 16, 32} {
		t.Run(fmt.Sprintf("lag=%d", lag), func(t *testing.T) {
			tu := newTuners(t, 1, Config{}, costmodel.DefaultModel())[0]
			k := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<20, Layout{Nodes: 1, PPN: 32})
			pick := tu.Choose(k)
			cost := func(a Arm) float64 {
				if a == pick {
					return 1e-3
				}
				return 3e-3
			}
			var at float64
			held, run, longest, trials := -1, 0, 0, 0
			for i := 0; i < 20000; i++ {
				a := tu.Choose(k)
				if a != pick {
					if run == 0 {
						trials++
					}
					run++
					longest = max(longest, run)
				} else {
					run = 0
				}
				d := cost(a)
				if tu.RecordSpan(k, a, at, at+d) && held < 0 {
					tu.Hold()
					held = 0
				}
				at += d + 1e-6
				if held >= 0 {
					if held == lag {
						if err := commitLocal(tu); err != nil {
							t.Fatal(err)
						}
						held = -1
					} else {
						held++
					}
				}
			}
			if trials == 0 {
				in, _ := tu.Info(k)
				t.Fatalf("no trial in 20,000 calls: %+v", in)
			}
			if longest > 2 {
				t.Errorf("a trial's candidate ran %d calls in a row (%d trials), want at most its warm-up and one sample", longest, trials)
			}
		})
	}
}
