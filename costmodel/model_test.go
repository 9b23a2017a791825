package costmodel

import (
	"math"
	"reflect"
	"testing"

	"github.com/dpmlgo/dpml/plan"
)

func near(a, b, rel float64) bool {
	return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))
}

// simple is a model with round numbers and no concurrency benefit.
func simple() Model {
	m := Model{A: 10, B: 1, Ap: 1, Bp: 0.1, R0: 2, S: 3}
	m.C[ElemAny] = 0.5
	return m
}

func TestBreakdownByHand(t *testing.T) {
	m := simple()
	cases := []struct {
		name string
		p    plan.Shape
		n    int
		lay  Layout
		want float64
	}{
		// one node, l=1, 1024 B, ppn 4: copy = 1 + 102.4; comp = 2 + 3*1024*0.5;
		// bcast = copy; sync 3.
		{"node-l1", plan.Shape{Variant: plan.DPML, Leaders: 1}, 1024, Layout{1, 4}, 2*(1+102.4) + 2 + 1536 + 3},
		// l=4: 4 partitions of 256 B: copy = 4 + 102.4; comp = 2 + 3*256*0.5.
		{"node-l4", plan.Shape{Variant: plan.DPML, Leaders: 4}, 1024, Layout{1, 4}, 2*(4+102.4) + 2 + 384 + 3},
		// l larger than ppn is clamped to ppn.
		{"node-l8-clamped", plan.Shape{Variant: plan.DPML, Leaders: 8}, 1024, Layout{1, 4}, 2*(4+102.4) + 2 + 384 + 3},
		// 128 B with l=4: partitions are cache lines, so 2 leaders are active.
		{"small-active", plan.Shape{Variant: plan.DPML, Leaders: 4}, 128, Layout{1, 4}, 2*(2+12.8) + 2 + 3*64*0.5 + 3},
		// 4 nodes, l=1: comm = lg 4 * (a + n b) = 2 * (10 + 1024).
		{"multi-l1", plan.Shape{Variant: plan.DPML, Leaders: 1}, 1024, Layout{4, 4}, 2*(1+102.4) + 2 + 1536 + 3 + 2*(10+1024)},
		// l=2, no concurrency benefit: comm = 2 * 2*(10 + 512) / 1.
		{"multi-l2", plan.Shape{Variant: plan.DPML, Leaders: 2}, 1024, Layout{4, 4}, 2*(2+102.4) + 2 + 3*512*0.5 + 3 + 2*2*(10+512)},
		// Pipelined k=2, one segment: comm = 2 * ((2-1)*10 + 2*(10+256)) (l=1, 2 chunks of 512).
		{"pipe-k2", plan.Shape{Variant: plan.Pipelined, Leaders: 1, Pipeline: 2, Overlap: true}, 1024, Layout{4, 4}, 2*(1+102.4) + 2 + 1536 + 3 + 2*(10+2*(10+512))},
		// DPML ignores k.
		{"dpml-ignores-k", plan.Shape{Variant: plan.DPML, Leaders: 1, Pipeline: 8}, 1024, Layout{4, 4}, 2*(1+102.4) + 2 + 1536 + 3 + 2*(10+1024)},
		// Two segments of 512, DPML: stages add.
		{"dpml-2seg", plan.Shape{Variant: plan.DPML, Leaders: 1, SegmentBytes: 512}, 1024, Layout{4, 4}, 2 * (2*(1+51.2) + 2 + 768 + 3 + 2*(10+512))},
		// Two segments, Pipelined k=1: A = 1+51.2+2+768+3 = 825.2, B = 1044, C = 52.2:
		// A + max(A, B) + C + B + C.
		{"pipe-2seg", plan.Shape{Variant: plan.Pipelined, Leaders: 1, Pipeline: 1, SegmentBytes: 512, Overlap: true}, 1024, Layout{4, 4}, 825.2 + 1044 + 52.2 + 1044 + 52.2},
		// The same without Overlap: the stages add, as for DPML.
		{"pipe-2seg-no-overlap", plan.Shape{Variant: plan.Pipelined, Leaders: 1, Pipeline: 1, SegmentBytes: 512}, 1024, Layout{4, 4}, 2 * (2*(1+51.2) + 2 + 768 + 3 + 2*(10+512))},
		// Cross-memory attach scales the copies (CMACopy 0: unchanged).
		{"cma-unscaled", plan.Shape{Variant: plan.DPML, Leaders: 1, Intra: plan.IntraCMA}, 1024, Layout{1, 4}, 2*(1+102.4) + 2 + 1536 + 3},
		{"empty", plan.Shape{Variant: plan.DPML, Leaders: 1}, 0, Layout{4, 4}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := m.Predict(c.p, c.n, c.lay); !near(got, c.want, 1e-12) {
				t.Errorf("Predict(%v, %d, %v) = %g, want %g", c.p, c.n, c.lay, got, c.want)
			}
		})
	}
	// CMACopy 2 doubles copy-in and copy-out of CMA plans only.
	m.CMACopy = 2
	shm := plan.Shape{Variant: plan.DPML, Leaders: 1, Intra: plan.IntraShm}
	cma := plan.Shape{Variant: plan.DPML, Leaders: 1, Intra: plan.IntraCMA}
	if got, want := m.Predict(shm, 1024, Layout{1, 4}), 2*(1+102.4)+2+1536+3; !near(got, want, 1e-12) {
		t.Errorf("shm with CMACopy 2: %g, want %g", got, want)
	}
	if got, want := m.Predict(cma, 1024, Layout{1, 4}), 4*(1+102.4)+2+1536+3; !near(got, want, 1e-12) {
		t.Errorf("cma with CMACopy 2: %g, want %g", got, want)
	}
	// The tree is priced along its longest path, and CMACopy does not
	// touch it: on 1x10 with radix 8 the path has levels of 8 and 1
	// children (plan.TreeFanIn). By hand, with hop 10, kid 1, release 5:
	// inline (8 B, c = 0.5 per byte): levels 2*10 + 9*1, folds 9*8*0.5,
	// release 5; 1 KiB (b' = 0.1): folds 9*1024*(0.5+0.1), release
	// 5 + 1024*0.1; 2 nodes add the inter-node allreduce of the root.
	m.TreeHop, m.TreeKid, m.TreeRelease = 10, 1, 5
	tree := plan.Shape{Variant: plan.DPML, Leaders: 1, Intra: plan.IntraTree, Radix: 8}
	for _, c := range []struct {
		n    int
		lay  Layout
		want float64
	}{
		{8, Layout{1, 10}, 20 + 9 + 9*8*0.5 + 5},
		{1024, Layout{1, 10}, 20 + 9 + 9*1024*(0.5+0.1) + 5 + 1024*0.1},
		{8, Layout{2, 10}, 20 + 9 + 9*8*0.5 + 5 + m.InterTime(1, 8, 2)},
		{8, Layout{1, 1}, 5},
	} {
		if got := m.Predict(tree, c.n, c.lay); !near(got, c.want, 1e-12) {
			t.Errorf("tree r=8, %d B on %v: %g, want %g", c.n, c.lay, got, c.want)
		}
	}
	// l trees over disjoint partitions: 1 KiB on 1x10 with l = 4 has four
	// partitions of 256 B; the first tree's path (levels of 8 and 1
	// children, each fold of 256 B), plus three root levels (hop, 8 kids,
	// 8 folds of 256 B), release and copy-out of the whole 1 KiB; on 2
	// nodes the 4 roots' concurrent inter-node steps of 256 B. 32 B with
	// l = 4 is one line: one active tree, the single tree's price.
	trees := tree
	trees.Leaders = 4
	fold := 256 * (0.5 + 0.1)
	one4 := 20 + 9 + 9*fold + 3*(10+8+8*fold) + 5 + 1024*0.1
	for _, c := range []struct {
		n    int
		lay  Layout
		want float64
	}{
		{1024, Layout{1, 10}, one4},
		{1024, Layout{2, 10}, one4 + m.InterTime(4, 256, 2)},
		{32, Layout{1, 10}, m.Predict(tree, 32, Layout{1, 10})},
	} {
		if got := m.Predict(trees, c.n, c.lay); !near(got, c.want, 1e-9) {
			t.Errorf("4 trees r=8, %d B on %v: %g, want %g", c.n, c.lay, got, c.want)
		}
	}
	// Radix 0 is DefaultTreeRadix's price.
	if a, b := m.Predict(plan.Shape{Variant: plan.DPML, Leaders: 1, Intra: plan.IntraTree}, 64, Layout{1, 32}), m.Predict(tree, 64, Layout{1, 32}); a != b {
		t.Errorf("tree without a radix: %g, want radix 8's %g", a, b)
	}
}

