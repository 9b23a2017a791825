package dpml

import (
	"cmp"
	"errors"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/costmodel/learn"
	"github.com/dpmlgo/dpml/internal/testkit/fakesharp"
	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/plan"
	"github.com/dpmlgo/dpml/sharp"
	"github.com/dpmlgo/dpml/shm"
)

// Offload tests. The multi-rank ones run on the EMULATED switch (the fake
// libsharp_coll.so of internal/testkit/fakesharp): they check that the offloaded
// inter-node step gives the host path's results and fails cleanly, not
// anything about SHArP's speed.

func TestOffloadSpecs(t *testing.T) {
	for spec, want := range map[string]Override{
		"dpml:intra=tree,offload=sharp": {Variant: DPML, Intra: IntraTree, Offload: plan.OffloadSharp},
		"dpml:l=2,offload=SHARP":        {Variant: DPML, Leaders: 2, Offload: plan.OffloadSharp},
		"auto:offload=host":             {Offload: plan.OffloadHost},
	} {
		o, err := ParseOverride(spec)
		if err != nil || o != want {
			t.Errorf("ParseOverride(%q) = %+v, %v; want %+v", spec, o, err, want)
		}
		if back, err := ParseOverride(o.Spec()); err != nil || back != o {
			t.Errorf("%q: Spec %q does not parse back: %+v, %v", spec, o.Spec(), back, err)
		}
	}
	if s := (Override{Variant: DPML, Leaders: 1, Offload: plan.OffloadSharp}).Spec(); s != "dpml:l=1,offload=sharp" {
		t.Errorf("Spec = %q", s)
	}
	for _, bad := range []string{"dpml:offload=auto", "dpml:offload=on", "dpml:offload=", "native:offload=sharp", "dpml:offload=sharp,offload=host"} {
		if o, err := ParseOverride(bad); err == nil {
			t.Errorf("ParseOverride(%q) accepted: %+v", bad, o)
		}
	}
	// A plan that ran offloaded says so, and its spec forces it again.
	p := Plan{Shape: plan.Shape{Variant: DPML, Leaders: 1, Pipeline: 1, Intra: IntraTree, Radix: 8, Offload: plan.OffloadSharp},
		Phases: phasesMultiNode, Count: 100, ElemSize: 4, Nodes: 2, PPN: 2, SegElems: 100, Segments: 1, Align: 16}
	if s := p.Spec(); s != "dpml:l=1,k=1,intra=tree,r=8,seg=400,offload=sharp" {
		t.Errorf("Plan.Spec = %q", s)
	}
	if !strings.Contains(p.String(), "in-network offload") {
		t.Errorf("plan drawing does not mention the offload:\n%s", p.String())
	}
}

// offloadComm is a Comm for the dispatch rules, without MPI: 2 nodes of 4
// ranks, a tree prepared (no segment behind it), an offload of A groups.
func offloadComm(a int, socket bool, caps sharp.Caps) *Comm {
	c := &Comm{}
	c.nodes, c.size, c.minPPN, c.ppn, c.segBudget, c.llcBytes = 2, 8, 4, 4, 512<<10, 32<<20
	c.treeBytes, c.treeRadix = 4<<10, 8
	c.trees[8][0] = &treeShape{depth: 1}
	c.off = &offload{mode: "libsharp", backend: "libsharp", leaders: a, socket: socket, bytes: 4 << 10, caps: caps}
	return c
}

