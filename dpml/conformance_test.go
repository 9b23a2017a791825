package dpml

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/leaders"
	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/plan"
)

func TestMain(m *testing.M) { mpitest.Main(m) }

// Layouts of the conformance suite: single node, two nodes, one rank per node
// (the degenerate native plan), uneven ranks per node, and three nodes (a
// ring of leaders that is not a power of two).
var layouts = []struct {
	name string
	ppn  []int
}{
	{"1x4", []int{4}},
	{"2x2", []int{2, 2}},
	{"4x1", []int{1, 1, 1, 1}},
	{"2+3", []int{3, 2}},
	{"3x2", []int{2, 2, 2}},
}

func TestConformance(t *testing.T) {
	for _, lay := range layouts {
		t.Run(lay.name, func(t *testing.T) {
			mpitest.RunLayout(t, mpitest.Layout{PPN: lay.ppn}, conformance)
		})
	}
	// Every call with cross-memory attach unless the case forces shm.
	t.Run("2x2-intra-cma", func(t *testing.T) {
		t.Setenv(config.Intra, "cma")
		mpitest.RunLayout(t, mpitest.Even(2, 2), func(t *testing.T, w *mpi.Comm) {
			conformance(t, w)
			checkLastPlan(t, w, "DPML_INTRA=cma", func(c *Comm, p Plan) bool { return !c.CMA() || p.Intra == IntraCMA })
		})
	})
	// Every copy-out with streaming stores (uneven ranks, so partitions
	// and segments start at many alignments).
	t.Run("2+3-stream", func(t *testing.T) {
		t.Setenv(config.StreamBytes, "1")
		mpitest.RunLayout(t, mpitest.Layout{PPN: []int{3, 2}}, func(t *testing.T, w *mpi.Comm) {
			conformance(t, w)
			checkLastPlan(t, w, "DPML_STREAM_BYTES=1", func(_ *Comm, p Plan) bool { return p.Stream })
		})
	})
	// CLDEMOTE after every write for others (a hint: results unchanged;
	// a no-op where the CPU lacks it).
	t.Run("2x2-demote", func(t *testing.T) {
		t.Setenv(config.Demote, "1")
		mpitest.RunLayout(t, mpitest.Even(2, 2), func(t *testing.T, w *mpi.Comm) {
			conformance(t, w)
			checkLastPlan(t, w, "DPML_DEMOTE=1", func(c *Comm, _ Plan) bool { return c.demote })
		})
	})
	// Nodes found by host name instead of MPI_Comm_split_type.
	t.Run("2+3-by-host", func(t *testing.T) {
		t.Setenv(config.NodeSplit, "host")
		mpitest.RunLayout(t, mpitest.Layout{PPN: []int{3, 2}}, func(t *testing.T, w *mpi.Comm) {
			if v, _ := config.Get(config.NodeSplit); v != "host" {
				t.Fatalf("%s = %q in the rank", config.NodeSplit, v)
			}
			conformance(t, w)
		})
	})
}

// checkLastPlan makes one call of 1000 float64 on a new Comm and fails
// unless ok accepts the plan it ran (the setting named by what honoured).
func checkLastPlan(t *testing.T, w *mpi.Comm, what string, ok func(*Comm, Plan) bool) {
	t.Helper()
	c, err := New(w)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]float64, 1000)
	if err := AllreduceInPlace(c, buf, mpi.OpSum); err != nil {
		t.Fatal(err)
	}
	if !ok(c, c.LastPlan()) {
		t.Fatalf("%s not honoured: %+v", what, c.LastPlan())
	}
}

// world describes where every rank sits, so a rank can compute the
// reference result in the engine's reduction order.
type world struct {
	size, rank int
	nodes      int
	byNode     [][]int           // world ranks of each node, in local-rank order
	places     [][]leaders.Place // where each node's ranks run, in local-rank order
	c          *Comm
}

