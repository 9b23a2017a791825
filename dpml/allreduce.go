package dpml

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
	"unsafe"

	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/plan"
)

// Allreduce combines send of every rank with op and leaves the result in
// recv on every rank. send and recv must have equal lengths and must not
// overlap (use AllreduceInPlace). The plan is chosen by the engine.
func Allreduce[T mpi.Number](c *Comm, send, recv []T, op mpi.Op) error {
	return AllreduceWith(c, send, recv, op, Override{})
}

// AllreduceInPlace is Allreduce with buf as both input and output.
func AllreduceInPlace[T mpi.Number](c *Comm, buf []T, op mpi.Op) error {
	return allreduce(c, buf, buf, op, Override{})
}

// AllreduceInPlaceWith is AllreduceInPlace with a forced plan.
func AllreduceInPlaceWith[T mpi.Number](c *Comm, buf []T, op mpi.Op, o Override) error {
	return allreduce(c, buf, buf, op, o)
}

// AllreduceWith is Allreduce with parts of the plan forced by o, which must
// be the same on all ranks.
func AllreduceWith[T mpi.Number](c *Comm, send, recv []T, op mpi.Op, o Override) error {
	var bad error
	if len(send) != len(recv) {
		bad = fmt.Errorf("dpml: allreduce: send has %d elements, recv %d", len(send), len(recv))
	} else if overlaps(send, recv) {
		bad = errors.New("dpml: allreduce: send and recv overlap; use AllreduceInPlace")
	}
	if bad != nil {
		if c != nil && c.check && !c.closed && c.err == nil {
			// Under DPML_CHECK the other ranks are in the check's
			// collective: take it with them, so all fail alike.
			return c.checkCall(mpi.KindOf[T](), op, len(send), false, o, bad)
		}
		return bad
	}
	return allreduce(c, send, recv, op, o)
}

func allreduce[T mpi.Number](c *Comm, send, recv []T, op mpi.Op, o Override) error {
	if c == nil {
		return errors.New("dpml: allreduce on a nil Comm")
	}
	if c.closed {
		return ErrClosed
	}
	if c.err != nil {
		return fmt.Errorf("dpml: communicator unusable after an earlier failure: %w", c.err)
	}
	var tr int64 // a C caller's trip into Go and back (transition), read on entry
	if c.fz.foreign {
		if ce := c.fz.f.TakeEntry(); ce != 0 {
			tr = c.transition(ce)
		}
	}
	if c.later != nil {
		if done, err := runDeferred(c, send, recv, op); done {
			return err
		}
	}
	if ok, err := runCleared(c, send, recv, op, o); ok {
		if err != nil {
			c.failed(err)
		}
		return err
	}
	c.mark(tpEnter)
	c.settleClear()
	if c.xchg.phase != 0 && (len(send) > 0 || !c.xchg.fold) {
		// Through the node segment only calls with data count: they
		// are the ones that wait for every local rank (exchangeState).
		if err := c.advanceExchange(false); err != nil {
			c.failed(err)
			return err
		}
	}
	if c.fz.commitDue {
		c.fz.commitDue = false
		if err := c.exchange(); err != nil {
			c.failed(err)
			return err
		}
	}
	if c.fz.foreign && c.fz.f.Pending() {
		// Calls libdpml.so ran in C since the last one here.
		if err := c.takeBack(); err != nil {
			c.failed(err)
			return err
		}
	}
	kind := mpi.KindOf[T]()
	if c.check {
		inPlace := len(send) > 0 && unsafe.SliceData(send) == unsafe.SliceData(recv)
		if err := c.checkCall(kind, op, len(send), inPlace, o, nil); err != nil {
			return err
		}
	}
	kern, err := kernelFor(kind, op)
	if err != nil {
		return err
	}
	sel := c.selectPlan(kind, op, len(send), o) // select.go: the one home of plan selection
	o, tuned, untuned, timed := sel.o, sel.tuned, sel.untuned, sel.timed
	key, ks, arm := sel.key, sel.ks, sel.arm
	c.lastKey, c.lastTuned = key, tuned
	pp, err := c.planFor(len(send), kind.Size(), o)
	if err != nil {
		return err
	}
	if c.verbose > 0 {
		c.report(pp.p)
	}
	cRunsTuned := false // a tuned call of libdpml.so of a plan its C layer runs once cleared
	warm := false       // the call before a confirmation block the C layer runs (warmBlock)
	if c.fz.foreign {
		cRunsTuned = tuned && c.cRunsCall(&pp.p, kind, op)
		if cRunsTuned && c.warmBlock(ks, arm) {
			warm, timed = true, false
		}
	} else if tuned && c.goClears(&pp.p, kind, op) && c.warmBlock(ks, arm) {
		warm, timed = true, false // the same for a Go caller's clearance (clearGo)
	}
	var t0 int64
	if timed {
		t0 = c.now()
	}
	if tr != 0 && timed {
		// A block's calls are timed each, so the trip of a plan the
		// C layer runs itself falls between them, which the learner
		// leaves out (costmodel's lag).
		shift, ovh := c.trip(&pp.p, kind, op, tr)
		t0 -= shift
		c.tunOvh += ovh
		c.books.trip(ovh)
	}
	c.mark(tpPlan)
	// The plan lives in the Comm (c.memo): a pointer to a local would
	// move it to the heap on every call.
	err = execute(c, pp, send, recv, op, kern)
	if testHookPlanCost != nil && err == nil {
		time.Sleep(testHookPlanCost(&pp.p))
	}
	if err == nil && (c.xchg.due != 0 || c.xchg.idleErr != nil) {
		err = c.runDue() // the learner's work due in this call that its waits left
	}
	if err == nil && tuned {
		var t1 int64 // 0 and 0 when untimed: the tuner keeps no time
		if timed {
			t1 = c.now()
		}
		if warm {
			ks.Warm(arm)
		} else {
			err = c.observe(ks, arm, t0, t1)
		}
	}
	c.endHold()
	if err != nil {
		c.failed(err)
		return err
	}
	if c.fz.foreign {
		c.grantFused(pp, kind, op, len(send), untuned, tuned, key, ks, arm)
	} else {
		c.clearGo(pp, kern, kind, op, len(send), untuned, tuned, arm)
	}
	c.markDone()
	return nil
}

