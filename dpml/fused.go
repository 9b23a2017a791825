package dpml

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/costmodel/learn"
	"github.com/dpmlgo/dpml/dpml/internal/fused"
	"github.com/dpmlgo/dpml/internal/runtime/dropinhook"
	"github.com/dpmlgo/dpml/internal/runtime/gosched"
	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/plan"
	"github.com/dpmlgo/dpml/shm"
)

// The fused tree call (internal/fused: fused.h, fused.c): plans "one
// reduction tree, one segment" of at most fusedMaxBytes run as one C
// routine, waits included, rather than as the executor's steps.
//
//	Go caller       allreduce -> executePlan -> one cgo call (one node), or
//	                up (cgo), the root's inter-node allreduce, down (cgo);
//	                the calls the engine cleared go to executePlan
//	                directly (goClearance)
//	C caller        MPI_Allreduce (dropin.c) -> dpml_fused_call directly,
//	(libdpml.so)    or up, the root's PMPI_Allreduce on the leader
//	                communicator, down, for the calls the engine cleared
//	                (grantFused); the rest through Go as above
//
// Why: on the device a C program's 8-byte call through libdpml.so spent
// 0.5-0.6 us of about 2 us outside the tree's own work, in the two cgo
// transitions and the engine's per-call bookkeeping. The routine is no
// second tree: it folds with the C steps the executor's tree transport
// calls (tree.go: dpml_tree_step, dpml_tree_fold, dpml_tree_result) over
// the same lines and generations, and only its wait loop is its own,
// since it runs without Go: it follows shm.Waiter's spin, timeout and
// abort word and shm.DefaultSchedule's back-off rounds, which setupTree
// hands it (dpml_wait_step decides each round as shm.Schedule.Step
// does). So either path may run any call, with the same bits.
// DPML_FUSED=false sends these plans through the executor's steps (Go
// waits, one cgo call per fold): the tests compare the two call paths.
//
// The clearance: after each call it runs, the engine tells the drop-in how
// many of the next calls of exactly that (count, type, op) may run in C
// (the fused tree on one node, or the MPI library's allreduce when that is
// the plan, which the drop-in then calls itself):
// on one node or several (fusedState gives the C layer the leader
// communicator), all of them for a plan that is fixed (no tuner, or DPML_TUNER=model, or
// SetOverride), and for a tuned key that has settled, the calls before its
// next stride sample (learn.KeyState.Untimed): the learner needs to see
// those neither timed nor one by one; and, unless a commit step holds the
// learner, its next stride samples too, up to the one that fills the
// learner's batch (learn.KeyState.Samples), which the drop-in stamps
// (fused.h, smp_n): the engine is then entered once for several samples.
// The engine takes the count and the
// generation back at its next call (takeBack) and credits the learner
// (KeyState.Skip), so the learner's state is what it would have been had
// every call come through Go. Every rank clears the same calls: the budget
// comes from the replicated learner state and the call's arguments, which
// MPI requires to be equal.

// fusedMaxBytes bounds the fused calls. Above it the tree is no plan the
// learner should pick on the machines measured (1x16: copies l = 8-16
// beat the fused tree at 4 KiB, 6.2 against 8.9 us), and a fused arm,
// whose samples are not charged for the cgo transitions (transition),
// was picked there all the same: the learner's cost rule undervalues a
// tree's back-to-back period as messages grow. Bounded at 1 KiB, auto's
// geometric mean over 4 B-64 KiB was 1.07 of the best fixed plan against
// 1.10 at 4 KiB.
const fusedMaxBytes = 1 << 10

// maxGrant is the clearance of a fixed plan: every later call of the key,
// in practice (the engine renews it at every call it sees).
const maxGrant = 1 << 30

// fusedOK[kind][op]: the C code folds this pair (every pair with a kernel:
// TestTreeFoldsEveryKernel).
var fusedOK [mpi.KindComplex128 + 1][mpi.OpBxor + 1]bool

func init() {
	for k := range fusedOK {
		for o := range fusedOK[k] {
			fusedOK[k][o] = fused.Supports(k, o)
		}
	}
	dropinhook.FusedState = func(c any) unsafe.Pointer { return c.(*Comm).fusedState() }
	dropinhook.FusedFailed = func(c any, rc int) error { return c.(*Comm).fusedFailed(rc) }
}

