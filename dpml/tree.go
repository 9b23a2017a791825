package dpml

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/dpmlgo/dpml/dpml/internal/fused"
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
// The tree's arithmetic and places have one implementation, in C
// (dpml/internal/fused: fused.h, fused.c): a non-root rank's step (its
// fold into its partial, then its flag raised) is dpml_tree_step, a root's
// fold dpml_tree_fold, and where partials and the result live
// dpml_tree_result and the C code's partial. This transport keeps what the
// executor owns: the order of the steps, the waits (c.wait: the engine's
// timeout, abort word and error messages, which name the children), and
// the plan's partitions and segments. The fused call (fused.go) runs the
// same C steps for a plan of one tree and one segment without the
// executor, waits included; DPML_FUSED=false sends those plans here too.
// The C folds serve every (kind, op) the engine reduces (fusedOK; a test
// holds them to the kernels), so the tree has no fold in Go.
//
// The fold order is fixed by the trees (a rank's own input, then its
// children in tree order), so results are the same bits on every rank (all
// read the roots' one result) and from run to run for a given radix, l and
// topology, whichever path ran the call; they may differ in the last bits
// from the other transports' local-rank order, and between values of l.
type treeReduce struct{}

func (treeReduce) pinsBuffers() bool { return false }

// treeShape is what one rank needs of one tree of one radix.
type treeShape struct {
	tree     leaders.Tree
	kids     []int            // this rank's children, in fold order
	kidFlags []*atomic.Uint64 // their flags in this tree
	myFlag   *atomic.Uint64   // this rank's flag in this tree
	root     bool
	depth    int         // of this node's tree
	c        *fused.Tree // the same, for the C steps (nil without the C state)
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
	if c.ct != nil {
		// Only out of C memory does this fail; the steps then say so.
		t.c, _ = c.ct.NewTree(t.myFlag, t.kidFlags, t.kids, c.local, t.root)
	}
	c.trees[r][j] = t
	return t
}

// freeTrees releases the C views of the trees (release).
func (c *Comm) freeTrees() {
	for r := range c.trees {
		for _, t := range c.trees[r] {
			if t != nil && t.c != nil {
				t.c.Free()
				t.c = nil
			}
		}
	}
}

// inline reports whether plan p moves its data inside the control lines.
// (The fused call's C code decides alike: its calls are one segment.)
func (p *Plan) inline() bool {
	return p.Intra == IntraTree && p.Segments == 1 && p.Count*p.ElemSize <= inlineBytes
}

func (t treeReduce) contribute(x *call, s int, g uint64) error {
	c, p := x.c, x.p
	own, n := x.span(x.send, s)
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
		return t.step(x, ts, own, 0, n, g) // the executor raises in[me] again
	}
	// l trees: this rank's part in each, in order; the executor's raise
	// of in[me] after this repeats tree 0's.
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
		if err := t.step(x, ts, own, lo, hi-lo, g); err != nil {
			return err
		}
	}
	return nil
}

// step is a non-root rank's step in tree ts (dpml_tree_step): elements
// [lo, lo+n) of its subtree's fold into its partial, its flag in the tree
// raised to g.
func (treeReduce) step(x *call, ts *treeShape, own unsafe.Pointer, lo, n int, g uint64) error {
	if ts.c == nil || !x.c.ct.Step(ts.c, own, lo, n, x.p.inline(), int(x.kind), int(x.op), g) {
		return x.noTreeFold(ts)
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

// fold is the root's fold of its tree (dpml_tree_fold): elements
// [at, at+n) of segment s into dst.
func (treeReduce) fold(x *call, s int, g uint64, dst unsafe.Pointer, at, n int) error {
	ts := x.c.treeFor(x.p.Radix, x.c.pos)
	own, _ := x.span(x.send, s)
	if ts.c == nil || !x.c.ct.Fold(ts.c, own, dst, at, n, x.p.inline(), int(x.kind), int(x.op), g) {
		return x.noTreeFold(ts)
	}
	return nil
}

// noTreeFold is the error of a tree step the C code could not take: no C
// view of the tree (no C memory at setup), or a (kind, op) without a C
// fold, which the engine never asks for (fusedOK covers its kernels).
func (x *call) noTreeFold(ts *treeShape) error {
	if ts.c == nil {
		return fmt.Errorf("dpml: local rank %d has no C view of its reduction tree (no C memory)", x.c.local)
	}
	return fmt.Errorf("dpml: the reduction tree has no fold of %v for %v", x.op, x.kind)
}

// result is where the roots fold the node's result: dpml_tree_result's
// places, asked once at setup (treeResults) since they depend on nothing
// but inline and g's parity.
func (treeReduce) result(x *call, g uint64) unsafe.Pointer {
	if x.p.inline() {
		return x.c.treeRes[2]
	}
	return x.c.treeRes[g&1]
}

func (treeReduce) deliver(*call, int, uint64) error { return nil }

func (t treeReduce) collect(x *call, s int, g uint64) error {
	return copyResult(x, t.result(x, g), s)
}
