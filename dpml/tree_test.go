package dpml

import (
	"testing"

	"github.com/dpmlgo/dpml/config"

	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/leaders"
	"github.com/dpmlgo/dpml/mpi"
)

// gatherPlaces returns every node's places in local-rank order, so a rank
// can build any node's reduction tree. It is collective over w.
func gatherPlaces(c *Comm, w *mpi.Comm, byNode [][]int) ([][]leaders.Place, error) {
	enc := c.places[c.local].Encode()
	all := make([]int64, len(enc)*w.Size())
	if err := mpi.Allgather(w, enc[:], all); err != nil {
		return nil, err
	}
	out := make([][]leaders.Place, len(byNode))
	for n, ranks := range byNode {
		for _, r := range ranks {
			var words [leaders.PlaceWords]int64
			copy(words[:], all[r*len(enc):])
			p, err := leaders.DecodePlace(words)
			if err != nil {
				return nil, err
			}
			out[n] = append(out[n], p)
		}
	}
	return out, nil
}

// treeReference folds every rank's input in the reduction trees' order with
// the test's scalar oracle (never the engine's kernels): within each tree,
// a rank's own input, then each child's subtree in tree order; then the
// node results in node order. With l trees (p.Leaders > 1 on a node of
// several ranks), element e of a segment belongs to the tree of its
// leader's partition: the segment cut into l pieces of whole cache lines,
// ceil(ceil(n/l)/align)*align elements each (the last shorter), tree j
// rooted at the j-th rank of leaders.Order (the test's own statement of
// the partition rule, not the engine's arithmetic).
func treeReference[T mpi.Number](d world, tc testCase, p Plan) []T {
	f := oracleOp[T](tc.op)
	nodeRes := make([][]T, d.nodes)
	for n, ranks := range d.byNode {
		l := 1
		if len(ranks) > 1 {
			l = p.Leaders
		}
		// owner[e]: the tree that folds element e.
		owner := make([]int, tc.count)
		for lo := 0; lo < tc.count; lo += p.SegElems {
			seg := min(p.SegElems, tc.count-lo)
			per := ((seg+l-1)/l + p.Align - 1) / p.Align * p.Align
			for e := range seg {
				owner[lo+e] = min(e/per, l-1)
			}
		}
		order := leaders.Order(d.places[n])
		res := make([]T, tc.count)
		for j := range l {
			tr := leaders.BuildTreeAt(d.places[n], p.Radix, order[j])
			if l == 1 {
				tr = leaders.BuildTree(d.places[n], p.Radix)
			}
			var sub func(i int) []T
			sub = func(i int) []T {
				acc := make([]T, tc.count)
				for e := range acc {
					acc[e] = input[T](ranks[i], e, tc.seed, tc.exact, tc.op)
				}
				for _, k := range tr.Children[i] {
					acc = oracleFold([][]T{acc, sub(k)}, f)
				}
				return acc
			}
			whole := sub(tr.Root)
			for e := range res {
				if owner[e] == j {
					res[e] = whole[e]
				}
			}
		}
		nodeRes[n] = res
	}
	return oracleFold(nodeRes, f)
}