// resolve is what allreduce does before executing: the dispatch rule,
// then the plan.
func resolve(t *testing.T, c *Comm, kind mpi.Kind, op mpi.Op, count int, o Override) Plan {
	t.Helper()
	p, err := c.plan(count, kind.Size(), c.routeOffload(kind, op, count, o))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOffloadDispatch pins the dispatch rules (the paper's: predefined
// ops and supported types, up to the threshold, node-level leaders at low
// ppn and socket-level at high ppn, everything else on the host).
func TestOffloadDispatch(t *testing.T) {
	caps := sharp.Caps{MaxPayload: 256, MaxOutstanding: 4}
	for _, k := range []mpi.Kind{mpi.KindInt32, mpi.KindInt64, mpi.KindFloat32, mpi.KindFloat64} {
		caps.Kinds |= 1 << uint(k)
	}
	for _, op := range []mpi.Op{mpi.OpSum, mpi.OpMin, mpi.OpMax, mpi.OpBand} {
		caps.Ops |= 1 << uint(op)
	}
	node := offloadComm(2, false, caps)
	socket := offloadComm(2, true, caps)
	i32, f64, c64 := mpi.KindInt32, mpi.KindFloat64, mpi.KindComplex64
	sh, host := plan.OffloadSharp, plan.OffloadHost
	for _, tc := range []struct {
		name    string
		c       *Comm
		kind    mpi.Kind
		op      mpi.Op
		count   int
		o       Override
		off     plan.Offload
		leaders int
		intra   Intra
	}{
		{"node-level: the tree's root offloads", node, i32, mpi.OpSum, 1000, Override{}, sh, 1, IntraTree},
		{"node-level: 1 element", node, f64, mpi.OpMax, 1, Override{}, sh, 1, IntraTree},
		{"socket-level: a leader per socket", socket, i32, mpi.OpSum, 1024, Override{}, sh, 2, IntraShm},
		{"over the threshold: host", node, i32, mpi.OpSum, 1025, Override{}, host, 0, 0},
		{"socket-level over the threshold (partitions would fit): host", socket, i32, mpi.OpSum, 1025, Override{}, host, 0, 0},
		{"unsupported op: host", node, i32, mpi.OpProd, 10, Override{}, host, 0, 0},
		{"unsupported type: host", node, c64, mpi.OpSum, 10, Override{}, host, 0, 0},
		{"bitwise op on an integer", node, i32, mpi.OpBand, 10, Override{}, sh, 1, IntraTree},
		{"forced host", node, i32, mpi.OpSum, 10, Override{Offload: host}, host, 0, 0},
		{"forced sharp, large: partition over the threshold", node, i32, mpi.OpSum, 16384, Override{Offload: sh}, host, 1, 0},
		{"forced sharp, l=2 partitions of 4 KiB", node, i32, mpi.OpSum, 2048, Override{Offload: sh, Leaders: 2}, sh, 2, IntraShm},
		{"forced sharp, more leaders than groups", node, i32, mpi.OpSum, 100, Override{Offload: sh, Leaders: 4}, host, 4, 0},
		{"forced sharp, pipelined: host", node, i32, mpi.OpSum, 100, Override{Offload: sh, Variant: Pipelined, Pipeline: 2}, host, 0, 0},
		{"forced sharp, unsupported op", node, i32, mpi.OpProd, 100, Override{Offload: sh}, host, 0, 0},
		{"forced transport kept", node, i32, mpi.OpSum, 100, Override{Intra: IntraShm}, sh, 1, IntraShm},
		{"forced native", node, i32, mpi.OpSum, 100, Override{Variant: Native}, plan.OffloadAuto, 0, 0},
	} {
		p := resolve(t, tc.c, tc.kind, tc.op, tc.count, tc.o)
		if p.Offload != tc.off || tc.leaders > 0 && p.Leaders != tc.leaders || tc.intra != 0 && p.Intra != tc.intra {
			t.Errorf("%s: plan %s (offload %v, l=%d, intra %v); want offload %v, l=%d, intra %v",
				tc.name, p.Spec(), p.Offload, p.Leaders, p.Intra, tc.off, tc.leaders, tc.intra)
		}
	}

	// One rank per node: native, unless the switches take the call (the
	// paper's largest gain: node level at ppn 1).
	alone := offloadComm(1, false, caps)
	alone.size, alone.minPPN, alone.ppn = 2, 1, 1
	if p := resolve(t, alone, i32, mpi.OpSum, 100, Override{}); p.Variant != DPML || p.Offload != sh || p.Leaders != 1 {
		t.Errorf("ppn 1, small: %s", p.Spec())
	}
	for _, c := range []struct {
		kind  mpi.Kind
		op    mpi.Op
		count int
		o     Override
	}{{i32, mpi.OpSum, 2000, Override{}}, {i32, mpi.OpProd, 10, Override{}}, {i32, mpi.OpSum, 10, Override{Offload: host}},
		{i32, mpi.OpSum, 10, Override{Offload: sh, Variant: Pipelined}}, {i32, mpi.OpSum, 2000, Override{Offload: sh}}} {
		if p := resolve(t, alone, c.kind, c.op, c.count, c.o); p.Variant != Native {
			t.Errorf("ppn 1, %v %d %+v: %s, want native", c.op, c.count, c.o, p.Spec())
		}
	}

	// SetOverride and the environment's settings count as forced.
	node.fixed = Override{Offload: host}
	if p := resolve(t, node, i32, mpi.OpSum, 10, Override{}); p.Offload != host {
		t.Errorf("SetOverride(offload=host): %v", p.Offload)
	}
	node.fixed = Override{}
	node.env = Override{Leaders: 3}
	if p := resolve(t, node, i32, mpi.OpSum, 10, Override{}); p.Offload != host || p.Leaders != 3 {
		t.Errorf("DPML_LEADERS=3 with two groups: %s", p.Spec())
	}
	node.env = Override{}

	// Without an offload, plans that ask for nothing say nothing (specs
	// unchanged), and forcing one runs host.
	none := offloadComm(1, false, caps)
	none.off = nil
	if p := resolve(t, none, i32, mpi.OpSum, 10, Override{}); p.Offload != plan.OffloadAuto || strings.Contains(p.Spec(), "offload") {
		t.Errorf("no offload: %s", p.Spec())
	}
	if p := resolve(t, none, i32, mpi.OpSum, 10, Override{Offload: sh}); p.Offload != host {
		t.Errorf("no offload, forced: %v", p.Offload)
	}
}

// offloadCase runs tc on d's communicator, checks the result against the
// scalar oracle in the engine's order (and the same bits on every rank),
// that the plan offloaded as wanted, and, when it did, that the same plan
// shape on the host path gives the same bits.
func offloadCase[T mpi.Number](t *testing.T, d world, w *mpi.Comm, tc testCase, want plan.Offload, leaders int) {
	t.Helper()
	ops := d.c.Offload().Ops
	check[T](t, d, w, tc)
	p := d.c.LastPlan()
	// The work went through the switch (on leaders), or not at all.
	lead := d.c.pos < p.activeLeaders(p.SegElems)
	if did := d.c.Offload().Ops > ops; did != (lead && p.Offload == plan.OffloadSharp) {
		t.Fatalf("%T %v: plan %s, leader %v: the group completed %d operations", *new(T), tc, p.Spec(), lead, d.c.Offload().Ops-ops)
	}
	// The host path may be the MPI library's allreduce (the engine's
	// choice for calls the offload does not take).
	host := want == plan.OffloadHost && p.Variant == Native
	if p.Offload != want && !host || leaders > 0 && p.Leaders != leaders {
		t.Fatalf("%T %v: ran %s, want offload %v with l=%d", *new(T), tc, p.Spec(), want, leaders)
	}
	if want != plan.OffloadSharp {
		return
	}
	send := make([]T, tc.count)
	for i := range send {
		send[i] = input[T](d.rank, i, tc.seed, tc.exact, tc.op)
	}
	off, hst := make([]T, tc.count), make([]T, tc.count)
	o := Override(p.Shape)
	if err := AllreduceWith(d.c, send, off, tc.op, o); err != nil {
		t.Fatal(err)
	}
	o.Offload = plan.OffloadHost
	ops = d.c.Offload().Ops
	if err := AllreduceWith(d.c, send, hst, tc.op, o); err != nil {
		t.Fatal(err)
	}
	if d.c.Offload().Ops != ops {
		t.Fatalf("the host twin of %s went through the offload", p.Spec())
	}
	// One rank per node: the host path is the MPI library's allreduce.
	if q := d.c.LastPlan(); (q.Offload != plan.OffloadHost || q.Leaders != p.Leaders || q.Intra != p.Intra) &&
		!(d.c.nodes == d.c.size && q.Variant == Native) {
		t.Fatalf("host twin of %s ran %s", p.Spec(), q.Spec())
	}
	for i := range off {
		if !sameBits(off[i], hst[i]) {
			t.Fatalf("%T %v: element %d offloaded %v, host path %v", *new(T), tc, i, off[i], hst[i])
		}
	}
}

// offloadOps runs every op of T: supported ones offloaded (want), the
// others (prod; complex types) on the host.
func offloadOps[T mpi.Number](t *testing.T, d world, w *mpi.Comm, leaders int) {
	caps := d.c.Offload().Caps
	kind := mpi.KindOf[T]()
	for _, op := range mpi.Ops() {
		if mpi.CheckOp[T](op) != nil {
			continue
		}
		want := plan.OffloadSharp
		if caps.Supports(kind, op) != nil {
			want = plan.OffloadHost
		}
		// Random floats where the order matters (checked bit for bit: two
		// nodes, one commutative inter-node step), small integers elsewhere.
		exact := !kind.IsFloat() || op != mpi.OpSum
		for _, n := range []int{1, 13, 4096 / kind.Size()} {
			l := leaders
			if n*kind.Size() <= alignBytes || want == plan.OffloadHost {
				l = 0 // one active leader, or not the offload's shape
			}
			offloadCase[T](t, d, w, testCase{count: n, op: op, exact: exact, seed: uint64(n + int(op))}, want, l)
		}
	}
}

func offloadAll(t *testing.T, d world, w *mpi.Comm, leaders int) {
	offloadOps[int8](t, d, w, leaders)
	offloadOps[int16](t, d, w, leaders)
	offloadOps[int32](t, d, w, leaders)
	offloadOps[int64](t, d, w, leaders)
	offloadOps[uint8](t, d, w, leaders)
	offloadOps[uint16](t, d, w, leaders)
	offloadOps[uint32](t, d, w, leaders)
	offloadOps[uint64](t, d, w, leaders)
	offloadOps[float32](t, d, w, leaders)
	offloadOps[float64](t, d, w, leaders)
	offloadOps[complex64](t, d, w, leaders)
	offloadOps[complex128](t, d, w, leaders)
}

// TestOffloadEmulated: 2 fake nodes x 2 ranks, libsharp on the emulated
// switch (payload 256 B per operation, so a 4 KiB call is 16 operations,
// 4 in flight). Node level (one leader per node, through the tree) and
// socket level (two leaders per node standing in for two sockets: this
// host has one) give, for every type and op the switch takes, the oracle's
// bits and the host path's bits; the rest runs on the host. Then the
// fallbacks: a payload over the threshold, an unsupported op, and the
// library absent (everywhere, or on one node only).
func TestOffloadEmulated(t *testing.T) {
	lib := fakesharp.ForTest(t)
	t.Setenv(config.Offload, "libsharp")
	// The dispatch rule decides calls that force nothing only without a
	// tuner (with one, the offload is among its arms: TestOffloadTuned).
	t.Setenv(config.Tuner, "static")
	t.Setenv(config.FakePayload, "256")
	mpitest.Run(t, 2, 2, func(t *testing.T, w *mpi.Comm) {
		for _, level := range []struct {
			name    string
			setting string
			leaders int
		}{{"node level", "node", 1}, {"socket level", "2", 2}} {
			os.Setenv(config.OffloadLead, level.setting)
			c, err := New(w, WithTimeout(time.Minute))
			if err != nil {
				t.Fatalf("%s: %v", level.name, err)
			}
			info := c.Offload()
			if info.Backend != "libsharp" || !info.Emulated || info.Leaders != level.leaders || info.Socket != (level.leaders > 1) ||
				info.Caps.MaxPayload != 256 || info.Caps.MaxOutstanding != 4 {
				t.Fatalf("%s: offload %v", level.name, info)
			}
			if !strings.Contains(info.String(), "EMULATED") {
				t.Errorf("the offload's description does not say emulated: %s", info)
			}
			d := describe(t, c, w)
			offloadAll(t, d, w, level.leaders)

			// Fallbacks on the host path, results still right.
			over := testCase{count: 2*4096/4 + 16, op: mpi.OpSum, exact: true, seed: 7} // over 4 KiB per leader
			offloadCase[int32](t, d, w, over, plan.OffloadHost, 0)
			over.o = Override{Offload: plan.OffloadSharp, Leaders: level.leaders}
			offloadCase[int32](t, d, w, over, plan.OffloadHost, 0) // a partition over DPML_OFFLOAD_BYTES
			offloadCase[int32](t, d, w, testCase{count: 100, op: mpi.OpProd, exact: true, seed: 3,
				o: Override{Offload: plan.OffloadSharp}}, plan.OffloadHost, 0)
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		}
		os.Unsetenv(config.OffloadLead)

		// The library absent everywhere, then on the second node only:
		// New succeeds everywhere with a warning, every call is host.
		for _, where := range []string{"everywhere", "node 2"} {
			bad := "/nonexistent/libsharp_coll.so"
			if where == "node 2" && w.Rank() < 2 {
				bad = lib
			}
			os.Setenv(config.SharpLib, bad)
			c, err := New(w)
			if err != nil {
				t.Fatalf("library absent %s: New: %v", where, err)
			}
			if info := c.Offload(); info.Backend != "" || !strings.Contains(info.Reason, "DPML_OFFLOAD=libsharp") ||
				!strings.Contains(info.Reason, "dlopen /nonexistent") {
				t.Errorf("library absent %s: offload %v", where, info)
			}
			if !slices.ContainsFunc(c.warnings, func(s string) bool { return strings.Contains(s, "sharp: offload unavailable") }) {
				t.Errorf("library absent %s: no warning in %v", where, c.warnings)
			}
			d := describe(t, c, w)
			offloadCase[float64](t, d, w, testCase{count: 100, op: mpi.OpSum, seed: 1}, plan.OffloadAuto, 0)
			offloadCase[float64](t, d, w, testCase{count: 100, op: mpi.OpSum, seed: 1, o: Override{Offload: plan.OffloadSharp}}, plan.OffloadHost, 0)
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		}
		os.Setenv(config.SharpLib, lib)

		// The offload's settings must agree: a difference fails New on
		// every rank, naming the variable.
		if w.Rank() >= 2 {
			os.Setenv(config.OffloadBytes, "2K")
		}
		if c, err := New(w); !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), config.OffloadBytes) {
			t.Errorf("DPML_OFFLOAD_BYTES 4K vs 2K: New = %v, %v", c, err)
		}
		os.Unsetenv(config.OffloadBytes)

		// Every rank loaded the library (socket level: every rank led);
		// once every group is closed no switch process maps it any more.
		if err := w.Barrier(); err != nil {
			t.Fatal(err)
		}
		if n := waitMappers(lib, w.Size()); n != w.Size() {
			t.Errorf("%d processes map the emulated library after Close, want the %d ranks: a switch outlived its group", n, w.Size())
		}
		if left := shmEntries(t, "dpml-"+os.Getenv(config.Job)); len(left) > 0 {
			t.Errorf("left in /dev/shm: %v", left)
		}
	})
	// One rank per node: the offload instead of the native allreduce.
	mpitest.Run(t, 3, 1, func(t *testing.T, w *mpi.Comm) {
		c, err := New(w, WithTimeout(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		d := describe(t, c, w)
		for _, n := range []int{1, 100, 0} { // 0: the whole 4 KiB
			offloadCase[int32](t, d, w, testCase{count: cmp.Or(n, 1024), op: mpi.OpSum, exact: true, seed: uint64(n)}, plan.OffloadSharp, 1)
			offloadCase[float64](t, d, w, testCase{count: cmp.Or(n, 512), op: mpi.OpMax, seed: uint64(n)}, plan.OffloadSharp, 1)
			offloadCase[uint16](t, d, w, testCase{count: cmp.Or(n, 2048), op: mpi.OpBxor, exact: true, seed: uint64(n)}, plan.OffloadSharp, 1)
		}
		// Over the threshold, or prod: the MPI library's allreduce.
		for _, tc := range []testCase{{count: 2048, op: mpi.OpSum, exact: true, seed: 1}, {count: 10, op: mpi.OpProd, exact: true, seed: 2}} {
			offloadCase[int32](t, d, w, tc, plan.OffloadAuto, 0)
			if p := c.LastPlan(); p.Variant != Native {
				t.Errorf("%v: ran %s, want native", tc, p.Spec())
			}
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		// A communicator on one node has no inter-node step: no group.
		solo, err := w.Split(w.Rank(), 0)
		if err != nil {
			t.Fatal(err)
		}
		c, err = New(solo)
		if err != nil {
			t.Fatal(err)
		}
		if info := c.Offload(); info.Backend != "" || !strings.Contains(info.Reason, "one node") {
			t.Errorf("one-node communicator: offload %v", info)
		}
		if err := errors.Join(c.Close(), solo.Free()); err != nil {
			t.Fatal(err)
		}
	})
	checkNoSwitch(t, lib)
}

// TestOffloadSwitchKilled: the emulated switch dies in the middle of a
// call (DPML_FAKESHARP_KILL_AFTER). Every rank's call fails within
// DPML_TIMEOUT (the leaders' waits for the switch; the other ranks wake on
// their leader's abort), none hangs, and nothing is left in /dev/shm.
//
// Mutation check: with the offload's wait given a zero shm.Waiter (the
// 60 s default) instead of &c.wait in offload.go, the leaders fail after
// a minute and the test fails.
func TestOffloadSwitchKilled(t *testing.T) {
	lib := fakesharp.ForTest(t)
	t.Setenv(config.Offload, "libsharp")
	t.Setenv(config.Tuner, "static") // the dispatch rule offloads every call (see TestOffloadEmulated)
	t.Setenv(config.FakeKill, "6")   // 4 operations per 4 KiB call: dies in the second
	t.Setenv(config.Timeout, "3s")
	mpitest.Run(t, 2, 2, func(t *testing.T, w *mpi.Comm) {
		c, err := New(w)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]float32, 1024)
		if err := AllreduceInPlace(c, buf, mpi.OpSum); err != nil {
			t.Fatalf("the call before the kill: %v", err)
		}
		if c.LastPlan().Offload != plan.OffloadSharp {
			t.Fatalf("not offloaded: %s", c.LastPlan().Spec())
		}
		t0 := time.Now()
		err = AllreduceInPlace(c, buf, mpi.OpSum)
		took := time.Since(t0)
		if err == nil {
			t.Fatal("the call during which the switch died succeeded")
		}
		// DPML_TIMEOUT bounded the waits, not the 60 s default. The
		// only clock bound of the test tells those two apart, nothing
		// about speed: a wait that ignored the setting cannot fail before
		// the default has passed, and the 3 s wait would have to be late
		// by most of a minute to reach it (a fixed 15 s was a guess that
		// an oversubscribed machine could outrun).
		if c.wait.Timeout != 3*time.Second {
			t.Errorf("the engine's wait timeout is %v with DPML_TIMEOUT=3s", c.wait.Timeout)
		}
		if dflt := defaultTimeout(t); took >= dflt {
			t.Errorf("the failure took %v with DPML_TIMEOUT=3s: a wait ran to the default timeout of %v", took, dflt)
		}
		lead := c.pos == 0
		if lead && !errors.Is(err, sharp.ErrFailed) || !lead && !errors.Is(err, shm.ErrAborted) && !errors.Is(err, shm.ErrTimeout) {
			t.Errorf("rank %d (leader %v): %v", w.Rank(), lead, err)
		}
		t.Logf("rank %d failed after %v: %v", w.Rank(), took.Round(time.Millisecond), err)
		if err := c.Close(); err != nil {
			t.Errorf("Close after the failure: %v", err)
		}
		if left := shmEntries(t, "dpml-"+os.Getenv(config.Job)); len(left) > 0 {
			t.Errorf("left in /dev/shm: %v", left)
		}
	})
	checkNoSwitch(t, lib)
}

// TestOffloadMemberKilled: the leader of the second node is killed
// (SIGKILL) in an offloaded call. The job ends instead of hanging (Open
// MPI stops the other ranks when one dies; without that they would fail
// within DPML_TIMEOUT, as in TestOffloadSwitchKilled), the segments were
// unlinked before the kill, and the emulated switch process does not
// outlive its members.
func TestOffloadMemberKilled(t *testing.T) {
	if mpitest.InRank() {
		t.Skip("parent-only test")
	}
	lib := fakesharp.ForTest(t)
	start := time.Now()
	rep, err := mpitest.Exec(mpitest.Options{
		Test:    "TestOffloadMemberKilledChild",
		Layout:  mpitest.Even(2, 2),
		Timeout: 90 * time.Second,
		Env: []string{"DPML_TEST_OFFLOAD_KILL=1", config.Timeout + "=3s", config.Offload + "=libsharp",
			config.SharpLib + "=" + lib},
	})
	if err == nil {
		t.Fatalf("the job with a killed leader succeeded:\n%v", rep)
	}
	if rep != nil && rep.TimedOut {
		t.Fatalf("the job hung until the harness timeout: %v", err)
	}
	t.Logf("job ended in %v: %v", time.Since(start).Round(time.Millisecond), err)
	out := ""
	if rep != nil {
		out = rep.AllOutput()
	}
	if strings.Count(out, "segments unlinked before the kill") != 4 {
		t.Fatalf("the ranks did not confirm their segments were unlinked:\n%s", out)
	}
	checkNoSwitch(t, lib)
}

func TestOffloadMemberKilledChild(t *testing.T) {
	if os.Getenv("DPML_TEST_OFFLOAD_KILL") == "" {
		t.Skip("run by TestOffloadMemberKilled")
	}
	mpitest.Run(t, 2, 2, func(t *testing.T, w *mpi.Comm) {
		c, err := New(w)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]int64, 64)
		if err := AllreduceInPlace(c, buf, mpi.OpSum); err != nil || c.LastPlan().Offload != plan.OffloadSharp {
			t.Fatalf("first call: %v, plan %s", err, c.LastPlan().Spec())
		}
		if left := shmEntries(t, "dpml-"+os.Getenv(config.Job)); len(left) > 0 {
			t.Fatalf("segments still in /dev/shm: %v", left)
		}
		t.Log("segments unlinked before the kill")
		victim := c.nodeIdx == 1 && c.pos == 0 // the second node's leader
		testHookCopiedIn = func(*Comm, int) {
			if victim {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}
		err = AllreduceInPlace(c, buf, mpi.OpSum)
		testHookCopiedIn = nil
		if err == nil {
			t.Fatal("allreduce with a dead leader succeeded")
		}
		t.Logf("rank %d: %v", w.Rank(), err)
		t.Fail()
	})
}