// failed makes err the communicator's: it wakes local peers blocked on
// this rank and refuses further calls, since the node's flags no longer
// agree.
func (c *Comm) failed(err error) {
	if c.abort != nil {
		c.abort.Store(1)
	}
	if c.fz.f != nil {
		c.fz.f.Revoke()
	}
	c.fz.clear = goClearance{}
	c.xchg.due = 0 // no learner work in a failed communicator's waits (Close's)
	c.err = err
}

// Plan returns the plan a call of count elements of elemSize bytes would
// run with override o. Calls the tuner decides may run another plan as it
// learns, and the offload's dispatch rule, which needs the element type
// and op, is not applied here (o.Offload is); LastPlan tells what ran.
func (c *Comm) Plan(count, elemSize int, o Override) (Plan, error) {
	if c == nil || c.closed {
		return Plan{}, ErrClosed
	}
	if c.later != nil {
		return Plan{}, ErrNotSetUp
	}
	return c.plan(count, elemSize, o)
}

// testHookPlanCost, when set by a test, gives every plan a synthetic cost:
// each rank sleeps that long after the call's data moved, inside the time
// the tuner measures (skew_test.go).
var testHookPlanCost func(p *Plan) time.Duration

func overlaps[T any](a, b []T) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	var z T
	sz := unsafe.Sizeof(z)
	a0, b0 := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	return a0 < b0+uintptr(len(b))*sz && b0 < a0+uintptr(len(a))*sz
}

