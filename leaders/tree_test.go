package leaders

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/dpmlgo/dpml/plan"
)

func TestBuildTreeShapes(t *testing.T) {
	// Ranks bound one per core on one socket and NUMA node, local rank i
	// on core i: the domain tree is the contiguous radix-r tree.
	flat := func(n int) []Place {
		ps := make([]Place, n)
		for i := range ps {
			ps[i] = bound(i, i, 0, 0)
		}
		return ps
	}
	tests := []struct {
		name     string
		places   []Place
		radix    int
		root     int
		children map[int][]int // the ranks with children
		depth    int
	}{
		{"one rank", flat(1), 4, 0, map[int][]int{}, 0},
		{"two ranks", flat(2), 4, 0, map[int][]int{0: {1}}, 1},
		{"flat radix covers all", flat(5), 8, 0, map[int][]int{0: {1, 2, 3, 4}}, 1},
		{"radix 2 of 7", flat(7), 2, 0, map[int][]int{0: {1, 4}, 1: {2, 3}, 4: {5, 6}}, 2},
		{"radix 4 of 9", flat(9), 4, 0, map[int][]int{0: {1, 3, 5, 7}, 1: {2}, 3: {4}, 5: {6}, 7: {8}}, 2},
		{"radix 1 is a chain", flat(4), 1, 0, map[int][]int{0: {1}, 1: {2}, 2: {3}}, 3},
		{"two sockets", []Place{bound(0, 0, 0, 0), bound(1, 1, 0, 0), bound(2, 0, 1, 1), bound(3, 1, 1, 1)}, 4, 0,
			map[int][]int{0: {1, 2}, 2: {3}}, 2},
		{"socket order by id, not rank", []Place{bound(2, 0, 1, 1), bound(3, 1, 1, 1), bound(0, 0, 0, 0), bound(1, 1, 0, 0)}, 4, 2,
			map[int][]int{2: {3, 0}, 0: {1}}, 2},
		{"two NUMA domains in a socket", []Place{bound(0, 0, 0, 0), bound(1, 1, 0, 1), bound(2, 2, 0, 0), bound(3, 3, 0, 1)}, 4, 0,
			map[int][]int{0: {2, 1}, 1: {3}}, 2},
		{"cores out of rank order", []Place{bound(3, 3, 0, 0), bound(0, 0, 0, 0), bound(2, 2, 0, 0), bound(1, 1, 0, 0)}, 2, 1,
			map[int][]int{1: {3, 2}, 2: {0}}, 2},
		{"no topology", slices.Repeat([]Place{Unknown}, 3), 2, 0, map[int][]int{0: {1, 2}}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := BuildTree(tc.places, tc.radix)
			if err := tr.Check(); err != nil {
				t.Fatalf("%v\n%s", err, tr)
			}
			if tr.Root != tc.root {
				t.Errorf("root %d, want %d\n%s", tr.Root, tc.root, tr)
			}
			for r, cs := range tr.Children {
				want := tc.children[r]
				if !slices.Equal(cs, want) && (len(cs) > 0 || len(want) > 0) {
					t.Errorf("children of %d = %v, want %v\n%s", r, cs, want, tr)
				}
			}
			if d := tr.Depth(); d != tc.depth {
				t.Errorf("depth %d, want %d\n%s", d, tc.depth, tr)
			}
		})
	}
}

// The tree is a spanning tree rooted at the node leader, and no rank has
// more children of its own domain than the radix, for random topologies.
func TestBuildTreeProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for iter := 0; iter < 500; iter++ {
		n := 1 + rng.IntN(70)
		ps := make([]Place, n)
		for i := range ps {
			s := rng.IntN(3)
			ps[i] = bound(rng.IntN(64), rng.IntN(16), s, 2*s+rng.IntN(2))
			if rng.IntN(10) == 0 {
				ps[i] = Unknown
			}
		}
		radix := 1 + rng.IntN(9)
		tr := BuildTree(ps, radix)
		if err := tr.Check(); err != nil {
			t.Fatalf("places %v radix %d: %v\n%s", ps, radix, err, tr)
		}
		if tr.Root != NodeLeader(ps) {
			t.Fatalf("places %v: root %d, NodeLeader %d", ps, tr.Root, NodeLeader(ps))
		}
		checkDomainFanIn(t, ps, tr, radix)
	}
}