func describe(t *testing.T, c *Comm, w *mpi.Comm) world {
	t.Helper()
	d, err := describeComm(c, w)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

type testCase struct {
	count   int
	op      mpi.Op
	o       Override
	inPlace bool
	exact   bool // small integer values: sums are exact in any order
	seed    uint64
}

func (tc testCase) String() string {
	return fmt.Sprintf("count=%d op=%v variant=%v l=%d k=%d intra=%v inter=%v inplace=%v exact=%v",
		tc.count, tc.op, tc.o.Variant, tc.o.Leaders, tc.o.Pipeline, tc.o.Intra, tc.o.Inter, tc.inPlace, tc.exact)
}

// input is rank r's element i: small integers (exact) or random floats.
func input[T mpi.Number](r, i int, seed uint64, exact bool, op mpi.Op) T {
	h := seed ^ uint64(r)*0x9e3779b97f4a7c15 ^ uint64(i)*0xbf58476d1ce4e5b9
	h ^= h >> 31
	h *= 0x94d049bb133111eb
	h ^= h >> 29
	v := int64(h%7) - 3 // -3..3
	if op == mpi.OpProd {
		v = int64(h%3) - 1 // keep products small
		if v == 0 {
			v = 2
		}
	}
	var z T
	switch p := any(&z).(type) {
	case *float32:
		*p = float32(v)
		if !exact {
			*p = float32(math.Ldexp(float64(int64(h>>11)%1000003), -int(h%20)))
		}
	case *float64:
		*p = float64(v)
		if !exact {
			*p = math.Ldexp(float64(int64(h>>11)), -40-int(h%20))
		}
	case *complex64:
		*p = complex(float32(v), float32(v%2))
	case *complex128:
		*p = complex(float64(v), float64(v%2))
	case *uint8, *uint16, *uint32, *uint64:
		// unsigned: map to 0..6 (prod: 1..3)
		u := uint64(v + 3)
		if op == mpi.OpProd {
			u = uint64(v + 2)
		}
		setUint(p, u)
	default:
		setInt(p, v)
	}
	return z
}

func setUint(p any, u uint64) {
	switch q := p.(type) {
	case *uint8:
		*q = uint8(u)
	case *uint16:
		*q = uint16(u)
	case *uint32:
		*q = uint32(u)
	case *uint64:
		*q = u
	}
}

func setInt(p any, v int64) {
	switch q := p.(type) {
	case *int8:
		*q = int8(v)
	case *int16:
		*q = int16(v)
	case *int32:
		*q = int32(v)
	case *int64:
		*q = v
	}
}

// reference folds every rank's input in the engine's order (ranks of a
// node in local-rank order, then the node results in node order) with the
// test's own scalar oracle (oracle_test.go), never the engine's kernels.
func reference[T mpi.Number](d world, tc testCase) []T {
	return oracleFold(nodeResults[T](d, tc), oracleOp[T](tc.op))
}

// nodeResults folds each node's inputs in local-rank order with the
// scalar oracle: what every node's leaders hold before the inter-node step
// (copies and cross-memory attach; the tree has its own order).
func nodeResults[T mpi.Number](d world, tc testCase) [][]T {
	f := oracleOp[T](tc.op)
	if f == nil {
		panic(fmt.Sprintf("no oracle for %T %v", *new(T), tc.op))
	}
	nodeRes := make([][]T, d.nodes)
	for n, ranks := range d.byNode {
		srcs := make([][]T, len(ranks))
		for i, r := range ranks {
			srcs[i] = make([]T, tc.count)
			for e := range srcs[i] {
				srcs[i][e] = input[T](r, e, tc.seed, tc.exact, tc.op)
			}
		}
		nodeRes[n] = oracleFold(srcs, f)
	}
	return nodeRes
}

// ringRotations returns, for each node c, the node results folded in node
// order rotated to start at c (c, c+1, ..., c-1): the orders a ring
// reduction may fold an element in. Which one an element gets depends on
// the chunk it falls in; the test does not restate the cut, it accepts
// any rotation (and, separately, requires equal bits on every rank and
// run after run).
func ringRotations[T mpi.Number](d world, tc testCase) [][]T {
	f := oracleOp[T](tc.op)
	res := nodeResults[T](d, tc)
	out := make([][]T, d.nodes)
	for c := range out {
		rot := make([][]T, d.nodes)
		for i := range rot {
			rot[i] = res[(c+i)%d.nodes]
		}
		out[c] = oracleFold(rot, f)
	}
	return out
}

// check runs one case on every rank and verifies the result against the
// reference and against every other rank's bits.
func check[T mpi.Number](t *testing.T, d world, w *mpi.Comm, tc testCase) {
	t.Helper()
	send := make([]T, tc.count)
	for i := range send {
		send[i] = input[T](d.rank, i, tc.seed, tc.exact, tc.op)
	}
	recv := make([]T, tc.count)
	var err error
	if tc.inPlace {
		recv = send
		err = AllreduceInPlaceWith(d.c, recv, tc.op, tc.o)
	} else {
		err = AllreduceWith(d.c, send, recv, tc.op, tc.o)
	}
	if err != nil {
		t.Fatalf("%T %v: %v", *new(T), tc, err)
	}
	want := reference[T](d, tc)
	p := d.c.LastPlan()
	if p.Intra == IntraTree {
		want = treeReference[T](d, tc, p)
	}
	if tc.o.Inter != plan.InterAuto && p.Variant != Native && d.nodes > 1 && p.Inter != tc.o.Inter {
		t.Fatalf("%T %v: the plan ran inter-node algorithm %v (%s)", *new(T), tc, p.Inter, p.Spec())
	}
	// The ring folds each chunk's node results in node order rotated to
	// start at some node: bits are checked against every rotation.
	var alts [][]T
	if p.InterAlgorithm() == plan.InterRing && d.nodes > 2 && !tc.exact {
		if p.Intra == IntraTree {
			t.Fatalf("%T %v: no bit-exact oracle for trees with the ring on %d nodes: use exact inputs", *new(T), tc, d.nodes)
		}
		alts = ringRotations[T](d, tc)
	}
	// Exact cases compare values (the MPI library may produce -0 where Go
	// produces +0, e.g. in complex products); order-checked cases compare bits.
	for i := range want {
		ok := tc.exact && recv[i] == want[i] || !tc.exact && sameBits(recv[i], want[i])
		for _, a := range alts {
			ok = ok || sameBits(recv[i], a[i])
		}
		if !ok {
			t.Fatalf("%T %v: element %d = %v, want %v", *new(T), tc, i, recv[i], want[i])
		}
	}
	sameOnAllRanks(t, w, recv, tc)
}

func sameBits[T mpi.Number](a, b T) bool {
	return string(unsafe.Slice((*byte)(unsafe.Pointer(&a)), unsafe.Sizeof(a))) ==
		string(unsafe.Slice((*byte)(unsafe.Pointer(&b)), unsafe.Sizeof(b)))
}

func sameOnAllRanks[T mpi.Number](t *testing.T, w *mpi.Comm, v []T, tc testCase) {
	t.Helper()
	h := fnv.New64a()
	if len(v) > 0 {
		var z T
		h.Write(unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(z))))
	}
	mine := []uint64{h.Sum64()}
	all := make([]uint64, w.Size())
	if err := mpi.Allgather(w, mine, all); err != nil {
		t.Fatal(err)
	}
	for r, x := range all {
		if x != all[0] {
			t.Fatalf("%T %v: rank %d's result differs from rank 0's", *new(T), tc, r)
		}
	}
}