// The model's phase prices are the equations of doc.go.
func TestPhaseTimes(t *testing.T) {
	m := simple()
	m.RedPar = 4
	if got, want := m.CopyTime(4, 1000), 4*1+1000*0.1; !near(got, want, 1e-12) {
		t.Errorf("CopyTime = %g, want %g", got, want)
	}
	if got, want := m.CopyTime(0, 1000), 1+1000*0.1; !near(got, want, 1e-12) {
		t.Errorf("CopyTime(0 copies) = %g, want %g", got, want)
	}
	if got, want := m.ReduceTime(2, 8, 100, 5, ElemFloat32), 2*2+7*100*0.5*(1+4.0/4); !near(got, want, 1e-12) {
		t.Errorf("ReduceTime = %g, want %g", got, want)
	}
	if got, want := m.InterTime(2, 100, 8), 3*2*(10+100*1.0); !near(got, want, 1e-12) {
		t.Errorf("InterTime = %g, want %g", got, want)
	}
	for p, want := range map[int]float64{0: 0, 1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 32: 5} {
		if got := Rounds(p); got != want {
			t.Errorf("Rounds(%d) = %g, want %g", p, got, want)
		}
	}
}

func TestNativeFallbackAndFit(t *testing.T) {
	m := simple()
	lay := Layout{4, 4}
	d := m.Predict(plan.Shape{Variant: plan.DPML, Leaders: 1}, 4096, lay)
	if got := m.Predict(plan.Shape{Variant: plan.Native}, 4096, lay); !near(got, 1.05*d, 1e-12) {
		t.Errorf("native fallback = %g, want 1.05 x %g", got, d)
	}
	m.NativeA, m.NativeB = 1, 0.01
	if got, want := m.Predict(plan.Shape{Variant: plan.Native}, 100, lay), 4*(1+1.0); !near(got, want, 1e-12) {
		t.Errorf("native = %g, want %g", got, want)
	}
}

