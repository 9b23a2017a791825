package dpml

import (
	"errors"
	"fmt"
	"os"
	"time"
	"unsafe"

	"github.com/dpmlgo/dpml/costmodel"
	"github.com/dpmlgo/dpml/mpi"
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
	if len(send) != len(recv) {
		return fmt.Errorf("dpml: allreduce: send has %d elements, recv %d", len(send), len(recv))
	}
	if overlaps(send, recv) {
		return errors.New("dpml: allreduce: send and recv overlap; use AllreduceInPlace")
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
	kind := mpi.KindOf[T]()
	kern, err := kernelFor(kind, op)
	if err != nil {
		return err
	}
	var key costmodel.Key
	var arm costmodel.Arm
	tuned := c.tuned(o, len(send), kind.Size())
	if tuned {
		key = c.tunerKey(kind, op, len(send))
		arm = c.tuner.Choose(key)
		o = Override(arm) // an arm is a whole shape: variant, l, k and transport
	}
	p, err := c.plan(len(send), kind.Size(), o)
	if err != nil {
		return err
	}
	if c.verbose > 0 {
		c.report(p)
	}
	c.last = p
	var t0 time.Time
	if tuned {
		t0 = time.Now()
	}
	// The plan lives in the Comm (c.last): a pointer to a local would move
	// it to the heap on every call.
	err = execute(c, &c.last, send, recv, op, kern)
	if err == nil && tuned {
		err = c.observe(key, arm, time.Since(t0))
	}
	if err != nil {
		// Wake local peers blocked on this rank, and refuse further calls:
		// the node's flags no longer agree.
		if c.abort != nil {
			c.abort.Store(1)
		}
		c.err = err
		return err
	}
	return nil
}

// Plan returns the plan a call of count elements of elemSize bytes would
// run with override o. Calls the tuner decides may run another plan as it
// learns; LastPlan tells what ran.
func (c *Comm) Plan(count, elemSize int, o Override) (Plan, error) {
	if c == nil || c.closed {
		return Plan{}, ErrClosed
	}
	return c.plan(count, elemSize, o)
}

func overlaps[T any](a, b []T) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	var z T
	sz := unsafe.Sizeof(z)
	a0, b0 := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	return a0 < b0+uintptr(len(b))*sz && b0 < a0+uintptr(len(a))*sz
}

// report prints plan choices on rank 0 (DPML_VERBOSE): each new choice per
// power-of-two size class at level 1, every call at level 2.
func (c *Comm) report(p Plan) {
	if c.rank != 0 {
		return
	}
	class := 0
	for b := p.Count * p.ElemSize; b > 1; b >>= 1 {
		class++
	}
	key := fmt.Sprintf("%v/%d/%d/%v/%d/%d", p.Variant, p.Leaders, p.Pipeline, p.Intra, p.Radix, p.Segments)
	if c.verbose < 2 && c.reported[class] == key {
		return
	}
	if c.reported == nil {
		c.reported = map[int]string{}
	}
	c.reported[class] = key
	fmt.Fprintf(os.Stderr, "dpml: %d B: %s", p.Count*p.ElemSize, p.String())
	if p.Intra == IntraTree {
		fmt.Fprintf(os.Stderr, "reduction tree of node 0 (local ranks, children indented):\n%s", c.treeFor(p.Radix).tree.String())
	}
}