// fusedView is a communicator's fused-call state.
type fusedView struct {
	// f is the C state (the tree's, c.ct) when DPML_FUSED is on, nil
	// when it is off: no call is fused and libdpml.so gets no state.
	f *fused.State
	// granted: the drop-in's clearance is for a tuned key, whose learner
	// takeBack credits. block: the clearance is one block of the key's
	// confirmation, of arm blockArm (learn.KeyState.Block), which the
	// drop-in times and takeBack reports; blockCalls counts such calls
	// (tests check the path ran).
	granted    bool
	commitDue  bool // the tuner's commit step is due (settleClear)
	block      bool
	blockArm   costmodel.Arm
	blockCalls uint64
	// sampled: the clearance also covers the key's next stride samples
	// (learn.KeyState.Samples: after smpGap calls, one in smpStride),
	// which the drop-in stamps and takeBack records; sampleCalls counts
	// them (tests check the path ran).
	sampled           bool
	smpGap, smpStride int
	sampleCalls       uint64
	calls             uint64 // fused calls so far (the drop-in's included at takeBack): tests check the path ran
	// foreign: libdpml.so's C layer holds f (fusedState) and follows its
	// clearance; only then does a call pay for the C clearance's
	// bookkeeping (takeBack, the entry stamp, grantFused). Go callers
	// follow their own (clear).
	foreign bool
	// clear is the same clearance for Go callers (goClearance);
	// clearedCalls counts the calls it served (tests check the path ran).
	clear        goClearance
	clearedCalls uint64
	// blk: a confirmation block's stamps, call by call (CLOCK_MONOTONIC,
	// ns), whether the drop-in or a Go clearance ran it (recordBlock).
	blk blockStamps
	// parked: the drop-in's parked clearances (parked.go).
	parked parkedView
}

// blockStamps holds a confirmation block's entry and exit stamps, and the
// same on the learner's clock, in arrays so that no call allocates.
type blockStamps struct {
	entry, exit [fused.MaxBlock]int64
	es, xs      [fused.MaxBlock]float64
}

// goClearance is the drop-in's clearance (see the top of this file) kept
// in Go for Go callers: the next n calls of dpml.Allreduce with exactly
// this (count, kind, op) run plan pp directly (the fused tree, or the MPI
// library's allreduce), without the engine's per-call work (the tuner's
// key, its next arm, the plan's memo, the call's record). On the device
// (nvidia-h100-x1, 1x16, b2b) a Go program's settled 4-256 byte calls ran
// 1.4-1.7 times as long as the C client's with libdpml.so, whose cleared
// calls skip all of it. The engine credits the learner at its next call
// (Skip), as it does for the drop-in's calls, so the learner's state is
// what it would have been; every rank clears the same calls.
type goClearance struct {
	n     int64 // calls still cleared
	ran   int64 // cleared calls run since the engine's last call
	count int
	kind  mpi.Kind
	op    mpi.Op
	pp    *prepared // in c.memo, unchanged until the engine's next call
	kern  kernel
	tuned bool // credit the learner's key (keyMemo)
	// ft: the C view of the plan's tree when the plan is a fused tree on
	// one node; runCleared then calls it without executePlan's dispatch.
	ft *fused.Tree
	// block: the clearance is one block of the key's confirmation, of
	// arm (learn.KeyState.Block), as for libdpml.so's C layer
	// (grantFused): runCleared reads the clock before and after each of
	// its calls (fusedView.blk), and settleClear reports them.
	block bool
	arm   costmodel.Arm
}

// runCleared runs a call the Go clearance covers: the arguments match
// (count, kind, op; no override). ok false: not cleared, the engine must
// run it (the clearance is then settled first: settleClear).
func runCleared[T mpi.Number](c *Comm, send, recv []T, op mpi.Op, o Override) (ok bool, err error) {
	g := &c.fz.clear
	if g.n <= 0 || g.count != len(send) || g.op != op || g.kind != mpi.KindOf[T]() || o != (Override{}) {
		return false, nil
	}
	stamp := g.block && g.ran < fused.MaxBlock
	if stamp {
		c.fz.blk.entry[g.ran] = nanotime()
	}
	if g.ft != nil {
		err = callFused(c, g.ft, send, recv, op)
	} else {
		err = executePlan(c, g.pp, send, recv, op, g.kern, time.Time{})
	}
	if err != nil {
		return true, err
	}
	if stamp {
		c.fz.blk.exit[g.ran] = nanotime()
	}
	g.n--
	g.ran++
	c.fz.clearedCalls++
	if g.block {
		c.fz.blockCalls++
	}
	return true, nil
}

