package dpml

import (
	"reflect"
	"strings"
	"testing"

	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/plan"
)

func TestPartitionsTileTheSegment(t *testing.T) {
	for _, tc := range []struct{ n, l, align int }{
		{0, 4, 8}, {1, 4, 8}, {3, 4, 1}, {5, 4, 1}, {97, 4, 8}, {1 << 20, 32, 16}, {1000, 3, 4}, {64, 32, 8},
	} {
		p := Plan{Shape: plan.Shape{Leaders: tc.l}, Align: tc.align}
		next := 0
		active := 0
		for j := 0; j < tc.l; j++ {
			lo, hi := p.partition(tc.n, j)
			if lo != next && lo != hi {
				t.Fatalf("%+v: leader %d starts at %d, want %d", tc, j, lo, next)
			}
			if lo < hi {
				active++
				if lo%tc.align != 0 {
					t.Fatalf("%+v: leader %d starts at %d, not a multiple of %d", tc, j, lo, tc.align)
				}
				next = hi
			}
		}
		if next != tc.n {
			t.Fatalf("%+v: partitions cover [0,%d), want [0,%d)", tc, next, tc.n)
		}
		if got := p.activeLeaders(tc.n); got != active {
			t.Fatalf("%+v: activeLeaders = %d, counted %d", tc, got, active)
		}
		// Active leaders are a prefix: copy-out waits for leaders 0..active-1.
		for j := active; j < tc.l; j++ {
			if lo, hi := p.partition(tc.n, j); lo != hi {
				t.Fatalf("%+v: leader %d past the active prefix has [%d,%d)", tc, j, lo, hi)
			}
		}
		for k := 1; k <= 4; k++ {
			for j := 0; j < tc.l; j++ {
				lo, hi := p.partition(tc.n, j)
				at := lo
				for q := 0; q < k; q++ {
					a, z := subchunk(lo, hi, k, q, tc.align)
					if a != z && a != at {
						t.Fatalf("%+v k=%d: sub-chunk %d starts at %d, want %d", tc, k, q, a, at)
					}
					if a != z {
						at = z
					}
				}
				if at != hi {
					t.Fatalf("%+v k=%d: sub-chunks of leader %d end at %d, want %d", tc, k, j, at, hi)
				}
			}
		}
	}
}

func TestPlanString(t *testing.T) {
	p := Plan{Shape: plan.Shape{Variant: Pipelined, Leaders: 4, Pipeline: 2, Intra: IntraShm, Overlap: true},
		Phases: phasesMultiNode, Count: 1 << 20, ElemSize: 8, Nodes: 2, PPN: 4, SegElems: 1 << 17, Segments: 8, Align: 8}
	s := p.String()
	// Overlap: segment 7's inter-node step and copy-out come one step
	// after its reduce.
	for _, want := range []string{"pipelined", "leaders l=4", "pipeline k=2", "8 segment(s)", "seg 0 x2", "copy-out", "...",
		"     8 |             |             | seg 7 x2    | seg 7"} {
		if !strings.Contains(s, want) {
			t.Errorf("plan drawing lacks %q:\n%s", want, s)
		}
	}
	p.Overlap = false
	if s := p.String(); !strings.Contains(s, "     7 | seg 7       | seg 7       | seg 7 x2    | seg 7") || strings.Contains(s, "     8 |") {
		t.Errorf("plan drawing without overlap:\n%s", s)
	}
	n := Plan{Shape: plan.Shape{Variant: Native}, Phases: phasesNative, Count: 5, ElemSize: 4, Nodes: 4, PPN: 1}
	if !strings.Contains(n.String(), "native") {
		t.Errorf("native plan drawing: %s", n.String())
	}
}

func TestParseVariant(t *testing.T) {
	for _, v := range []Variant{Auto, DPML, Pipelined, Native} {
		got, err := ParseVariant(v.String())
		if err != nil || got != v {
			t.Errorf("ParseVariant(%q) = %v, %v", v.String(), got, err)
		}
	}
	if _, err := ParseVariant("ring"); err == nil {
		t.Error("ParseVariant(ring) should fail")
	}
}