func TestPipelinedOverlaps(t *testing.T) {
	m := DefaultModel()
	lay := Layout{4, 8}
	for _, n := range []int{1 << 20, 4 << 20, 16 << 20} {
		d := m.Breakdown(plan.Shape{Variant: plan.DPML, Leaders: 8, SegmentBytes: 256 << 10}, n, lay, ElemFloat32)
		p := m.Breakdown(plan.Shape{Variant: plan.Pipelined, Leaders: 8, Pipeline: 1, SegmentBytes: 256 << 10, Overlap: true}, n, lay, ElemFloat32)
		if !(p.Total < d.Total) {
			t.Errorf("n=%d: pipelined %g not below DPML %g with several segments", n, p.Total, d.Total)
		}
		if sum := p.Copy + p.Comp + p.Comm + p.Bcast + p.Sync; p.Total > sum+1e-15 {
			t.Errorf("n=%d: critical path %g exceeds the work %g", n, p.Total, sum)
		}
	}
	// One node: Pipelined prices like DPML.
	a := m.Predict(plan.Shape{Variant: plan.DPML, Leaders: 4, SegmentBytes: 64 << 10}, 1<<20, Layout{1, 8})
	b := m.Predict(plan.Shape{Variant: plan.Pipelined, Leaders: 4, Pipeline: 4, SegmentBytes: 64 << 10, Overlap: true}, 1<<20, Layout{1, 8})
	if a != b {
		t.Errorf("single node: dpml %g != pipelined %g", a, b)
	}
}