// waitMappers waits up to a minute for the number of processes mapping
// path to drop to want, and returns the last count. The switches look at
// their members every 10 ms and exit at once, but an oversubscribed
// machine may run them much later than that (a one-second wait was a
// guess it could outrun).
func waitMappers(path string, want int) int {
	n := 0
	for end := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if n = len(fakesharp.Mappers(path)) + 1; n <= want || !time.Now().Before(end) { // + this process
			return n
		}
	}
}

// checkNoSwitch is fakesharp.CheckNoSwitch, which allows the switches one
// second to exit after the job, once they have had up to a minute (see
// waitMappers).
func checkNoSwitch(t *testing.T, lib string) {
	t.Helper()
	for end := time.Now().Add(time.Minute); !mpitest.InRank() && len(fakesharp.Mappers(lib)) > 0 && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
	}
	fakesharp.CheckNoSwitch(t, lib)
}

// defaultTimeout is DPML_TIMEOUT's default, or shm.Waiter's if shorter:
// what a wait that ignored DPML_TIMEOUT would run to.
func defaultTimeout(t *testing.T) time.Duration {
	t.Helper()
	v, err := config.Lookup(config.Timeout)
	if err != nil {
		t.Fatal(err)
	}
	d, err := time.ParseDuration(v.Default)
	if err != nil {
		t.Fatalf("%s's default %q: %v", config.Timeout, v.Default, err)
	}
	return min(d, shm.DefaultTimeout)
}