// treeCases runs the reduction tree over every type and op, in place and
// not, inline (at most 56 bytes) and through the slots, with radixes from a
// chain (1) to flat (ppn), single and pipelined inter-node steps.
func treeCases(t *testing.T, w *mpi.Comm) {
	c, err := New(w, WithSegmentBytes(16<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	d := describe(t, c, w)
	exact := d.nodes > 2 // floats compared bit for bit with at most two nodes
	run := func(tc testCase) {
		t.Helper()
		checkAnyType(t, d, w, tc)
		if c.Nodes() < c.Size() {
			if p := c.LastPlan(); p.Count > 0 && (p.Intra != IntraTree || p.Leaders != min(max(tc.o.Leaders, 1), c.MaxLeaders())) {
				t.Fatalf("%v: ran %+v, want the tree with l = %d", tc, p, max(tc.o.Leaders, 1))
			}
		}
	}
	for _, radix := range []int{1, 2, 4, 64} {
		for _, n := range []int{1, 3, 7, 8, 97, 2048 - 3} {
			for _, inPlace := range []bool{false, true} {
				for _, k := range []int{1, 2} {
					o := Override{Intra: IntraTree, Radix: radix, Pipeline: k}
					run(testCase{count: n, op: mpi.OpSum, o: o, inPlace: inPlace, exact: exact, seed: uint64(radix*n + k)})
				}
			}
		}
	}
	// l trees over disjoint partitions: one active tree (a line or less),
	// two, and as many as the node has ranks (some idle on uneven nodes);
	// counts that leave the last partition short; radix chain to flat.
	for _, l := range []int{2, 3, c.MaxLeaders()} {
		for _, radix := range []int{1, 2, 64} {
			for _, n := range []int{5, 17, 97, 2048 - 3} {
				for _, inPlace := range []bool{false, true} {
					for _, k := range []int{1, 2} {
						o := Override{Intra: IntraTree, Radix: radix, Leaders: l, Pipeline: k}
						run(testCase{count: n, op: mpi.OpSum, o: o, inPlace: inPlace, exact: exact, seed: uint64(l*radix*n + k)})
					}
				}
			}
		}
	}
	// The fused C routine ran the one-tree cases of at most 1 KiB, unless
	// DPML_FUSED=false (TestTreeGoPath), when the executor's steps ran all
	// (with one rank per node every plan is the MPI library's).
	if on, _ := config.Bool(config.Fused); (on && c.Nodes() < c.Size()) != (c.fz.calls > 0) {
		t.Errorf("DPML_FUSED=%v, yet %d calls ran fused", on, c.fz.calls)
	}
	// Every type and op (exact small integers), inline and not.
	for _, n := range []int{1, 5, 300} {
		for _, op := range mpi.Ops() {
			for _, l := range []int{1, 2} {
				o := Override{Intra: IntraTree, Radix: 2, Leaders: l}
				for _, inPlace := range []bool{false, true} {
					tc := testCase{count: n, op: op, o: o, inPlace: inPlace, exact: true, seed: uint64(n) + uint64(op)}
					eachType(t, d, w, tc)
				}
			}
		}
	}
}

// checkAnyType runs tc on float64, int32 and float32.
func checkAnyType(t *testing.T, d world, w *mpi.Comm, tc testCase) {
	t.Helper()
	check[float64](t, d, w, tc)
	check[float32](t, d, w, tc)
	tc.exact = true
	check[int32](t, d, w, tc)
}

// eachType runs tc on every type for which tc.op is defined.
func eachType(t *testing.T, d world, w *mpi.Comm, tc testCase) {
	t.Helper()
	run := func(ok bool, f func()) {
		if ok {
			f()
		}
	}
	run(mpi.CheckOp[int8](tc.op) == nil, func() { check[int8](t, d, w, tc) })
	run(mpi.CheckOp[int16](tc.op) == nil, func() { check[int16](t, d, w, tc) })
	run(mpi.CheckOp[int32](tc.op) == nil, func() { check[int32](t, d, w, tc) })
	run(mpi.CheckOp[int64](tc.op) == nil, func() { check[int64](t, d, w, tc) })
	run(mpi.CheckOp[uint8](tc.op) == nil, func() { check[uint8](t, d, w, tc) })
	run(mpi.CheckOp[uint16](tc.op) == nil, func() { check[uint16](t, d, w, tc) })
	run(mpi.CheckOp[uint32](tc.op) == nil, func() { check[uint32](t, d, w, tc) })
	run(mpi.CheckOp[uint64](tc.op) == nil, func() { check[uint64](t, d, w, tc) })
	run(mpi.CheckOp[float32](tc.op) == nil, func() { check[float32](t, d, w, tc) })
	run(mpi.CheckOp[float64](tc.op) == nil, func() { check[float64](t, d, w, tc) })
	run(mpi.CheckOp[complex64](tc.op) == nil, func() { check[complex64](t, d, w, tc) })
	run(mpi.CheckOp[complex128](tc.op) == nil, func() { check[complex128](t, d, w, tc) })
}

// TestTree runs the reduction tree on every layout of the conformance
// suite, plus one with more ranks than the radix on a node.
//
// Mutation checks (each made TestTree/1x4 fail): folding only the first
// child of each parent (dpml_tree_fold ranging over one child); a non-root
// rank writing its inline partial into its slot instead of its flag line.
func TestTree(t *testing.T) {
	for _, lay := range append(layouts, struct {
		name string
		ppn  []int
	}{"1x6", []int{6}}) {
		t.Run(lay.name, func(t *testing.T) {
			mpitest.RunLayout(t, mpitest.Layout{PPN: lay.ppn}, treeCases)
		})
	}
}

// TestTreeGoPath is TestTree with DPML_FUSED=false on two layouts: the
// executor's steps (Go waits, the C folds called step by step), which the
// fused C routine replaces for one-tree plans of at most 1 KiB, held to
// the same reference (treeReference's fold order, bit for bit), every type
// and op included.
func TestTreeGoPath(t *testing.T) {
	t.Setenv(config.Fused, "false")
	for _, lay := range []mpitest.Layout{{PPN: []int{4}}, {PPN: []int{3, 2}}} {
		t.Run(lay.String(), func(t *testing.T) {
			mpitest.RunLayout(t, lay, treeCases)
		})
	}
}

// TestTreeFoldsEveryKernel: the tree's C folds serve every (kind, op) the
// engine has a kernel for, so no tree plan needs a fold in Go (tree.go).
// Mutation: dropping DPML_OP_PROD from COMPLEX_OPS (fused.c) fails it.
func TestTreeFoldsEveryKernel(t *testing.T) {
	for k := range kernels {
		for op := range kernels[k] {
			if has := kernels[k][op] != nil; has != fusedOK[k][op] {
				t.Errorf("%v %v: kernel %v, C fold %v", mpi.Kind(k), mpi.Op(op), has, fusedOK[k][op])
			}
		}
	}
}
