package dpml

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/plan"
	"github.com/dpmlgo/dpml/shm"
)

// Every algorithm a plan can name has an implementation here and a cost
// function in the cost model, under the same plan.Inter.
func TestInterRegistry(t *testing.T) {
	for id := plan.InterMPI; id < plan.NumInter; id++ {
		if interAlgos[id] == nil {
			t.Errorf("%v: no implementation registered", id)
		} else if a := interAlgos[id](); a == nil {
			t.Errorf("%v: the constructor returns nil", id)
		}
		if costmodel.InterCostOf(id) == nil {
			t.Errorf("%v: no cost function in the cost model", id)
		}
	}
	if interAlgos[plan.InterAuto] != nil || costmodel.InterCostOf(plan.InterAuto) != nil {
		t.Error("InterAuto is resolved before the registry: nothing may be registered under it")
	}
	for _, c := range []struct {
		want  plan.Inter
		nodes int
		got   plan.Inter
		ok    bool
	}{
		{plan.InterAuto, 3, plan.InterMPI, true},
		{plan.InterRing, 3, plan.InterRing, true},
		{plan.InterMPI, 2, plan.InterMPI, true},
		{plan.InterRing, 1, plan.InterAuto, true}, // no inter-node step on one node
		{plan.InterSharp, 2, 0, false},            // the offload is Offload's
		{plan.NumInter, 2, 0, false},
	} {
		got, err := interOf(c.want, c.nodes)
		if c.ok && (err != nil || got != c.got) || !c.ok && !errors.Is(err, ErrConfig) {
			t.Errorf("interOf(%v, %d nodes) = %v, %v; want %v (ok %v)", c.want, c.nodes, got, err, c.got, c.ok)
		}
	}
}

// The ring's schedule, without MPI: in every step each node receives the
// chunk its left neighbour sends; after the reduce-scatter, node r holds
// chunk r+1 reduced from every node once; after the allgather, every node
// holds every chunk. Checked for 1 to 9 nodes by simulating the messages.
func TestRingSchedule(t *testing.T) {
	for n := 2; n <= 9; n++ {
		steps := make([]ringStep, n)
		for r := range steps {
			steps[r] = ringStep{nodes: n, me: r}
		}
		// has[r][c]: the set of nodes whose data node r's copy of chunk c holds.
		has := make([][]map[int]bool, n)
		for r := range has {
			has[r] = make([]map[int]bool, n)
			for c := range has[r] {
				has[r][c] = map[int]bool{r: true}
			}
		}
		for tt := 0; tt < 2*(n-1); tt++ {
			type msg struct {
				chunk int
				from  map[int]bool
			}
			inbox := make([]msg, n)
			for r := range steps {
				sc, _ := steps[r].chunks(tt)
				from := map[int]bool{}
				for k := range has[r][sc] {
					from[k] = true
				}
				inbox[(r+1)%n] = msg{sc, from}
			}
			for r := range steps {
				_, rc := steps[r].chunks(tt)
				m := inbox[r]
				if m.chunk != rc {
					t.Fatalf("%d nodes, step %d: node %d receives chunk %d, its left neighbour sends chunk %d", n, tt, r, rc, m.chunk)
				}
				if tt < n-1 {
					for k := range m.from {
						if has[r][rc][k] {
							t.Fatalf("%d nodes, step %d: node %d folds node %d's data into chunk %d twice", n, tt, r, k, rc)
						}
						has[r][rc][k] = true
					}
				} else {
					has[r][rc] = m.from
				}
			}
			if tt == n-2 {
				for r := range steps {
					if c := (r + 1) % n; len(has[r][c]) != n {
						t.Fatalf("%d nodes: after the reduce-scatter node %d's chunk %d holds %d nodes' data", n, r, c, len(has[r][c]))
					}
				}
			}
		}
		for r := range has {
			for c := range has[r] {
				if len(has[r][c]) != n {
					t.Fatalf("%d nodes: node %d ends with chunk %d from %d nodes", n, r, c, len(has[r][c]))
				}
			}
		}
	}
}

// ringLayouts: three nodes (not a power of two), even and uneven (the
// smallest node has one rank: l = 1).
var ringLayouts = []struct {
	name string
	ppn  []int
}{
	{"3x2", []int{2, 2, 2}},
	{"2+1+2", []int{2, 1, 2}},
}

// TestInterRing runs the ring inter-node step on three nodes: every type
// and op, counts below the node count, several leaders and pipeline
// depths, every transport, in place and not, random floats checked bit
// for bit, and the same bits call after call.
func TestInterRing(t *testing.T) {
	for _, lay := range ringLayouts {
		t.Run(lay.name, func(t *testing.T) {
			mpitest.RunLayout(t, mpitest.Layout{PPN: lay.ppn}, ringCases)
		})
	}
}

