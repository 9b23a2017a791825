package leaders

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSpread(t *testing.T) {
	tests := []struct {
		n    int
		want []int
	}{
		{0, []int{}},
		{1, []int{0}},
		{2, []int{0, 1}},
		{3, []int{0, 2, 1}},
		{4, []int{0, 2, 1, 3}},
		{5, []int{0, 3, 2, 4, 1}},
		{6, []int{0, 3, 2, 5, 1, 4}},
		{7, []int{0, 4, 2, 6, 1, 5, 3}},
		{8, []int{0, 4, 2, 6, 1, 5, 3, 7}},
		{9, []int{0, 5, 3, 7, 2, 6, 4, 8, 1}},
	}
	for _, tc := range tests {
		if got := Spread(tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("Spread(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
}

func TestSpreadProperties(t *testing.T) {
	for n := 1; n <= 300; n++ {
		s := Spread(n)
		if !isPerm(s, n) {
			t.Fatalf("Spread(%d) = %v is not a permutation", n, s)
		}
		// Powers of two: bit reversal.
		if n&(n-1) == 0 {
			m := bits.Len(uint(n)) - 1
			for i, p := range s {
				if want := int(bits.Reverse(uint(i)) >> (bits.UintSize - m)); m > 0 && p != want {
					t.Fatalf("Spread(%d)[%d] = %d, want bit reversal %d", n, i, p, want)
				}
			}
		}
		// Every prefix is balanced between the two halves of the bisection.
		h, lo := (n+1)/2, 0
		for l, p := range s {
			if p < h {
				lo++
			}
			if hi := l + 1 - lo; lo-hi < 0 || lo-hi > 1 {
				t.Fatalf("Spread(%d) prefix %d: %d in the lower half, %d in the upper", n, l+1, lo, hi)
			}
		}
	}
}

func isPerm(s []int, n int) bool {
	if len(s) != n {
		return false
	}
	seen := make([]bool, n)
	for _, v := range s {
		if v < 0 || v >= n || seen[v] {
			return false
		}
		seen[v] = true
	}
	return true
}

// bound returns the place of a rank bound to one CPU.
func bound(cpu, core, socket, numa int) Place {
	return Place{CPUs: []int{cpu}, Primary: cpu, Core: core, Socket: socket, NUMA: numa}
}

func TestOrder(t *testing.T) {
	same := func(p Place, n int) []Place { return slices.Repeat([]Place{p}, n) }
	unbound := Place{CPUs: []int{0, 1}, Primary: 0, Core: 0, Socket: -1, NUMA: -1}
	onSocket0 := bound(0, 0, 0, 0)

	type tc struct {
		name   string
		places []Place
		want   []int
	}
	tests := []tc{
		{"empty", nil, []int{}},
		// Two sockets, cpus interleaved: rank r on cpu r, socket r%2.
		{"two sockets interleaved", func() []Place {
			var ps []Place
			for r := range 8 {
				ps = append(ps, bound(r, r/2, r%2, r%2))
			}
			return ps
		}(), []int{0, 1, 4, 5, 2, 3, 6, 7}},
		// Two sockets, contiguous binding: 0-3 on socket 0, 4-7 on socket 1.
		{"two sockets contiguous", func() []Place {
			var ps []Place
			for r := range 8 {
				ps = append(ps, bound(r, r%4, r/4, r/4))
			}
			return ps
		}(), []int{0, 4, 2, 6, 1, 5, 3, 7}},
		// Same, but the rank numbering is reversed relative to the CPUs.
		{"two sockets, ranks reversed", func() []Place {
			var ps []Place
			for r := range 8 {
				c := 7 - r
				ps = append(ps, bound(c, c%4, c/4, c/4))
			}
			return ps
		}(), []int{7, 3, 5, 1, 6, 2, 4, 0}},
		// Unequal sockets: 6 ranks on socket 0, 2 on socket 1.
		{"unequal sockets", func() []Place {
			var ps []Place
			for r := range 8 {
				s := 0
				if r >= 6 {
					s = 1
				}
				ps = append(ps, bound(r, r, s, s))
			}
			return ps
		}(), []int{0, 6, 3, 7, 2, 5, 1, 4}},
		// 2 sockets x 2 NUMA nodes x 4 ranks, contiguous.
		{"two sockets two numa each", func() []Place {
			var ps []Place
			for r := range 16 {
				ps = append(ps, bound(r, r%8, r/8, r/4))
			}
			return ps
		}(), []int{0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15}},
		// SMT: 8 ranks on 4 cores x 2 threads; cpu c and c+4 are siblings.
		{"smt siblings late", func() []Place {
			var ps []Place
			for r := range 8 {
				ps = append(ps, bound(r, r%4, 0, 0))
			}
			return ps
		}(), []int{0, 2, 1, 3, 4, 6, 5, 7}},
		// SMT with 3 cores x 2 threads: all cores before any sibling.
		{"smt three cores, siblings apart", func() []Place {
			var ps []Place
			for r := range 6 {
				ps = append(ps, bound(r, r%3, 0, 0))
			}
			return ps
		}(), []int{0, 2, 1, 3, 5, 4}},
		{"smt three cores, siblings adjacent", func() []Place {
			var ps []Place
			for r := range 6 {
				ps = append(ps, bound(r, r/2, 0, 0))
			}
			return ps
		}(), []int{0, 4, 2, 1, 5, 3}},
		// Core information missing: spread by Primary CPU.
		{"no core ids", func() []Place {
			var ps []Place
			for r := range 8 {
				ps = append(ps, bound(7-r, -1, 0, 0))
			}
			return ps
		}(), []int{7, 3, 5, 1, 6, 2, 4, 0}},
		// A NIC on socket 1 puts socket 1 first.
		{"nic socket first", func() []Place {
			var ps []Place
			for r := range 4 {
				p := bound(r, r%2, r/2, r/2)
				p.NearNIC = r >= 2
				ps = append(ps, p)
			}
			return ps
		}(), []int{2, 0, 3, 1}},
		// Unknown socket ranks form their own group, after known ones.
		{"mixed known and unknown", []Place{unbound, bound(1, 1, 0, 0), unbound, bound(0, 0, 0, 0)},
			[]int{3, 0, 1, 2}},
	}
	for n := 1; n <= 9; n++ {
		tests = append(tests,
			tc{fmt.Sprint("no topology unbound ppn ", n), same(unbound, n), Spread(n)},
			tc{fmt.Sprint("all equal ppn ", n), same(onSocket0, n), Spread(n)},
			tc{fmt.Sprint("unknown ppn ", n), same(Unknown, n), Spread(n)})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Order(tc.places)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Order = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestOrderContiguousAlternates(t *testing.T) {
	for _, ppn := range []int{2, 4, 6, 8, 16, 24} {
		var ps []Place
		for r := range ppn {
			s := r * 2 / ppn
			ps = append(ps, bound(r, r, s, s))
		}
		o := Order(ps)
		for i, r := range o {
			if ps[r].Socket != i%2 {
				t.Fatalf("ppn %d: order %v does not alternate sockets", ppn, o)
			}
		}
	}
}

func TestOrderRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		n := rng.IntN(40)
		ps := make([]Place, n)
		for i := range ps {
			c := rng.IntN(64)
			ps[i] = bound(c, c%16, rng.IntN(3)-1, rng.IntN(4)-1)
			ps[i].NearNIC = rng.IntN(4) == 0
		}
		o := Order(ps)
		if !isPerm(o, n) {
			t.Fatalf("Order(%v) = %v is not a permutation", ps, o)
		}
		if o2 := Order(slices.Clone(ps)); !slices.Equal(o, o2) {
			t.Fatal("Order not deterministic")
		}
		sl := SocketLeaders(ps)
		if !slices.Equal(sl, o[:len(sl)]) {
			t.Fatalf("SocketLeaders %v is not a prefix of Order %v", sl, o)
		}
		seen := map[int]bool{}
		for _, r := range sl {
			if seen[ps[r].Socket] {
				t.Fatalf("two socket leaders on socket %d", ps[r].Socket)
			}
			seen[ps[r].Socket] = true
		}
		for _, p := range ps {
			if !seen[p.Socket] {
				t.Fatalf("socket %d has no leader", p.Socket)
			}
		}
	}
}

func TestSocketAndNodeLeaders(t *testing.T) {
	contiguous := func(nic int) []Place {
		var ps []Place
		for r := range 8 {
			p := bound(r, r%4, r/4, r/4)
			p.NearNIC = p.Socket == nic
			ps = append(ps, p)
		}
		return ps
	}
	tests := []struct {
		name    string
		places  []Place
		sockets []int
		node    int
	}{
		{"empty", nil, []int{}, -1},
		{"one rank", []Place{Unknown}, []int{0}, 0},
		{"no topology", slices.Repeat([]Place{Unknown}, 5), []int{0}, 0},
		{"two sockets", contiguous(-1), []int{0, 4}, 0},
		{"nic on socket 1", contiguous(1), []int{4, 0}, 4},
		{"nic on socket 0", contiguous(0), []int{0, 4}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := SocketLeaders(tc.places); !slices.Equal(got, tc.sockets) {
				t.Errorf("SocketLeaders = %v, want %v", got, tc.sockets)
			}
			if got := NodeLeader(tc.places); got != tc.node {
				t.Errorf("NodeLeader = %d, want %d", got, tc.node)
			}
		})
	}
}