// TestTreeDepthMatchesPlan: the cost model prices a tree by
// plan.TreeFanIn; on one NUMA domain the trees built here must have that
// depth and that fan-in at the root.
func TestTreeDepthMatchesPlan(t *testing.T) {
	for n := 1; n <= 70; n++ {
		places := make([]Place, n)
		for i := range places {
			places[i] = bound(i, i, 0, 0)
		}
		for _, r := range []int{1, 2, 3, 4, 8, 16, 32, 64} {
			tr := BuildTree(places, r)
			fans := plan.TreeFanIn(n, r)
			if d := tr.Depth(); d != len(fans) {
				t.Fatalf("n=%d r=%d: depth %d, plan.TreeFanIn says %d (%v)", n, r, d, len(fans), fans)
			}
			if len(fans) > 0 && len(tr.Children[tr.Root]) != fans[0] {
				t.Fatalf("n=%d r=%d: root has %d children, plan says %d", n, r, len(tr.Children[tr.Root]), fans[0])
			}
		}
	}
}

// BuildTreeAt: rooted at any rank, a spanning tree with the radix bound,
// the same depth as BuildTree on one domain (the rotation keeps the
// shape), and BuildTree itself when rooted at the node leader.
func TestBuildTreeAt(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for iter := 0; iter < 300; iter++ {
		n := 1 + rng.IntN(40)
		ps := make([]Place, n)
		for i := range ps {
			s := rng.IntN(2)
			ps[i] = bound(rng.IntN(64), rng.IntN(16), s, 2*s+rng.IntN(2))
		}
		radix := 1 + rng.IntN(9)
		if got, want := BuildTreeAt(ps, radix, NodeLeader(ps)), BuildTree(ps, radix); !reflect.DeepEqual(got, want) {
			t.Fatalf("places %v radix %d: rooted at the node leader\n%s\nwant BuildTree\n%s", ps, radix, got, want)
		}
		for root := range n {
			tr := BuildTreeAt(ps, radix, root)
			if err := tr.Check(); err != nil || tr.Root != root {
				t.Fatalf("places %v radix %d root %d: root %d, %v\n%s", ps, radix, root, tr.Root, err, tr)
			}
			checkDomainFanIn(t, ps, tr, radix)
		}
	}
	// One domain of 32 cores, radix 4, four trees rooted at leaders 0-3:
	// the plan's depth each.
	ps := make([]Place, 32)
	for i := range ps {
		ps[i] = bound(i, i, 0, 0)
	}
	for _, root := range Order(ps)[:4] {
		tr := BuildTreeAt(ps, 4, root)
		if d := tr.Depth(); d != plan.TreeDepth(32, 4) {
			t.Fatalf("root %d: depth %d, want %d\n%s", root, d, plan.TreeDepth(32, 4), tr)
		}
	}
}

// checkDomainFanIn fails unless every rank of tr has at most radix
// children of its own socket and NUMA domain.
func checkDomainFanIn(t *testing.T, ps []Place, tr Tree, radix int) {
	t.Helper()
	for p, cs := range tr.Children {
		same := 0
		for _, c := range cs {
			if ps[c].Socket == ps[p].Socket && ps[c].NUMA == ps[p].NUMA {
				same++
			}
		}
		if same > radix {
			t.Fatalf("root %d: rank %d has %d children of its domain, radix %d\n%s", tr.Root, p, same, radix, tr)
		}
	}
}
