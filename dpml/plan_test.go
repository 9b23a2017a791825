package dpml

import (
	"strings"
	"testing"
)

func TestPartitionsTileTheSegment(t *testing.T) {
	for _, tc := range []struct{ n, l, align int }{
		{0, 4, 8}, {1, 4, 8}, {3, 4, 1}, {5, 4, 1}, {97, 4, 8}, {1 << 20, 32, 16}, {1000, 3, 4}, {64, 32, 8},
	} {
		p := Plan{Leaders: tc.l, Align: tc.align}
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
	p := Plan{Variant: Pipelined, Phases: phasesMultiNode, Count: 1 << 20, ElemSize: 8, Nodes: 2, PPN: 4,
		Leaders: 4, Pipeline: 2, SegElems: 1 << 17, Segments: 8, Align: 8}
	s := p.String()
	for _, want := range []string{"pipelined", "leaders l=4", "pipeline k=2", "8 segment(s)", "seg 0 x2", "copy-out", "..."} {
		if !strings.Contains(s, want) {
			t.Errorf("plan drawing lacks %q:\n%s", want, s)
		}
	}
	n := Plan{Variant: Native, Phases: phasesNative, Count: 5, ElemSize: 4, Nodes: 4, PPN: 1}
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