// settleClear credits the cleared calls run since the engine's last call
// to the learner, or reports the confirmation block they made
// (RecordBlock), and drops the clearance. When the block makes the
// commit step due, commitDue says so: the engine's next call takes it
// (allreduce), not a local query that settles the count (LastTunerInfo).
// Every rank ran the same cleared calls, so every rank takes the commit
// step on the same call.
func (c *Comm) settleClear() {
	g := &c.fz.clear
	switch {
	case g.ran > 0 && g.block:
		if c.recordBlock(g.arm, int(g.ran)) {
			c.fz.commitDue = true
		}
	case g.ran > 0 && g.tuned:
		c.keyMemo.st.Skip(int(g.ran))
	}
	*g = goClearance{}
}

// clearGo sets the Go clearance after a call of a Go caller that ran
// plan pp, as grantFused does the drop-in's: none unless the next calls
// of the same arguments would run the same plan, fused or native, and
// need nothing of the engine.
func (c *Comm) clearGo(pp *prepared, kern kernel, kind mpi.Kind, op mpi.Op, count int, untuned, tuned bool, arm costmodel.Arm) {
	if !c.goClears(&pp.p, kind, op) {
		return
	}
	n := c.clearCalls(untuned, tuned)
	block := false
	if n <= 0 && tuned {
		// A confirmation block of the arm that just ran, timed as the
		// key's settled calls will run (grantFused says why).
		n = c.blockAfter(arm)
		block = n > 0
	}
	if n <= 0 {
		return
	}
	g := goClearance{n: int64(n), count: count, kind: kind, op: op, pp: pp, kern: kern, tuned: tuned, block: block, arm: arm}
	if c.nodes == 1 && pp.p.Variant != Native && pp.p.Count > 0 {
		if ft, err := c.ftree(pp.p.Radix); err == nil {
			g.ft = ft
		}
	}
	c.fz.clear = g
}

// goClears reports whether a Go caller's cleared calls of plan p run it
// (clearGo): the MPI library's allreduce, or the fused tree as
// executePlan runs it (on several nodes too: the root's inter-node step
// is runFused's, in Go).
func (c *Comm) goClears(p *Plan, kind mpi.Kind, op mpi.Op) bool {
	return p.Variant == Native || (c.fusable(p) && fusedOK[kind][op])
}

// setupTree makes the tree's C state over the mapped segment (c.ct), which
// the tree transport folds with, and, with fusedOn (DPML_FUSED), lets the
// fused call use it (c.fz.f).
func (c *Comm) setupTree(fusedOn bool) error {
	s := c.seg
	f, err := fused.New(fused.Layout{Abort: s.abort, Out0: s.outSeq[0], Data: s.data,
		SlotStride: s.slotStride, BufStride: s.bufStride, PPN: s.ppn, Inline: inlineBytes})
	if err != nil {
		return fmt.Errorf("dpml: the reduction tree's C state: %w", err)
	}
	t := c.wait.Timeout
	switch {
	case t == 0:
		t = shm.DefaultTimeout
	case t < 0:
		t = -1
	}
	f.SetWaits(t, c.wait.Spin, c.wait.NoSleep, shm.DefaultSchedule())
	c.ct = f
	c.treeRes = [3]unsafe.Pointer{f.TreeResult(false, 0), f.TreeResult(false, 1), f.TreeResult(true, 0)}
	if fusedOn {
		c.fz.f = f
	}
	return nil
}

// freeFused releases the C state and the trees' C views (release; the
// drop-in has dropped its pointer before it closes the engine).
func (c *Comm) freeFused() {
	c.freeTrees()
	if c.ct != nil {
		c.ct.Free()
	}
	c.ct, c.fz.f, c.treeRes = nil, nil, [3]unsafe.Pointer{}
}

