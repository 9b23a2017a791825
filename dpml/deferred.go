package dpml

import (
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/mpi"
)

// Deferred makes New set the engine up only once the communicator's calls
// have paid for it, as libdpml.so does for the communicators a C program
// creates: New returns after one small collective (the ranks agree on
// DPML_SETUP_AFTER), the calls run on the MPI library's own allreduce
// until they would have taken DPML_SETUP_AFTER there (each priced at
// config.SetupPrice of its bytes, the drop-in's rule), and the engine is
// set up, collectively, inside the call that crosses it, the same call on
// every rank. A communicator that makes a few small calls never pays the
// setup's milliseconds.
//
// Before the setup: per-call Overrides are not applied (the MPI library
// runs the call), SetOverride is kept for the engine, Warm does nothing,
// Plan reports ErrNotSetUp, LastPlan reports the native plan, and the
// topology accessors (Nodes, PPN, NodeRank, ...) report zero. A setup that
// fails is that call's error, the same on every rank, and the
// communicator's from then on, as a failed New's would be.
func Deferred() Option { return func(o *options) { o.deferred = true } }

// ErrNotSetUp is returned by Plan on a communicator New made with Deferred
// whose engine is not set up yet.
var ErrNotSetUp = errors.New("dpml: communicator not set up yet (Deferred)")

// deferredSetup is what a Deferred communicator keeps until its setup.
type deferredSetup struct {
	opts        []Option
	after       float64  // DPML_SETUP_AFTER in seconds, agreed at New
	priced      float64  // the calls so far, priced (config.SetupPrice)
	override    Override // SetOverride before the setup
	overrideSet bool
}

// newDeferred is New with Deferred: DPML_SETUP_AFTER agreed (collective
// over c: every rank must set up on the same call), nothing else.
func newDeferred(c *mpi.Comm, opts []Option) (*Comm, error) {
	after, err := config.Duration(config.SetupAfter)
	var local error
	if err != nil {
		local = fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := Agree(c, local, []Setting{{Name: config.SetupAfter, Value: after.String()}}); err != nil {
		return nil, err
	}
	d := &Comm{parent: c, later: &deferredSetup{opts: slices.Clone(opts), after: after.Seconds()}}
	d.rank, d.size = c.Rank(), c.Size()
	return d, nil
}

// setupDue reports whether a call of bytes on a communicator whose calls
// so far were priced at priced (seconds) sets it up, with after the
// DPML_SETUP_AFTER in seconds, and the new priced total: the drop-in's
// rule (dropin.c), with the same prices.
func setupDue(priced float64, bytes int64, after float64) (bool, float64) {
	priced += config.SetupPrice(bytes)
	return priced >= after, priced
}

// runDeferred runs a call of a Deferred communicator not set up yet: on
// the MPI library, or, at the call whose price crosses DPML_SETUP_AFTER,
// after setting the engine up (done false: the caller runs the call on
// it). The price depends on the call's size only, so every rank decides
// alike.
func runDeferred[T mpi.Number](c *Comm, send, recv []T, op mpi.Op) (done bool, err error) {
	l := c.later
	var due bool
	due, l.priced = setupDue(l.priced, int64(len(recv))*int64(mpi.KindOf[T]().Size()), l.after)
	if !due {
		if len(send) > 0 && unsafe.SliceData(send) == unsafe.SliceData(recv) {
			err = mpi.AllreduceInPlace(c.parent, recv, op)
		} else {
			err = mpi.Allreduce(c.parent, send, recv, op)
		}
		if err != nil {
			return true, fmt.Errorf("dpml: allreduce before setup (Deferred): %w", err)
		}
		return true, nil
	}
	c.later = nil
	if err := c.build(c.parent, l.opts); err != nil {
		// release marked it closed: it is failed instead, as every
		// later call says.
		c.closed, c.err = false, err
		return true, err
	}
	if l.overrideSet {
		c.SetOverride(l.override)
	}
	return false, nil
}
