package plan

import (
	"slices"
	"strings"
	"testing"
)

// naivePieces cuts n into pieces of per = ceil(ceil(n/parts)/align)*align
// the slow way: the rule the engine's partitions and the model's prices
// share.
func naivePieces(n, parts, align int) [][2]int {
	per := (n + parts - 1) / parts
	per = (per + align - 1) / align * align
	var out [][2]int
	for j := 0; j < parts; j++ {
		lo := j * per
		hi := lo + per
		if lo > n {
			lo = n
		}
		if hi > n {
			hi = n
		}
		out = append(out, [2]int{lo, hi})
	}
	return out
}

func TestPiecesTileAndMatchTheRule(t *testing.T) {
	for _, n := range []int{0, 1, 3, 5, 63, 64, 65, 97, 1000, 4096, 1 << 20, 1<<20 + 7} {
		for _, parts := range []int{1, 2, 3, 4, 8, 32} {
			for _, align := range []int{1, 4, 8, 16, 64} {
				active, per := Split(n, parts, align)
				want := naivePieces(n, parts, align)
				nonEmpty, next := 0, 0
				for j, w := range want {
					lo, hi := Partition(n, parts, align, j)
					if lo != w[0] || hi != w[1] {
						t.Fatalf("Partition(%d, %d, %d, %d) = [%d,%d), want [%d,%d)", n, parts, align, j, lo, hi, w[0], w[1])
					}
					if lo == hi {
						continue
					}
					if lo != next || lo%align != 0 {
						t.Fatalf("n=%d parts=%d align=%d: piece %d starts at %d (next %d)", n, parts, align, j, lo, next)
					}
					if j != nonEmpty {
						t.Fatalf("n=%d parts=%d align=%d: non-empty pieces are not a prefix", n, parts, align)
					}
					if hi-lo > per {
						t.Fatalf("n=%d parts=%d align=%d: piece %d has %d > per %d", n, parts, align, j, hi-lo, per)
					}
					nonEmpty++
					next = hi
				}
				if next != n || active != nonEmpty {
					t.Fatalf("Split(%d, %d, %d) = %d active (per %d); pieces cover [0,%d), %d non-empty", n, parts, align, active, per, next, nonEmpty)
				}
				if n > 0 && (per > n || per <= 0) {
					t.Fatalf("Split(%d, %d, %d): per = %d", n, parts, align, per)
				}
			}
		}
	}
}

func TestSubchunksTileThePartition(t *testing.T) {
	for _, c := range []struct{ lo, hi, align int }{{0, 0, 8}, {8, 9, 8}, {64, 1000, 8}, {128, 131, 1}, {0, 1 << 16, 16}} {
		for k := 1; k <= 5; k++ {
			at := c.lo
			for q := 0; q < k; q++ {
				a, z := Subchunk(c.lo, c.hi, k, q, c.align)
				if a == z {
					continue
				}
				if a != at || (a-c.lo)%c.align != 0 {
					t.Fatalf("%+v k=%d: sub-chunk %d = [%d,%d), want start %d", c, k, q, a, z, at)
				}
				at = z
			}
			if at != c.hi {
				t.Fatalf("%+v k=%d: sub-chunks end at %d", c, k, at)
			}
		}
	}
}