// fusable reports whether plan p is one the fused call runs now: a
// fusedShape plan while no phase timer runs (the fused call has no
// phases to time). (The kind and op are the call's: fusedOK.)
func (c *Comm) fusable(p *Plan) bool { return c.fusedShape(p) && !c.timing }

// fusedShape reports whether plan p has the fused call's shape: one tree,
// one segment, the MPI library's inter-node step (the routine's root makes
// that call itself), at most fusedMaxBytes, on a communicator with the C
// state. It depends on the plan and the setup only, so prepare decides it
// once per plan (prepared.fused).
func (c *Comm) fusedShape(p *Plan) bool {
	return c.fz.f != nil && p.Variant != Native && p.Intra == IntraTree && p.Leaders == 1 &&
		p.Segments == 1 && p.InterAlgorithm() == plan.InterMPI && p.Count*p.ElemSize <= fusedMaxBytes &&
		!traceBuild
}

// ftree returns this rank's C view of tree 0 of radix r.
func (c *Comm) ftree(r int) (*fused.Tree, error) {
	if t := c.treeFor(r, 0).c; t != nil {
		return t, nil
	}
	return nil, fmt.Errorf("dpml: fused tree call, tree of radix %d: no C view (no C memory)", r)
}

// runFused runs one call of plan p through the C routine: whole on one
// node, in two halves around the root's inter-node allreduce on several.
func runFused[T mpi.Number](c *Comm, p *Plan, send, recv []T, op mpi.Op, kern kernel) error {
	t, err := c.ftree(p.Radix)
	if err != nil {
		return err
	}
	if c.nodes == 1 {
		return callFused(c, t, send, recv, op)
	}
	g := c.gen + 1
	var sp unsafe.Pointer
	if unsafe.SliceData(send) != unsafe.SliceData(recv) {
		sp = unsafe.Pointer(unsafe.SliceData(send))
	}
	rp := unsafe.Pointer(unsafe.SliceData(recv))
	kind, n, bytes := int(mpi.KindOf[T]()), len(recv), len(recv)*p.ElemSize
	f := c.fz.f
	gosched.Pace() // a wait in C is a long cgo call: see package internal/runtime/gosched
	if rc := f.Up(t, sp, rp, n, kind, int(op), g); rc != fused.OK {
		return c.fusedError(rc)
	}
	if t.Root() {
		// The step among the nodes' roots goes through the inter-node
		// seam like the executor's (the plan's algorithm; fusable
		// admits the MPI library's, which the drop-in's C layer can
		// also call itself).
		alg, err := c.interFor(p)
		if err != nil {
			return err
		}
		st := interStep{buf: f.Result(bytes, g), n: n, kind: mpi.KindOf[T](), op: op, es: p.ElemSize, align: p.Align, kern: kern}
		if err := alg.run(c, st); err != nil {
			return fmt.Errorf("dpml: leader 0 inter-node allreduce of the tree's result: %w", err)
		}
		gosched.Pace()
	}
	if rc := f.Down(t, rp, bytes, g); rc != fused.OK {
		return c.fusedError(rc)
	}
	c.gen = g
	c.fz.calls++
	return nil
}

// callFused runs a whole single-node call through the C routine, on the
// C view t of the plan's tree.
func callFused[T mpi.Number](c *Comm, t *fused.Tree, send, recv []T, op mpi.Op) error {
	var sp unsafe.Pointer
	if unsafe.SliceData(send) != unsafe.SliceData(recv) {
		sp = unsafe.Pointer(unsafe.SliceData(send))
	}
	g := c.gen + 1
	gosched.Pace() // a wait in C is a long cgo call: see package internal/runtime/gosched
	if rc := c.fz.f.Call(t, sp, unsafe.Pointer(unsafe.SliceData(recv)), len(recv), int(mpi.KindOf[T]()), int(op), g); rc != fused.OK {
		return c.fusedError(rc)
	}
	c.gen = g
	c.fz.calls++
	return nil
}

