package dpml

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/costmodel/learn"
	"github.com/dpmlgo/dpml/leaders"
	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/shm"
)

// BenchmarkSmallPath is the engine's own per-call work on the small-message
// path, without MPI and without waiting: one process plays the root of a
// 2-rank node tree whose other rank's partial is always ready (its flag is
// raised before each call), so the call runs planning, the executor, the
// fold, the release and the copy-out, and never waits. What it measures
// lies on the critical path of every small call (go test -bench SmallPath
// -cpuprofile).
func BenchmarkSmallPath(b *testing.B) {
	for _, n := range []int{1, 7} {
		b.Run(fmt.Sprintf("%dxfloat64", n), func(b *testing.B) {
			c, done := stubNodeComm(b, 2)
			defer done()
			send, recv := make([]float64, n), make([]float64, n)
			for i := 0; i < b.N; i++ {
				g := c.gen + 1
				c.seg.inSeq[1].Store(g) // the other rank's partial of g is "ready"
				if err := AllreduceWith(c, send, recv, mpi.OpSum, Override{Variant: DPML, Intra: IntraTree, Radix: 4}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// stubNodeComm is a Comm of one node of ppn ranks, this process local rank
// 0, with a real node segment and no MPI: enough for single-node plans
// whose waits are satisfied by hand.
func stubNodeComm(tb testing.TB, ppn int) (*Comm, func()) {
	tb.Helper()
	const slot = 64 << 10
	size, _ := segmentLayout(ppn, slot)
	name, err := shm.Name("dpmlbench")
	if err != nil {
		tb.Fatal(err)
	}
	mem, err := shm.Create(name, size)
	if err != nil {
		tb.Fatal(err)
	}
	seg, err := viewSegment(mem, ppn, slot)
	if err != nil {
		tb.Fatal(err)
	}
	places := make([]leaders.Place, ppn)
	for i := range places {
		places[i] = leaders.Place{CPUs: []int{i}, Primary: i, Core: i, Socket: 0, NUMA: 0}
	}
	c := &Comm{topology: topology{nodes: 1, size: ppn, ppn: ppn, minPPN: ppn, places: places, llcBytes: 32 << 20, leaderOrder: []int{0, 1}},
		nodeView: nodeView{seg: seg, abort: seg.abort, segBudget: slot}}
	c.transports = [numIntra]transport{IntraShm: shmCopies{}, IntraCMA: cmaAttach{}, IntraTree: treeReduce{}}
	c.wait.Abort = c.abort
	c.wait.NoSleep = true
	c.waitPoll = c.wait
	c.scratchSrcs = make([]unsafe.Pointer, ppn)
	c.treeRadix, c.treeBytes = 4, 16<<10
	if err := c.setupTree(false); err != nil {
		tb.Fatal(err)
	}
	return c, func() { c.freeFused(); _ = mem.Close() }
}

// BenchmarkSmallPathTuned is BenchmarkSmallPath through the tuner (model
// mode: it chooses every call's arm, records nothing), for the cost of the
// tuned path's bookkeeping.
func BenchmarkSmallPathTuned(b *testing.B) {
	c, done := stubNodeComm(b, 2)
	defer done()
	cfg := learn.DefaultConfig()
	cfg.Mode = learn.ModeModel
	tu, err := learn.NewTunerFromTable(cfg, costmodel.DefaultTable())
	if err != nil {
		b.Fatal(err)
	}
	c.tuner = tu
	send, recv := make([]float64, 1), make([]float64, 1)
	for i := 0; i < b.N; i++ {
		g := c.gen + 1
		c.seg.inSeq[1].Store(g)
		if err := Allreduce(c, send, recv, mpi.OpSum); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("plan: %v", c.LastPlan().Shape)
}

// TestTransitionCost: what a timed call of libdpml.so's C layer is charged
// for the cgo transitions its plan pays in the steady state: nothing for a
// plan the C layer runs itself (the fused tree on one node, the MPI
// library's allreduce), whose trip is the tuner's overhead instead, twice
// the measured entry transition for the rest, nothing for an implausible
// reading.
func TestTransitionCost(t *testing.T) {
	c, done := stubNodeComm(t, 2)
	defer done()
	c.fz.f = c.ct // DPML_FUSED on
	plan := func(count int, o Override) *Plan {
		pp, err := c.planFor(count, 8, o)
		if err != nil {
			t.Fatal(err)
		}
		p := pp.p
		return &p
	}
	tree := plan(1, Override{Variant: DPML, Intra: IntraTree, Radix: 4})
	copies := plan(1, Override{Variant: DPML, Intra: IntraShm, Leaders: 1})
	trees := plan(1, Override{Variant: DPML, Intra: IntraTree, Radix: 4, Leaders: 2})
	native := plan(1, Override{Variant: Native})
	const us = int64(1000)
	for _, tc := range []struct {
		name     string
		p        *Plan
		op       mpi.Op
		ago      int64 // the C layer entered this long before now
		min, max int64 // the entry's shift
		tuner    bool  // the trip is the tuner's overhead instead (the C layer runs the plan untimed)
	}{
		{"fused tree", tree, mpi.OpSum, 2 * us, 0, 0, true},
		{"native", native, mpi.OpSum, 2 * us, 0, 0, true},
		{"copies", copies, mpi.OpSum, 2 * us, 4 * us, 4*us + 2*maxTransition, false},
		{"two trees (the executor's steps)", trees, mpi.OpSum, 2 * us, 4 * us, 4*us + 2*maxTransition, false},
		{"copies, clock in the future", copies, mpi.OpSum, -5 * us, 0, 0, false},
		{"copies, a second ago", copies, mpi.OpSum, 1_000_000 * us, 0, 0, false},
		{"fused tree, a second ago", tree, mpi.OpSum, 1_000_000 * us, 0, 0, false},
	} {
		got, ovh := c.trip(tc.p, mpi.KindFloat64, tc.op, c.transition(nanotime()-tc.ago))
		if got < tc.min || got > tc.max {
			t.Errorf("%s: charged %d ns, want %d..%d", tc.name, got, tc.min, tc.max)
		}
		if lo := 4 * us; tc.tuner && (ovh < lo || ovh > lo+2*maxTransition) || !tc.tuner && ovh != 0 {
			t.Errorf("%s: %d ns of tuner overhead, want %v", tc.name, ovh, tc.tuner)
		}
	}
}

// TestReportOnce: DPML_VERBOSE=1 prints a plan once per size class and
// shape, whatever the call's count inside the class (report keeps a
// struct key, not a string, since every Go-routed call comes to it).
// Mutation check: a key without the size class prints one plan and the
// test fails.
func TestReportOnce(t *testing.T) {
	c, done := stubNodeComm(t, 2)
	defer done()
	c.verbose = 1
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	for _, n := range []int{1, 1, 2, 3, 128, 100, 1} {
		pp, err := c.planFor(n, 8, Override{Variant: DPML, Intra: IntraShm, Leaders: 1})
		if err != nil {
			os.Stderr = stderr
			t.Fatal(err)
		}
		c.report(pp.p)
	}
	os.Stderr = stderr
	w.Close()
	out, _ := io.ReadAll(r)
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "dpml: ") {
			lines = append(lines, l)
		}
	}
	// Size classes: 8 B (1), 16 B (2), 24 B (3, class of 16), 1 KiB (128),
	// 800 B (100, class of 512).
	if len(lines) != 4 {
		t.Errorf("printed %d plans, want 4 (one per size class):\n%s", len(lines), out)
	}
}