func ringCases(t *testing.T, w *mpi.Comm) {
	const seg = conformanceSeg
	c := conformanceComm(t, w)
	defer closeChecked(t, c)
	d := describe(t, c, w)
	ring := plan.InterRing
	maxL := c.MaxLeaders()
	allOpsWith[int8](t, d, w, ring)
	allOpsWith[uint16](t, d, w, ring)
	allOpsWith[int32](t, d, w, ring)
	allOpsWith[uint64](t, d, w, ring)
	allOpsWith[float32](t, d, w, ring)
	allOpsWith[float64](t, d, w, ring)
	allOpsWith[complex64](t, d, w, ring)
	allOpsWith[complex128](t, d, w, ring)
	// Counts around the node count and the chunks' cache lines, every
	// shape, random floats (bits against the ring's orders).
	for _, l := range []int{1, 2, maxL} {
		for _, k := range []int{1, 2, 4} {
			for i, n := range []int{0, 1, 2, 3, 4, 7, 8, 9, 24, 25, 97, 3*seg/8 + 5} {
				intra := []Intra{IntraShm, IntraCMA}[(i+k)%2]
				o := Override{Leaders: l, Pipeline: k, Intra: intra, Inter: ring}
				check[float64](t, d, w, testCase{count: n, op: mpi.OpSum, o: o, inPlace: i%3 == 0, seed: uint64(100*l + 10*k + n)})
				check[int16](t, d, w, testCase{count: n, op: mpi.OpProd, o: o, inPlace: i%2 == 0, exact: true, seed: 5})
			}
		}
		// The reduction trees, then the ring among their roots.
		check[float32](t, d, w, testCase{count: 33, op: mpi.OpSum, o: Override{Variant: DPML, Leaders: l, Intra: IntraTree, Inter: ring}, exact: true, seed: 6})
	}
	// Many segments through both buffer sets, the rings of two segments
	// in flight at once.
	big := 1<<18 + 3
	check[float64](t, d, w, testCase{count: big, op: mpi.OpSum, o: Override{Leaders: maxL, Pipeline: 4, Inter: ring}, seed: 31})
	check[float32](t, d, w, testCase{count: big, op: mpi.OpMax, o: Override{Variant: DPML, Leaders: 1, Inter: ring}, inPlace: true, seed: 32})
	// Calls alternating between the ring and the MPI library's step on
	// one communicator.
	for i := range 6 {
		inter := []plan.Inter{plan.InterRing, plan.InterMPI}[i%2]
		check[int64](t, d, w, testCase{count: 1000 + i, op: mpi.OpSum, o: Override{Leaders: maxL, Pipeline: 1 + i%3, Inter: inter}, exact: true, seed: uint64(i)})
	}
	ringRepeats(t, c, w)
}

// ringRepeats: a fixed plan gives the same bits call after call, on every
// rank (checked by check's hash exchange for the first call).
func ringRepeats(t *testing.T, c *Comm, w *mpi.Comm) {
	rng := rand.New(rand.NewPCG(uint64(w.Rank()), 17))
	send := make([]float64, 20000)
	for i := range send {
		send[i] = rng.NormFloat64() * math.Exp2(float64(rng.IntN(40)-20))
	}
	for _, o := range []Override{{Variant: DPML, Leaders: 2, Inter: plan.InterRing}, {Leaders: 2, Pipeline: 4, SegmentBytes: 8 << 10, Inter: plan.InterRing}} {
		var first []float64
		for range 4 {
			out := make([]float64, len(send))
			if err := AllreduceWith(c, send, out, mpi.OpSum, o); err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = out
				sameOnAllRanks(t, w, out, testCase{count: len(out), o: o})
				continue
			}
			for i := range out {
				if math.Float64bits(out[i]) != math.Float64bits(first[i]) {
					t.Fatalf("%s: element %d changed between calls: %v vs %v", o.Spec(), i, out[i], first[i])
				}
			}
		}
	}
}

// allOpsWith runs every valid op on type T with the inter-node algorithm
// inter, for a few counts and plans.
func allOpsWith[T mpi.Number](t *testing.T, d world, w *mpi.Comm, inter plan.Inter) {
	maxL := d.c.MaxLeaders()
	for _, op := range mpi.Ops() {
		if mpi.CheckOp[T](op) != nil {
			continue
		}
		for _, n := range []int{1, 2, 97} {
			for _, o := range []Override{{Inter: inter}, {Leaders: maxL, Pipeline: 2, Inter: inter}, {Variant: DPML, Leaders: 2, Intra: IntraCMA, Inter: inter}} {
				check[T](t, d, w, testCase{count: n, op: op, o: o, exact: true, seed: uint64(n)})
			}
		}
	}
}

// A node that never makes the call: the other nodes' leaders fail within
// DPML_TIMEOUT in the ring (an error wrapping shm.ErrTimeout, or
// shm.ErrAborted when a rank of the node timed out first, that says which
// ring step), not in a hang; their ranks fail with them.
func TestInterRingTimeout(t *testing.T) {
	mpitest.Run(t, 2, 2, func(t *testing.T, w *mpi.Comm) {
		c, err := New(w, WithTimeout(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]float64, 64) // eager messages: no send left pending
		if c.NodeIndex() == 1 {
			// Stay away until the others have failed, then leave the
			// communicator without a call.
			if err := w.Barrier(); err != nil {
				t.Fatal(err)
			}
			return
		}
		err = AllreduceInPlaceWith(c, buf, mpi.OpSum, Override{Variant: DPML, Leaders: 1, Inter: plan.InterRing})
		lead := c.pos == 0
		switch {
		case err == nil:
			t.Error("the call succeeded without the second node")
		case lead && !errors.Is(err, shm.ErrTimeout) && !errors.Is(err, shm.ErrAborted):
			// Its own wait's timeout, or the abort word a rank of its
			// node raised when its wait for the leader timed out first.
			t.Errorf("leader: %v, want an error wrapping shm.ErrTimeout or shm.ErrAborted", err)
		case lead && !strings.Contains(err.Error(), "ring step 1 of 2"):
			t.Errorf("leader: %v, want the ring step named", err)
		case !lead && !errors.Is(err, shm.ErrTimeout) && !errors.Is(err, shm.ErrAborted):
			t.Errorf("rank %d: %v, want a timeout or an abort", w.Rank(), err)
		}
		t.Logf("rank %d: %v", w.Rank(), err)
		if err := w.Barrier(); err != nil {
			t.Fatal(err)
		}
	})
}