// fusedError turns the C routine's failure into the error the executor
// would give for the same wait (wrapping shm.ErrTimeout or ErrAborted).
func (c *Comm) fusedError(rc int) error {
	fl := c.fz.f.Failure()
	var cause error
	switch rc {
	case fused.Timeout:
		cause = fmt.Errorf("%w: waiting for flag >= %d, saw %d", shm.ErrTimeout, fl.Want, fl.Seen)
	case fused.Aborted:
		cause = fmt.Errorf("%w (abort word %d)", shm.ErrAborted, fl.AbortWord)
	case fused.Inter:
		return fmt.Errorf("dpml: leader 0 inter-node allreduce of the tree's result (fused call): %w",
			mpi.ErrorFromCode("MPI_Allreduce", fl.Index))
	default:
		cause = fmt.Errorf("fused tree call: result %d", rc)
	}
	if fl.Step == 1 {
		return fmt.Errorf("dpml: local rank %d waits for its tree child %d (fused call): %w", c.local, fl.Index, cause)
	}
	return fmt.Errorf("dpml: rank %d waits for the tree's result (fused call): %w", c.local, cause)
}

// takeBack credits the calls the drop-in ran since the engine's last call:
// the communicator's generation, and the learner's count of the key's
// calls, or, for a confirmation block, the block's calls with its first
// entry and last exit (RecordBlock; the commit step runs here when that
// makes it due). Every rank ran the same calls, so the learners stay
// equal and every rank takes the commit step on the same call.
func (c *Comm) takeBack() error {
	last, _ := c.fz.f.LastParked()
	c.creditParked(last - 1) // the one that ran the latest call last
	n, gen := c.fz.f.Ran()
	c.gen = gen
	c.fz.calls += n
	commit := false
	switch {
	case c.fz.block:
		m := c.fz.f.TakeBlock(int(n), c.fz.blk.entry[:], c.fz.blk.exit[:])
		c.fz.blockCalls += n
		commit = c.recordBlock(c.fz.blockArm, m)
	case c.fz.sampled:
		commit = c.recordSampled(int(n))
	case c.fz.granted:
		c.keyMemo.st.Skip(int(n))
	}
	if last > 0 {
		c.creditOneParked(c.fz.f, last-1)
	}
	c.fz.f.TakeRan()
	c.fz.f.TakeParked()
	c.fz.granted, c.fz.block, c.fz.sampled = false, false, false
	if commit {
		return c.exchange()
	}
	return nil
}

// recordSampled records the ran calls of a sampled clearance (takeBack):
// the stride samples among them with the drop-in's stamps, the others
// credited untimed (learn.KeyState.RecordSampled).
func (c *Comm) recordSampled(ran int) bool {
	b := &c.fz.blk
	m := 0
	if ran > c.fz.smpGap {
		m = min((ran-c.fz.smpGap-1)/c.fz.smpStride+1, len(b.entry))
	}
	m = c.fz.f.TakeBlock(m, b.entry[:], b.exit[:])
	for j := range m {
		b.es[j] = float64(b.entry[j]-c.clockOffset) * 1e-9
		b.xs[j] = float64(b.exit[j]-c.clockOffset) * 1e-9
	}
	c.fz.sampleCalls += uint64(m)
	return c.keyMemo.st.RecordSampled(c.fz.smpGap, c.fz.smpStride, ran, b.es[:m], b.xs[:m])
}

// grantFused sets the drop-in's clearance after a call that ran plan pp
// (see the comment at the top): none unless the next calls of the same
// arguments would run the same fused plan and need nothing of the engine
// but their times at the end. untuned: the plan is fixed for these
// arguments (no per-call override, no tuner deciding); tuned: the tuner
// chose it, arm.
//
// A confirmation block (learn.KeyState.Block) of the arm that just
// ran is cleared too, timed: dpml_fused_run stamps each call's entry and
// exit, and the block is then priced as the C program will run the arm
// once settled. Through Go every call of the block paid the trip in and
// out, which the engine estimated and subtracted; on the device the
// 4-byte key's blocks still read 1.2-1.7 us for a tree the C layer ran in
// 1.1, so radixes 5-10% apart were told apart by noise, and auto ran
// 12-22% behind the best fixed tree at 4-64 B, 0-4% with the blocks in C
// (1x16, C client, b2b, medians of 6 runs).
//
// Then the parked clearances (parked.go) follow the learner's state.
func (c *Comm) grantFused(pp *prepared, kind mpi.Kind, op mpi.Op, count int, untuned, tuned bool, key costmodel.Key, ks learn.KeyState, arm costmodel.Arm) {
	c.fz.f.ClearLast()
	c.fz.f.SetGen(c.gen) // a parked clearance follows this call's generation
	c.grantExact(pp, kind, op, count, untuned, tuned, ks, arm)
	c.parkCall(pp, kind, op, count, untuned, tuned, key, ks, c.fz.granted, c.fz.block)
}