func TestNames(t *testing.T) {
	for v := Auto; v <= Native; v++ {
		if got, err := ParseVariant(strings.ToUpper(v.String())); err != nil || got != v {
			t.Errorf("ParseVariant(%q) = %v, %v", v, got, err)
		}
	}
	for i := IntraAuto; i < NumIntra; i++ {
		if got, err := ParseIntra(i.String()); err != nil || got != i {
			t.Errorf("ParseIntra(%q) = %v, %v", i, got, err)
		}
	}
	if IntraTree.String() != "tree" || IntraShm.String() != "shm" || IntraCMA.String() != "cma" {
		t.Errorf("transport names: %v %v %v", IntraShm, IntraCMA, IntraTree)
	}
	if _, err := ParseVariant("ring"); err == nil {
		t.Error("ParseVariant(ring) accepted")
	}
	if _, err := ParseIntra("rdma"); err == nil {
		t.Error("ParseIntra(rdma) accepted")
	}
	for o := OffloadAuto; o < NumOffload; o++ {
		if got, err := ParseOffload(strings.ToUpper(o.String())); err != nil || got != o {
			t.Errorf("ParseOffload(%q) = %v, %v", o, got, err)
		}
	}
	if _, err := ParseOffload("on"); err == nil {
		t.Error("ParseOffload(on) accepted: one spelling per mode")
	}
	for i := InterAuto; i < NumInter; i++ {
		if got, err := ParseInter(strings.ToUpper(i.String())); err != nil || got != i {
			t.Errorf("ParseInter(%q) = %v, %v", i, got, err)
		}
	}
	if _, err := ParseInter("tree"); err == nil {
		t.Error("ParseInter(tree) accepted")
	}
	for _, c := range []struct {
		s    Shape
		want Inter
	}{
		{Shape{}, InterMPI},
		{Shape{Inter: InterRing}, InterRing},
		{Shape{Inter: InterMPI}, InterMPI},
		{Shape{Inter: InterRing, Offload: OffloadSharp}, InterSharp},
		{Shape{Offload: OffloadHost}, InterMPI},
	} {
		if got := c.s.InterAlgorithm(); got != c.want {
			t.Errorf("%+v.InterAlgorithm() = %v, want %v", c.s, got, c.want)
		}
	}
	if !Pipelined.Overlaps() || DPML.Overlaps() || Native.Overlaps() || Auto.Overlaps() {
		t.Error("only Pipelined overlaps")
	}
	for s, want := range map[Shape]string{
		{Variant: Native, Leaders: 1, Pipeline: 1}:                                        "native",
		{Variant: DPML, Leaders: 4, Pipeline: 1, Intra: IntraShm}:                         "dpml l=4 k=1",
		{Variant: Pipelined, Leaders: 8, Pipeline: 2, Intra: IntraCMA, Overlap: true}:     "pipelined l=8 k=2 cma",
		{Variant: DPML, Leaders: 2, Pipeline: 1, SegmentBytes: 4096}:                      "dpml l=2 k=1 seg=4096",
		{Variant: DPML, Leaders: 1, Pipeline: 1, Intra: IntraTree}:                        "dpml l=1 k=1 tree",
		{Variant: DPML, Leaders: 1, Pipeline: 1, Intra: IntraTree, Offload: OffloadSharp}: "dpml l=1 k=1 tree offload=sharp",
		{Variant: Pipelined, Leaders: 4, Pipeline: 2, Overlap: true, Inter: InterRing}:    "pipelined l=4 k=2 inter=ring",
	} {
		if got := s.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", s, got, want)
		}
	}
}

func TestDefaultSegmentBytes(t *testing.T) {
	for _, c := range []struct{ llc, ppn, want int }{
		{300 << 20, 32, 2383104}, // 150 MiB / 66 slots, in cache lines
		{300 << 20, 8, 8738112},
		{32 << 20, 32, 254144},
		{1 << 20, 32, 64 << 10}, // the floor
	} {
		got := DefaultSegmentBytes(c.llc, c.ppn)
		if got != c.want || got%CacheLine != 0 {
			t.Errorf("DefaultSegmentBytes(%d, %d) = %d, want %d", c.llc, c.ppn, got, c.want)
		}
	}
}

// TestTreeFanIn checks the critical path of the contiguous tree against
// hand-worked shapes (leaders' TestTreeDepthMatchesPlan checks it against
// the trees leaders.BuildTree builds).
func TestTreeFanIn(t *testing.T) {
	for _, tc := range []struct {
		n, r int
		want []int
	}{
		{1, 8, nil},
		{2, 8, []int{1}},
		{9, 8, []int{8}},
		{10, 8, []int{8, 1}},          // runs of 2 and 1: the longest is 2
		{32, 8, []int{8, 3}},          // 31 -> runs of 4: root of 4 has 3 kids
		{32, 2, []int{2, 2, 2, 2, 1}}, // 31 -> 16 -> 8 -> 4 -> 2 -> 1
		{32, 32, []int{31}},
		{32, 1, nil}, // a chain: filled below
	} {
		want := tc.want
		if tc.r == 1 {
			want = make([]int, tc.n-1)
			for i := range want {
				want[i] = 1
			}
		}
		got := TreeFanIn(tc.n, tc.r)
		if !slices.Equal(got, want) {
			t.Errorf("TreeFanIn(%d, %d) = %v, want %v", tc.n, tc.r, got, want)
		}
		if d := TreeDepth(tc.n, tc.r); d != len(want) {
			t.Errorf("TreeDepth(%d, %d) = %d, want %d", tc.n, tc.r, d, len(want))
		}
	}
}