// report prints plan choices on rank 0 (DPML_VERBOSE): at level 1 each
// plan once per power-of-two size class (a learner that alternates plans,
// or a benchmark that interleaves them, would otherwise print one on every
// call), up to maxReported; at level 2 every call.
func (c *Comm) report(p Plan) {
	if c.rank != 0 {
		return
	}
	class := 0
	for b := p.Count * p.ElemSize; b > 1; b >>= 1 {
		class++
	}
	// A struct, not a formatted string: every call of a Go-routed plan
	// comes here under DPML_VERBOSE=1, which the device's benchmarks set
	// for the tuner's tables, and a string cost an allocation per call.
	key := reportKey{class, p.Variant, p.Leaders, p.Pipeline, p.Intra, p.Radix, p.Segments, p.Offload, p.Inter}
	if c.verbose < 2 {
		if c.reported[key] {
			return
		}
		if c.reported == nil {
			c.reported = map[reportKey]bool{}
		}
		if len(c.reported) == maxReported {
			fmt.Fprintf(os.Stderr, "dpml: %d plans printed; DPML_VERBOSE=2 prints every call's\n", maxReported)
		}
		c.reported[key] = true
		if len(c.reported) > maxReported {
			return
		}
	}
	if c.verbose < 2 {
		// One line per new plan; its diagram (and a tree's shape) at 2.
		fmt.Fprintf(os.Stderr, "dpml: %d B: %s\n", p.Count*p.ElemSize, p.Spec())
		return
	}
	fmt.Fprintf(os.Stderr, "dpml: %d B: %s", p.Count*p.ElemSize, p.String())
	if p.Intra == IntraTree {
		for j := range p.Leaders {
			fmt.Fprintf(os.Stderr, "reduction tree %d of node 0 (local ranks, children indented):\n%s", j, c.treeFor(p.Radix, j).tree.String())
		}
	}
}

// reportKey is what report prints a plan once for: its size class and
// shape.
type reportKey struct {
	class             int
	variant           Variant
	leaders, pipeline int
	intra             Intra
	radix, segments   int
	offload           plan.Offload
	inter             plan.Inter
}

// maxReported bounds DPML_VERBOSE=1's plan printing.
const maxReported = 256

// checkCall is DPML_CHECK: one allreduce compares what MPI requires to be
// equal on every rank but leaves undefined when it is not (count, element
// type, op, MPI_IN_PLACE on all or none) and the forced plan, which this
// library requires to be equal. Any difference, or a local argument error
// on any rank, returns the same error on every rank, wrapping ErrCheck;
// the communicator stays usable (nothing has moved yet).
func (c *Comm) checkCall(kind mpi.Kind, op mpi.Op, count int, inPlace bool, o Override, local error) error {
	var v [13]uint64
	if local != nil {
		v[0] = 1
	}
	v[1], v[2], v[3] = uint64(count), uint64(kind), uint64(op)
	if inPlace {
		v[4] = 1
	}
	v[5], v[6], v[7], v[8], v[9], v[10] = uint64(o.Variant), uint64(o.Leaders), uint64(o.Pipeline), uint64(o.SegmentBytes), uint64(o.Intra), uint64(o.Radix)
	v[11], v[12] = uint64(o.Offload), uint64(o.Inter)
	buf := make([]uint64, 2*len(v))
	for i, x := range v {
		buf[i], buf[len(v)+i] = x, ^x
	}
	c.watch.enter(stepCheck)
	err := mpi.AllreduceInPlace(c.world, buf, mpi.OpMax)
	c.watch.leave()
	if err != nil {
		return errors.Join(fmt.Errorf("%w: %w", ErrCheck, err), local)
	}
	var diff []int
	for i := 1; i < len(v); i++ {
		if buf[i] != ^buf[len(v)+i] {
			diff = append(diff, i-1)
		}
	}
	if buf[0] == 0 && len(diff) == 0 {
		return nil
	}
	items := []Setting{
		{"count", strconv.Itoa(count)}, {"element type", kind.String()}, {"op", op.String()},
		{"in place", strconv.FormatBool(inPlace)}, {"variant", o.Variant.String()},
		{"leaders", strconv.Itoa(o.Leaders)}, {"pipeline", strconv.Itoa(o.Pipeline)},
		{"segment bytes", strconv.Itoa(o.SegmentBytes)}, {"intra", o.Intra.String()}, {"radix", strconv.Itoa(o.Radix)},
		{"offload", o.Offload.String()}, {"inter", o.Inter.String()},
	}
	class := classOK
	if local != nil {
		class = classCheck
	}
	return disagreement(c.world, local, class, items, diff, ErrCheck)
}