// grantExact sets the exact clearance (grantFused).
func (c *Comm) grantExact(pp *prepared, kind mpi.Kind, op mpi.Op, count int, untuned, tuned bool, ks learn.KeyState, arm costmodel.Arm) {
	f := c.fz.f
	f.RevokeExact()
	c.fz.granted, c.fz.block, c.fz.sampled = false, false, false
	native := pp.p.Variant == Native
	if !native && !c.cRuns(&pp.p, kind, op) {
		return
	}
	grant := c.clearCalls(untuned, tuned)
	block := false
	gap, stride, samples := 0, 0, 0
	if tuned && !c.mustSee() {
		// Once settled, the key's stride samples too: the drop-in
		// stamps them, and the engine is entered once for several.
		gap, stride, samples = ks.Samples(fused.MaxBlock)
		if samples > 0 {
			grant = gap + (samples-1)*stride + 1
		}
	}
	if grant <= 0 && tuned {
		grant = c.blockAfter(arm)
		block = grant > 0
	}
	if grant <= 0 {
		return
	}
	var t *fused.Tree
	if !native {
		var err error
		if t, err = c.ftree(pp.p.Radix); err != nil {
			return
		}
	}
	c.fz.granted, c.fz.block, c.fz.blockArm = tuned, block, arm
	f.Grant(int64(min(grant, maxGrant)), t, count, int(kind), int(op), c.gen, block)
	if samples > 0 { // then grant > 0 without a block
		c.fz.sampled, c.fz.smpGap, c.fz.smpStride = true, gap, stride
		f.Sample(int64(gap), int64(stride), samples)
	}
}

// clearCalls is how many of the next calls of the same arguments a
// clearance (the drop-in's or the Go one) covers: for a plan the tuner
// chose, the calls before its key's next sample (the learner needs them
// neither timed nor seen); for a fixed plan, all of them; none while the
// engine must see every call (DPML_CHECK, DPML_VERBOSE=2, phase timing).
func (c *Comm) clearCalls(untuned, tuned bool) int {
	if c.mustSee() {
		return 0
	}
	switch {
	case tuned:
		return c.keyMemo.st.Untimed()
	case untuned:
		return maxGrant
	}
	return 0
}

// warmBlock reports whether this call of arm, which libdpml.so's C layer
// runs itself once cleared, would be the first of a confirmation block:
// the engine then makes it a warm-up call (KeyState.Warm) and clears the
// whole block for the C layer after it (grantFused), so that no call of
// the block pays the trip into Go. The same on every rank (the learner's
// replicated state and the call's arguments).
func (c *Comm) warmBlock(ks learn.KeyState, arm costmodel.Arm) bool {
	if c.mustSee() {
		return false
	}
	a, n := ks.Block()
	return n > 0 && n == c.tuner.Config().ConfirmBlock && a == arm
}

// blockAfter is the length of the confirmation block of arm, the arm the
// call just ran, that the next calls of the key make (KeyState.Block), for
// a clearance to run and time it: 0 when there is none or the engine must
// see every call.
func (c *Comm) blockAfter(arm costmodel.Arm) int {
	if c.mustSee() {
		return 0
	}
	if a, n := c.keyMemo.st.Block(); n > 0 && a == arm {
		return n
	}
	return 0
}

// recordBlock reports the first n calls of a block of arm that a
// clearance ran, stamped in c.fz.blk on this process's CLOCK_MONOTONIC
// (ns), to the learner (RecordBlock, on the clock common to the ranks);
// true when the commit step is due.
func (c *Comm) recordBlock(arm costmodel.Arm, n int) bool {
	b := &c.fz.blk
	n = min(n, len(b.entry))
	for j := range n {
		b.es[j] = float64(b.entry[j]-c.clockOffset) * 1e-9
		b.xs[j] = float64(b.exit[j]-c.clockOffset) * 1e-9
	}
	return c.keyMemo.st.RecordBlock(arm, b.es[:n], b.xs[:n])
}

