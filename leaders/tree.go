package leaders

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Tree is a reduction tree over the local ranks of a node, for the engine's
// small-message transport: every rank folds its children's partial results
// into its own, in the order of Children, and hands the fold to its parent;
// the root ends with the node's result.
//
// The shape follows the topology, so that most hops stay inside a socket and
// NUMA domain:
//
//	node root  = first rank of the first socket (NodeLeader)
//	  socket   : the ranks of a socket, grouped by NUMA domain; the first
//	             rank of the socket's first domain is the socket's root, the
//	             other sockets' roots are the node root's last children
//	  NUMA     : likewise inside a socket: the other domains' roots are the
//	             socket root's last children
//	  domain   : the domain's ranks sorted by (core, CPU, rank) form a
//	             contiguous radix-r tree: the first rank is the root, the
//	             rest is cut into at most r contiguous runs of near-equal
//	             length, each run's first rank a child, recursively
//
// so every subtree of a domain is a contiguous run of neighbouring cores
// (the cache-line hops are short), a parent has at most r children of its
// own domain, and the depth inside a domain is about log_r(size).
type Tree struct {
	Root     int
	Parent   []int   // Parent[i] is local rank i's parent; -1 for the root
	Children [][]int // fold order of each rank's children
	Radix    int
}

// BuildTree builds the reduction tree of the ranks whose places are given,
// with radix r (at least 1; values below 1 are taken as 1) inside each NUMA
// domain. It is a pure function of its arguments: every rank builds the same
// tree from the same allgathered places. Its root is NodeLeader(places).
func BuildTree(places []Place, radix int) Tree { return BuildTreeAt(places, radix, -1) }

// BuildTreeAt is BuildTree rooted at local rank root (a negative root: the
// NodeLeader, which makes it BuildTree). It is one of the engine's l
// small-message trees over disjoint partitions, tree j rooted at leader j:
// the root's socket comes first, the root's NUMA domain first in it, and
// every domain's core-sorted sequence is rotated, the root's so that the
// root comes first, the others by the same fraction of their length. The
// shape is otherwise BuildTree's (contiguous runs, modulo the rotation,
// under radix r), so each tree has BuildTree's depth. What the l trees
// gain is l roots: each folds and carries across nodes 1/l of the message.
// Their inner ranks are largely the same ranks (leaders spread by Order
// fall on the run boundaries of the contiguous split), which fold l
// partitions of n/l, as much as one tree's n.
func BuildTreeAt(places []Place, radix, root int) Tree {
	n := len(places)
	radix = max(radix, 1)
	t := Tree{Root: -1, Parent: make([]int, n), Children: make([][]int, n), Radix: radix}
	for i := range t.Parent {
		t.Parent[i] = -1
	}
	if n == 0 {
		return t
	}
	if root >= n {
		root = -1
	}
	bySocket := sockets(places)
	moveFirst(bySocket, root)
	// The rotation: the root's index in its domain's sequence over that
	// domain's length (0 for the default root).
	var num, den = 0, 1
	domains := make([][]group, len(bySocket))
	seqs := map[*group][]int{}
	for si, s := range bySocket {
		domains[si] = groupBy(places, s.ranks, func(p Place) int { return p.NUMA })
		moveFirst(domains[si], root)
		for di := range domains[si] {
			d := &domains[si][di]
			seq := slices.Clone(d.ranks)
			slices.SortStableFunc(seq, func(a, b int) int {
				return cmp.Or(cmp.Compare(places[a].Core, places[b].Core),
					cmp.Compare(places[a].Primary, places[b].Primary), cmp.Compare(a, b))
			})
			if i := slices.Index(seq, root); i >= 0 {
				num, den = i, len(seq)
			}
			seqs[d] = seq
		}
	}
	var socketRoots []int
	for si := range bySocket {
		var domainRoots []int
		for di := range domains[si] {
			seq := seqs[&domains[si][di]]
			rot := num * len(seq) / den
			if slices.Contains(seq, root) {
				rot = num
			}
			seq = append(seq[rot:len(seq):len(seq)], seq[:rot]...)
			t.contiguous(seq, radix)
			domainRoots = append(domainRoots, seq[0])
		}
		t.adopt(domainRoots)
		socketRoots = append(socketRoots, domainRoots[0])
	}
	t.adopt(socketRoots)
	t.Root = socketRoots[0]
	return t
}

// moveFirst moves the group holding rank r to the front, keeping the
// others' order (no change for r < 0 or a group already first).
func moveFirst(gs []group, r int) {
	for i, g := range gs {
		if slices.Contains(g.ranks, r) {
			copy(gs[1:i+1], gs[:i])
			gs[0] = g
			return
		}
	}
}

// contiguous links seq as a radix-r tree rooted at seq[0]: the rest is cut
// into min(r, len-1) runs of near-equal length (the longer runs first), each
// run's first rank a child of seq[0].
func (t *Tree) contiguous(seq []int, r int) {
	rest := seq[1:]
	k := min(r, len(rest))
	for i := 0; i < k; i++ {
		lo, hi := i*len(rest)/k, (i+1)*len(rest)/k
		run := rest[lo:hi]
		t.link(seq[0], run[0])
		t.contiguous(run, r)
	}
}

// adopt makes roots[1:] the last children of roots[0].
func (t *Tree) adopt(roots []int) {
	for _, r := range roots[1:] {
		t.link(roots[0], r)
	}
}

func (t *Tree) link(parent, child int) {
	t.Parent[child] = parent
	t.Children[parent] = append(t.Children[parent], child)
}

// Depth is the number of hops from the deepest rank to the root.
func (t Tree) Depth() int {
	d := 0
	for i := range t.Parent {
		h := 0
		for j := i; t.Parent[j] >= 0; j = t.Parent[j] {
			h++
		}
		d = max(d, h)
	}
	return d
}

// Check verifies that t is a tree over all ranks 0..n-1 rooted at Root:
// every rank but the root has one parent, the child lists agree with it,
// and every rank reaches the root.
func (t Tree) Check() error {
	n := len(t.Parent)
	if len(t.Children) != n || n == 0 || t.Root < 0 || t.Root >= n || t.Parent[t.Root] != -1 {
		return fmt.Errorf("leaders: tree of %d ranks with root %d is malformed", n, t.Root)
	}
	seen := make([]int, n)
	for p, cs := range t.Children {
		for _, c := range cs {
			if c < 0 || c >= n || t.Parent[c] != p {
				return fmt.Errorf("leaders: tree: rank %d lists child %d whose parent is not it", p, c)
			}
			seen[c]++
		}
	}
	for i := range n {
		if i != t.Root && seen[i] != 1 {
			return fmt.Errorf("leaders: tree: rank %d is a child %d times", i, seen[i])
		}
		steps := 0
		for j := i; j != t.Root; j = t.Parent[j] {
			if j < 0 || steps > n {
				return fmt.Errorf("leaders: tree: rank %d does not reach the root", i)
			}
			steps++
		}
	}
	return nil
}

// String draws the tree one rank per line, children indented.
func (t Tree) String() string {
	var b strings.Builder
	var walk func(r, depth int)
	walk = func(r, depth int) {
		fmt.Fprintf(&b, "%s%d\n", strings.Repeat("  ", depth), r)
		for _, c := range t.Children[r] {
			walk(c, depth+1)
		}
	}
	if t.Root >= 0 {
		walk(t.Root, 0)
	}
	return b.String()
}