// allOps runs every valid op on type T for a few counts and plans, the
// inter-node step by the MPI library and by the ring.
func allOps[T mpi.Number](t *testing.T, d world, w *mpi.Comm) {
	maxL := d.c.MaxLeaders()
	ring := plan.InterRing
	for _, op := range mpi.Ops() {
		if mpi.CheckOp[T](op) != nil {
			continue
		}
		for _, n := range []int{1, 97} {
			for _, o := range []Override{{}, {Leaders: maxL, Pipeline: 2}, {Variant: DPML, Leaders: 2}, {Leaders: maxL, Intra: IntraCMA},
				{Variant: DPML, Leaders: 2, Inter: ring}, {Leaders: maxL, Pipeline: 2, Inter: ring}} {
				check[T](t, d, w, testCase{count: n, op: op, o: o, exact: true, seed: uint64(n)})
			}
		}
	}
}

// conformanceSeg is the segment size of the conformance communicators:
// small, so that modest counts already take several segments.
const conformanceSeg = 16 << 10

// conformanceComm opens the communicator the conformance suites run on;
// the caller defers closeChecked at once (Close is collective, so it runs
// inside the rank's function, not in a test cleanup).
func conformanceComm(t *testing.T, w *mpi.Comm) *Comm {
	t.Helper()
	c, err := New(w, WithSegmentBytes(conformanceSeg), WithTimeout(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// closeChecked closes c and reports a failed Close.
func closeChecked(t *testing.T, c *Comm) {
	if err := c.Close(); err != nil {
		t.Error(err)
	}
}

func conformance(t *testing.T, w *mpi.Comm) {
	const seg = conformanceSeg
	c := conformanceComm(t, w)
	defer closeChecked(t, c)
	d := describe(t, c, w)

	// Every type x op.
	allOps[int8](t, d, w)
	allOps[int16](t, d, w)
	allOps[int32](t, d, w)
	allOps[int64](t, d, w)
	allOps[uint8](t, d, w)
	allOps[uint16](t, d, w)
	allOps[uint32](t, d, w)
	allOps[uint64](t, d, w)
	allOps[float32](t, d, w)
	allOps[float64](t, d, w)
	allOps[complex64](t, d, w)
	allOps[complex128](t, d, w)

	// Every plan shape x count edge, in place and not.
	maxL := c.MaxLeaders()
	// Random floats are checked bit-exactly against the engine's order
	// when the inter-node combination is a single commutative step.
	exact := d.nodes > 2
	if !c.CMA() {
		t.Log("cross-memory attach is not permitted here: CMA plans fall back to shared-memory copies")
	} else if p, _ := c.Plan(1<<20, 8, Override{Intra: IntraCMA}); p.Intra != IntraCMA && c.Size() > c.Nodes() {
		t.Fatalf("CMA permitted but the plan does not use it: %+v", p)
	}
	for _, l := range []int{1, 2, 4, maxL} {
		counts := []int{0, 1, max(l-1, 1), l + 1, 97, 3*seg/8 + 5}
		for _, k := range []int{1, 2, 4} {
			for i, n := range counts {
				for _, inPlace := range []bool{false, true} {
					intra := []Intra{IntraShm, IntraCMA}[(i+k)%2]
					inter := []plan.Inter{plan.InterAuto, plan.InterRing}[(i+l)%2]
					o := Override{Leaders: l, Pipeline: k, Intra: intra, Inter: inter}
					check[float64](t, d, w, testCase{count: n, op: mpi.OpSum, o: o, inPlace: inPlace, exact: exact, seed: uint64(l*k + n)})
					check[int32](t, d, w, testCase{count: n, op: mpi.OpBxor, o: o, inPlace: inPlace, exact: true, seed: 7})
				}
			}
		}
		check[float32](t, d, w, testCase{count: 1000, op: mpi.OpMax, o: Override{Variant: DPML, Leaders: l}, exact: exact, seed: 3})
	}
	// A large message: many segments through both buffer sets.
	big := 1<<20 + 3
	check[float64](t, d, w, testCase{count: big, op: mpi.OpSum, o: Override{Leaders: maxL, Pipeline: 2}, exact: exact, seed: 11})
	check[int64](t, d, w, testCase{count: big, op: mpi.OpSum, o: Override{Variant: DPML, Leaders: 1}, inPlace: true, exact: true, seed: 12})
	check[float64](t, d, w, testCase{count: big, op: mpi.OpSum, o: Override{Leaders: maxL, Pipeline: 2, Intra: IntraCMA}, inPlace: true, exact: exact, seed: 14})
	check[int32](t, d, w, testCase{count: big, op: mpi.OpBxor, o: Override{Variant: DPML, Leaders: 2, Intra: IntraCMA}, exact: true, seed: 15})
	check[float32](t, d, w, testCase{count: big, op: mpi.OpSum, exact: true, seed: 13})
	check[float64](t, d, w, testCase{count: big, op: mpi.OpSum, o: Override{Leaders: maxL, Pipeline: 4, Inter: plan.InterRing}, inPlace: true, exact: exact, seed: 16})
	check[int32](t, d, w, testCase{count: big, op: mpi.OpBor, o: Override{Variant: DPML, Leaders: 1, Intra: IntraCMA, Inter: plan.InterRing}, exact: true, seed: 17})
}

func TestDeterministicAcrossRuns(t *testing.T) {
	// The same plan and inputs give the same bits call after call.
	mpitest.Run(t, 2, 2, func(t *testing.T, w *mpi.Comm) {
		c, err := New(w, WithSegmentBytes(8<<10))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// Precedence: per-call override, then the communicator's.
		c.SetOverride(Override{Leaders: 2, Pipeline: 4})
		if p, err := c.Plan(1000, 8, Override{}); err != nil || p.Leaders != 2 || p.Pipeline != 4 {
			t.Fatalf("plan with a communicator override: %+v, %v", p, err)
		}
		if p, _ := c.Plan(1000, 8, Override{Leaders: 1}); p.Leaders != 1 || p.Pipeline != 4 {
			t.Fatalf("per-call override must win: %+v", p)
		}
		c.SetOverride(Override{})
		rng := rand.New(rand.NewPCG(uint64(w.Rank()), 9))
		send := make([]float64, 5000)
		for i := range send {
			send[i] = rng.NormFloat64()
		}
		var first []float64
		for range 5 {
			out := make([]float64, len(send))
			if err := AllreduceWith(c, send, out, mpi.OpSum, Override{Leaders: 2, Pipeline: 2}); err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = out
				continue
			}
			for i := range out {
				if math.Float64bits(out[i]) != math.Float64bits(first[i]) {
					t.Fatalf("element %d changed between calls: %v vs %v", i, out[i], first[i])
				}
			}
		}
	})
}

// TestLargeSegments runs the default-sized segments, where a leader's
// partition spans several cross-memory-attach blocks.
func TestLargeSegments(t *testing.T) {
	mpitest.RunLayout(t, mpitest.Layout{PPN: []int{3, 2}}, func(t *testing.T, w *mpi.Comm) {
		c, err := New(w, WithSegmentBytes(1<<20))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		d := describe(t, c, w)
		n := 300_001 // 2.4 MB of float64: three segments
		for _, o := range []Override{{Leaders: 1, Intra: IntraCMA}, {Leaders: 2, Pipeline: 2, Intra: IntraCMA}, {Leaders: 2, Intra: IntraShm}} {
			check[float64](t, d, w, testCase{count: n, op: mpi.OpSum, o: o, exact: false, seed: 21})
			check[float64](t, d, w, testCase{count: n, op: mpi.OpSum, o: o, inPlace: true, exact: false, seed: 22})
		}
	})
}