// mustSee reports whether the engine must see every call: DPML_CHECK,
// DPML_VERBOSE=2, phase timing.
func (c *Comm) mustSee() bool { return c.check || c.verbose >= 2 || c.timing }

// transition is the two cgo transitions a call made by libdpml.so's C
// layer pays to run in Go, into Go and back, estimated as twice the one
// into this call (entered at ce on CLOCK_MONOTONIC), read first thing in
// the engine: the device's trace measured them alike (150-184 ns in,
// 144-185 ns out). Read later, after the tuner's commit step and the
// credit of the C layer's calls that the same call may run, it counted
// their time twice more, as the tuner's overhead or in the sample of a
// plan Go runs. An implausible reading (the clock's, or a call of its
// own) counts nothing.
//
// Who pays it: a plan the C layer runs itself once cleared (cRunsCall)
// pays nothing in its steady state, so a timed call's trip is the
// tuner's overhead (tunOvh); any other plan pays it on every call, and
// the engine moves a timed call's entry that much earlier, so the
// learner compares arms as the C program will run them: without it, a
// sample of every arm came through Go, and the learner preferred copies
// (Go) to the tree (C) at 1 KiB on 1x16, 4.19 against 3.21 us.
func (c *Comm) transition(ce int64) int64 {
	d := nanotime() - ce
	if d <= 0 || d > maxTransition {
		return 0
	}
	return 2 * d
}

// trip splits what a timed call of plan p by libdpml.so's C layer paid
// to run in Go, tr (transition): the shift of the call's entry when every
// call of p pays it, or the tuner's overhead when only timed calls do
// (the C layer runs the others itself: cRunsCall).
func (c *Comm) trip(p *Plan, kind mpi.Kind, op mpi.Op, tr int64) (shift, overhead int64) {
	if c.cRunsCall(p, kind, op) {
		return 0, tr
	}
	return tr, 0
}

// cRunsCall reports whether libdpml.so's C layer runs calls of plan p
// itself once they are cleared: the MPI library's allreduce, or a tree
// plan it runs (cRuns).
func (c *Comm) cRunsCall(p *Plan, kind mpi.Kind, op mpi.Op) bool {
	return p.Variant == Native || c.cRuns(p, kind, op)
}

// cRuns reports whether libdpml.so's C layer runs calls of tree plan p
// itself once they are cleared: on one node, or on several once it holds
// the state, which then carries the leader communicator (fusedState).
func (c *Comm) cRuns(p *Plan, kind mpi.Kind, op mpi.Op) bool {
	return (c.nodes == 1 || c.fz.foreign) && c.fusable(p) && fusedOK[kind][op]
}

// maxTransition bounds a plausible cgo transition into the engine.
const maxTransition = 20_000 // ns

// fusedState is for libdpml.so (internal/runtime/dropinhook): the address of the communicator's C state
// of the fused tree call (dpml/internal/fused/fused.h), whose clearance the
// drop-in's C layer follows, or nil when there is none (DPML_FUSED=false,
// one rank per node). It stays valid until Close. On several nodes the
// state carries the leader communicator's handle, on which the tree's
// root runs the inter-node step of the calls the C layer runs itself.
// Every rank of the communicator must call it, or none: the clearance
// depends on it. Go programs have no use for it.
func (c *Comm) fusedState() unsafe.Pointer {
	if c == nil || c.closed || c.fz.f == nil {
		return nil
	}
	c.fz.foreign = true
	if c.nodes > 1 {
		c.fz.f.SetInter(c.nodes, c.leaderComm.Handle())
	}
	return c.fz.f.Pointer()
}

// fusedFailed is for libdpml.so (internal/runtime/dropinhook): a call its C layer ran through the fused
// routine failed with result rc; the communicator takes the error as a
// failed call of its own would (the abort word raised, every later call
// refused) and returns it.
func (c *Comm) fusedFailed(rc int) error {
	err := c.fusedError(rc)
	c.fz.f.Revoke()
	if c.abort != nil {
		c.abort.Store(1)
	}
	c.err = err
	return err
}