// TestOffloadTuned: with the tuner on, the offload is among a key's arms
// (twins of the tree's arms at node level). Plans get synthetic costs
// (testHookPlanCost: offloaded 3 ms, host 15 ms, the MPI library 27 ms), so
// calls that force nothing must settle on an offload arm for sizes the
// switch takes, and give the oracle's results all along; an op of the
// same key that the switch does not take (prod) runs the host twin. The
// learner reads the clock, so the machine's own time adds to every
// sample (more for the offload, whose emulated switch is one more
// process to schedule): 12 ms between the arms, not 4, keep an
// oversubscribed machine's noise from reordering them (see
// TestTunerIgnoresSkew).
//
// Mutation check: without the offload arms (setupTuner leaving
// cfg.OffloadBytes at 0) the keys settle on host plans and the test fails.
func TestOffloadTuned(t *testing.T) {
	fakesharp.ForTest(t)
	t.Setenv(config.Offload, "libsharp")
	t.Setenv(config.Tuner, "auto")
	mpitest.Run(t, 2, 2, func(t *testing.T, w *mpi.Comm) {
		testHookPlanCost = func(p *Plan) time.Duration {
			switch {
			case p.Variant == Native:
				return 27 * time.Millisecond
			case p.Offload == plan.OffloadSharp:
				return 3 * time.Millisecond
			}
			return 15 * time.Millisecond
		}
		defer func() { testHookPlanCost = nil }()
		c, err := New(w, WithTimeout(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if c.Offload().Backend != "libsharp" {
			t.Fatalf("no offload attached: %v", c.Offload())
		}
		d := describe(t, c, w)
		for _, n := range []int{2, 64} { // int32: 8 B and 256 B buckets
			key := c.tunerKey(mpi.KindInt32, mpi.OpSum, n)
			for i := 0; ; i++ {
				if in, _ := c.Tuner().Info(key); in.State == learn.Frozen {
					break
				}
				if i == 200 {
					t.Fatalf("%d int32 sum: not settled after %d calls", n, i)
				}
				checkAnyType(t, d, w, testCase{count: n, op: mpi.OpSum, exact: true, seed: uint64(i)})
			}
			if in, _ := c.Tuner().Info(key); in.Arm.Offload != plan.OffloadSharp {
				t.Errorf("%d int32 sum: settled on %v, want an offload arm (3 ms against 15 and 27)", n, in.Arm)
			}
			checkAnyType(t, d, w, testCase{count: n, op: mpi.OpSum, exact: true, seed: 99})
			if p := c.LastPlan(); p.Offload != plan.OffloadSharp {
				t.Errorf("%d int32 sum after settling: ran %v, want it offloaded", n, p.Spec())
			}
			// prod shares the key (arithmetic ops) but the switch does
			// not take it: the host twin runs.
			for i := range 5 {
				checkAnyType(t, d, w, testCase{count: n, op: mpi.OpProd, exact: true, seed: uint64(i)})
				if p := c.LastPlan(); p.Offload == plan.OffloadSharp {
					t.Fatalf("%d int32 prod: ran %v offloaded, which the switch does not take", n, p.Spec())
				}
			}
		}
	})
}