// TestPlanResolution: what plan a communicator resolves an Override to,
// without MPI (a Comm with only the layout fields set, no tree: every
// case resolves to a partitioned plan).
func TestPlanResolution(t *testing.T) {
	two := &Comm{topology: topology{nodes: 2, size: 8, minPPN: 4, ppn: 4, llcBytes: 32 << 20, cma: true}, nodeView: nodeView{segBudget: 512 << 10}}
	one := &Comm{topology: topology{nodes: 1, size: 4, minPPN: 4, ppn: 4, llcBytes: 32 << 20, cma: true}, nodeView: nodeView{segBudget: 512 << 10}}
	noCMA := &Comm{topology: topology{nodes: 2, size: 8, minPPN: 4, ppn: 4, llcBytes: 32 << 20}, nodeView: nodeView{segBudget: 512 << 10}}
	for _, c := range []struct {
		name    string
		c       *Comm
		o       Override
		intra   Intra
		overlap bool
	}{
		{"tree-larger-than-a-slot", two, Override{Variant: DPML, Intra: IntraTree}, IntraShm, false}, // 800 KB > 512 KiB
		{"cma", two, Override{Variant: DPML, Intra: IntraCMA}, IntraCMA, false},
		{"cma-unavailable", noCMA, Override{Variant: DPML, Intra: IntraCMA}, IntraShm, false},
		{"auto-is-shm", two, Override{Variant: DPML}, IntraShm, false},
		{"pipelined-overlaps", two, Override{Variant: Pipelined, Pipeline: 2}, IntraShm, true},
		{"pipelined-one-node", one, Override{Variant: Pipelined, Pipeline: 2}, IntraShm, false},
		{"k-implies-pipelined", two, Override{Pipeline: 4}, IntraShm, true},
		{"overlap-in-override-ignored", two, Override{Variant: DPML, Overlap: true}, IntraShm, false},
		{"native", two, Override{Variant: Native, Intra: IntraCMA}, IntraAuto, false},
	} {
		p, err := c.c.plan(100000, 8, c.o)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if p.Intra != c.intra || p.Overlap != c.overlap {
			t.Errorf("%s: %v resolved to intra %v, overlap %v; want %v, %v", c.name, c.o, p.Intra, p.Overlap, c.intra, c.overlap)
		}
		if p.Variant != Native && p.SegmentBytes != p.SegElems*p.ElemSize {
			t.Errorf("%s: SegmentBytes %d for %d elements of %d bytes", c.name, p.SegmentBytes, p.SegElems, p.ElemSize)
		}
	}
}

// elemClass gives every kind the tuner's class of its Go type.
func TestElemClassByKind(t *testing.T) {
	for _, c := range []struct {
		k  mpi.Kind
		rk reflect.Kind
	}{
		{mpi.KindOf[int8](), reflect.Int8}, {mpi.KindOf[int16](), reflect.Int16}, {mpi.KindOf[int32](), reflect.Int32},
		{mpi.KindOf[int64](), reflect.Int64}, {mpi.KindOf[uint8](), reflect.Uint8}, {mpi.KindOf[uint16](), reflect.Uint16},
		{mpi.KindOf[uint32](), reflect.Uint32}, {mpi.KindOf[uint64](), reflect.Uint64}, {mpi.KindOf[float32](), reflect.Float32},
		{mpi.KindOf[float64](), reflect.Float64}, {mpi.KindOf[complex64](), reflect.Complex64}, {mpi.KindOf[complex128](), reflect.Complex128},
	} {
		if got, want := elemClass[c.k], costmodel.ElemClassOf(c.rk); got != want {
			t.Errorf("elemClass[%v] = %v, want %v", c.k, got, want)
		}
	}
	if n := len(mpi.Kinds()); n != len(elemClass) {
		t.Errorf("%d kinds, elemClass has %d entries", n, len(elemClass))
	}
}

// TestPlanMemo: the one-entry memo of planFor gives what plan gives for the
// same arguments, across calls that change the count, element size,
// override or the communicator's override (SetOverride) one at a time.
func TestPlanMemo(t *testing.T) {
	c := &Comm{topology: topology{nodes: 2, size: 8, minPPN: 4, ppn: 4, pos: 1, llcBytes: 32 << 20, cma: true}, nodeView: nodeView{segBudget: 512 << 10}}
	steps := []struct {
		count, es int
		o, fixed  Override
	}{
		{100000, 8, Override{}, Override{}},
		{100000, 8, Override{}, Override{}}, // a hit
		{100001, 8, Override{}, Override{}},
		{100001, 4, Override{}, Override{}},
		{100001, 4, Override{Leaders: 2}, Override{}},
		{100001, 4, Override{Leaders: 4}, Override{}},
		{100001, 4, Override{Leaders: 4, Intra: IntraCMA}, Override{}},
		{100001, 4, Override{}, Override{Pipeline: 2}},
		{100001, 4, Override{}, Override{Variant: Native}},
		{100001, 4, Override{}, Override{}},
		{1, 4, Override{}, Override{}},
	}
	for i, s := range steps {
		if s.fixed != c.fixed {
			c.SetOverride(s.fixed)
		}
		got, err := c.planFor(s.count, s.es, s.o)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		want, err := c.plan(s.count, s.es, s.o)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if !reflect.DeepEqual(got.p, want) {
			t.Errorf("step %d (%d x %d B, %+v, fixed %+v): memo gave %+v, plan %+v", i, s.count, s.es, s.o, s.fixed, got.p, want)
		}
		// The prepared partitions, worked out here from the plan's
		// fields alone.
		for _, seg := range []int{0, want.Segments - 1} {
			if want.Segments == 0 {
				break
			}
			lo := seg * want.SegElems
			n := min(lo+want.SegElems, want.Count) - lo
			per := min((n+want.Leaders-1)/want.Leaders, n)
			per = min((per+want.Align-1)/want.Align*want.Align, n)
			plo := min(c.pos*per, n)
			w := segPart{n: n, plo: plo, phi: min(plo+per, n), active: (n + per - 1) / per}
			if sp := got.part(seg); *sp != w {
				t.Errorf("step %d: segment %d of %+v: prepared %+v, want %+v", i, seg, want, *sp, w)
			}
		}
	}
	if _, err := c.planFor(-1, 8, Override{}); err == nil {
		t.Error("planFor(-1) gave no error")
	}
}