func TestDefaultModelShape(t *testing.T) {
	// The paper's atlas: one leader wins small messages, many leaders win
	// large ones (on several nodes, with the default zone curve).
	m := DefaultModel()
	lay := Layout{4, 16}
	best := func(n int) int {
		bl, bt := 0, math.Inf(1)
		for l := 1; l <= 16; l *= 2 {
			if v := m.Predict(plan.Shape{Variant: plan.DPML, Leaders: l}, n, lay); v < bt {
				bl, bt = l, v
			}
		}
		return bl
	}
	if l := best(64); l != 1 {
		t.Errorf("best l at 64 B = %d, want 1", l)
	}
	if l := best(4 << 20); l < 8 {
		t.Errorf("best l at 4 MiB = %d, want >= 8", l)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrency(t *testing.T) {
	c := ZoneCurve(4<<10, 64<<10, 16)
	cases := []struct {
		pairs, bytes, want float64
	}{
		{1, 100, 1},       // one pair
		{0.5, 8 << 10, 1}, // fewer than one pair
		{8, 64, 8},        // zone A: linear
		{32, 64, 16},      // zone A, saturated at 16
		{128, 64, 16},     // beyond the last column
		{3, 64, 3},        // between columns 2 and 4: 3.17 in log2 pairs, clamped to p
		{1.5, 64, 1.5},    // between the implicit column 1 and 2, clamped
		{12, 1 << 10, 12}, // between 8 and 16: 12.68, clamped
		{12, 8 << 10, 0.75*(8+8*0.5849625) + 0.25}, // zone B quarter: clamping comes after interpolation
		{24, 1 << 10, 16},                          // between 16 and 32 in a saturated row
		{8, 16 << 10, 1 + 7*0.5},                   // zone B: halfway in log2 size (12 -> 16)
		{4, 8 << 10, 1 + 3*0.75},                   // a quarter into zone B
		{32, 32 << 10, 1 + 15*0.25},                // three quarters, capped column
		{8, 64 << 10, 1},                           // edge of zone C
		{8, 1 << 20, 1},                            // zone C
		{2, 1 << 40, 1},                            // far zone C
		{8, 0, 8},                                  // size clamped to the first row
	}
	for _, x := range cases {
		if got := c.Multiplier(x.pairs, x.bytes); !near(got, x.want, 1e-6) {
			t.Errorf("M(%g, %g) = %g, want %g", x.pairs, x.bytes, got, x.want)
		}
	}
	var empty Concurrency
	if got := empty.Multiplier(8, 64); got != 1 {
		t.Errorf("empty curve M = %g, want 1", got)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := Concurrency{Log2Bytes: []float64{1, 2}, Pairs: []float64{2}, Mult: [][]float64{{1}}}
	if bad.Validate() == nil {
		t.Error("malformed table validated")
	}
}

func TestClasses(t *testing.T) {
	for _, c := range []struct {
		k    reflect.Kind
		want ElemClass
	}{{reflect.Int8, ElemInt}, {reflect.Uint64, ElemInt}, {reflect.Float32, ElemFloat32}, {reflect.Float64, ElemFloat64}, {reflect.Complex128, ElemComplex}, {reflect.String, ElemAny}} {
		if got := ElemClassOf(c.k); got != c.want {
			t.Errorf("ElemClassOf(%v) = %v, want %v", c.k, got, c.want)
		}
	}
	for name, want := range map[string]OpClass{"sum": OpArith, "PROD": OpArith, "MPI_MAX": OpMinMax, "min": OpMinMax, "bxor": OpLogic, "land": OpLogic, "replace": OpAny} {
		if got := OpClassOf(name); got != want {
			t.Errorf("OpClassOf(%q) = %v, want %v", name, got, want)
		}
	}
	for e := ElemAny; e < NumElemClasses; e++ {
		if p, err := ParseElemClass(e.String()); err != nil || p != e {
			t.Errorf("ElemClass %v does not round-trip", e)
		}
	}
	for o := OpAny; o < NumOpClasses; o++ {
		if p, err := ParseOpClass(o.String()); err != nil || p != o {
			t.Errorf("OpClass %v does not round-trip", o)
		}
	}
	k := MakeKey(ElemFloat32, OpArith, 3000, Layout{4, 8})
	if lo, hi := k.Range(); k.SizeLog2 != 11 || lo != 2048 || hi != 4095 || k.Bytes() != 2896 {
		t.Errorf("MakeKey(3000 B) = %v, range [%d, %d], bytes %d", k, lo, hi, k.Bytes())
	}
	if MakeKey(ElemAny, OpAny, 0, Layout{}).SizeLog2 != 0 {
		t.Error("0 bytes: bucket not 0")
	}
}
