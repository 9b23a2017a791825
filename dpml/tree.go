package dpml

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/dpmlgo/dpml/leaders"
	"github.com/dpmlgo/dpml/shm"
)

// treeReduce is the small-message transport: a reduction tree over the
// node's ranks (leaders.BuildTree: topology-shaped, radix r inside a NUMA
// domain) instead of one leader reading every rank's line.
//
//	rank i (not the root)  wait in[child] >= g for each child,
//	                       partial(i) = send(i) op partial(child 1) op ...,
//	                       raise in[i] = g
//	root (leader 0)        the same fold into the result area; the executor
//	                       runs the inter-node step on it and raises out[0]
//	every rank             wait out[0] >= g, copy the result out
//
// A parent reads only its children's lines, so the reads of the node are
// spread over the tree's levels instead of converging on one core; the
// depth is about log_r(ppn). Messages of at most inlineBytes travel in the
// flag's own cache line (partials in in[i], the result in out[0]): one line
// transfer per hop. Larger ones use the rank's slot in the segment's buffer
// set, as the shared-memory copies do, so the same reuse argument holds: a
// rank writes its partial of generation g+2 (or, inline, g+1) only after it
// has seen out[0] reach g, which the root raises after every partial of g
// was folded.
//
// With l > 1 leaders there are l trees over disjoint partitions (the
// paper's data partitioning applied to the tree): tree j reduces partition
// j of the message, is rooted at leader j (leaders.BuildTreeAt) and flags
// through its own lines (treeSeq[j]; tree 0's are in[]). Every rank works
// the trees in order j = 0..l-1, raising its tree-j flag as soon as its
// tree-j partial is written, so tree 0 climbs while the ranks below still
// fold tree 1. A rank only ever waits for its children in tree j, or ran
// trees 0..j-1 first, so the waits cannot form a cycle; the roots fold
// their own tree last (in fold), each then carrying its partition across
// nodes on its leader communicator as the partitioned plans do. Partitions
// are whole cache lines, so l > 1 never goes inline (a message of one line
// has one active leader).
//
// The fold order is fixed by the trees (a rank's own input, then its
// children in tree order), so results are the same bits on every rank (all
// read the roots' one result) and from run to run for a given radix, l and
// topology; they may differ in the last bits from the other transports'
// local-rank order, and between values of l.
type treeReduce struct{}

func (treeReduce) pinsBuffers() bool { return false }

// treeShape is what one rank needs of one tree of one radix.
type treeShape struct {
	tree     leaders.Tree
	kids     []int            // this rank's children, in fold order
	kidFlags []*atomic.Uint64 // their flags in this tree
	myFlag   *atomic.Uint64   // this rank's flag in this tree
	root     bool
	depth    int // of this node's tree
}

// treeFor returns this rank's view of tree j (rooted at leader j) of radix
// r, building it on first use (every rank builds the same tree from the
// same places).
func (c *Comm) treeFor(r, j int) *treeShape {
	r = min(max(r, 1), len(c.trees)-1)
	if t := c.trees[r][j]; t != nil {
		return t
	}
	t := &treeShape{tree: leaders.BuildTreeAt(c.places, r, c.leaderOrder[j])}
	t.kids = t.tree.Children[c.local]
	t.root = t.tree.Root == c.local
	t.depth = t.tree.Depth()
	flags := c.seg.treeSeq[j]
	for _, k := range t.kids {
		t.kidFlags = append(t.kidFlags, flags[k])
	}
	t.myFlag = flags[c.local]
	c.trees[r][j] = t
	return t
}

// inline reports whether plan p moves its data inside the control lines.
func (p *Plan) inline() bool {
	return p.Intra == IntraTree && p.Segments == 1 && p.Count*p.ElemSize <= inlineBytes
}

// partial is where local rank i's subtree partial of generation g lives.
func (treeReduce) partial(x *call, g uint64, i int) unsafe.Pointer {
	if x.p.inline() {
		return x.c.seg.in[i].data()
	}
	return x.c.seg.slot(g, i)
}

func (t treeReduce) contribute(x *call, s int, g uint64) error {
	c, p := x.c, x.p
	if p.Leaders == 1 {
		ts := c.treeFor(p.Radix, 0)
		if ts.root {
			return nil // the root folds as leader 0, in fold
		}
		if err := c.wait.UntilAllAtLeast(ts.kidFlags, g); err != nil {
			return fmt.Errorf("dpml: local rank %d waits for its tree children %v (segment %d): %w", c.local, ts.kids, s, err)
		}
		if len(ts.kids) > 0 {
			c.mark(tpKids)
		}
		_, n := x.span(x.send, s)
		t.foldInto(x, ts, s, g, t.partial(x, g, c.local), 0, n)
		return nil // the executor raises in[me]
	}
	// l trees: this rank's part in each, in order; the executor's raise
	// of in[me] after this repeats tree 0's.
	_, n := x.span(x.send, s)
	active := p.activeLeaders(n)
	for j := 0; j < active; j++ {
		ts := c.treeFor(p.Radix, j)
		if ts.root {
			continue // leader j folds its tree in fold
		}
		if err := c.wait.UntilAllAtLeast(ts.kidFlags, g); err != nil {
			return fmt.Errorf("dpml: local rank %d waits for its children %v in tree %d (segment %d): %w", c.local, ts.kids, j, s, err)
		}
		lo, hi := p.partition(n, j)
		t.foldInto(x, ts, s, g, unsafe.Add(t.partial(x, g, c.local), lo*x.es), lo, hi-lo)
		shm.StoreRelease(ts.myFlag, g)
	}
	return nil
}

func (treeReduce) await(x *call, s int, g uint64, w *shm.Waiter) error {
	ts := x.c.treeFor(x.p.Radix, x.c.pos)
	if err := w.UntilAllAtLeast(ts.kidFlags, g); err != nil {
		return fmt.Errorf("children %v in tree %d: %w", ts.kids, x.c.pos, err)
	}
	return nil
}

func (t treeReduce) fold(x *call, s int, g uint64, dst unsafe.Pointer, at, n int) error {
	t.foldInto(x, x.c.treeFor(x.p.Radix, x.c.pos), s, g, dst, at, n)
	return nil
}

// foldInto writes elements [at, at+n) of segment s of this rank's subtree
// fold into dst: own input first, then each child's partial in tree order.
func (t treeReduce) foldInto(x *call, ts *treeShape, s int, g uint64, dst unsafe.Pointer, at, n int) {
	own, _ := x.span(x.send, s)
	srcs := x.c.scratchSrcs[:0]
	srcs = append(srcs, unsafe.Add(own, at*x.es))
	for _, k := range ts.kids {
		srcs = append(srcs, unsafe.Add(t.partial(x, g, k), at*x.es))
	}
	x.kern(dst, srcs, n)
}

func (treeReduce) result(x *call, g uint64) unsafe.Pointer {
	if x.p.inline() {
		return x.c.seg.out[0].data()
	}
	return x.c.seg.result(g)
}

func (treeReduce) deliver(*call, int, uint64) error { return nil }

func (t treeReduce) collect(x *call, s int, g uint64) error {
	return copyResult(x, t.result(x, g), s)
}
