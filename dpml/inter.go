package dpml

import (
	"fmt"
	"unsafe"

	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/plan"
)

// The inter-node seam: the step among the leaders, one leader per node and
// partition, after the intra-node reduce and before the intra-node
// broadcast. Leader j of every node holds its node's reduced partition j
// (or a sub-chunk of it) in the node segment; the step leaves the reduction
// over all nodes in the same place, on every node.
//
// The executor (engine.go) runs the step through interAlgo and never asks
// which algorithm it has, as it does with the intra-node transports. An
// algorithm is one type implementing interAlgo, one cost function in the
// cost model (costmodel.InterCostOf, indexed by the same plan.Inter) and one
// line in interAlgos below. The plan names it: plan.Shape.Inter for the
// host's algorithms (spec key inter=), plan.Shape.Offload for the
// in-network offload; plan.Shape.InterAlgorithm resolves the two into the
// index of both tables.
//
// Adding an algorithm: a plan.Inter constant and its name, a cost function
// registered in costmodel's table (the tuner then prices it, and gets arms
// for it where the arm set says so), a type here with its line in
// interAlgos, and the conformance suite's overrides.

// interAlgo is one inter-node algorithm. Each Comm holds its own instance
// of every registered algorithm (newInterAlgos), so an algorithm may keep
// state between calls (request pools, staging buffers).
type interAlgo interface {
	// run completes the step before it returns; every wait is bounded by
	// DPML_TIMEOUT (the watchdog for a blocking MPI call, the Comm's
	// Waiter otherwise).
	run(c *Comm, st interStep) error
	// start begins the step and returns it pending, for plans that overlap
	// it with the next segment's intra-node phases. b is the segment's
	// buffer set (0 or 1) and q its sub-chunk: the steps of one buffer set
	// run concurrently, and a step of (b, q) is completed before the next
	// one of the same (b, q) starts. The executor drives the returned step
	// with Test while it waits on shared memory and completes it before
	// the segment's results are delivered.
	start(c *Comm, st interStep, b, q int) (pendingStep, error)
	// close releases what the algorithm holds, at the Comm's release;
	// clean is false after a failed call, when a step may still be
	// pending.
	close(clean bool) error
}

// pendingStep is a started inter-node step (an *mpi.Request is one): Test
// advances it without blocking and reports whether it completed.
type pendingStep interface {
	Test() (bool, error)
}

// interStep is one leader's share of the step: n elements at buf, reduced
// in place with the same leader of every other node.
type interStep struct {
	buf   unsafe.Pointer
	n     int
	kind  mpi.Kind
	op    mpi.Op
	es    int    // bytes per element
	align int    // the plan's cut granularity in elements (a cache line)
	kern  kernel // op on kind, in the fixed order of the kernels
}

// interAlgos is the registry: a constructor per algorithm, indexed by the
// algorithm's plan.Inter (InterAuto is resolved before it gets here).
var interAlgos = [plan.NumInter]func() interAlgo{
	plan.InterMPI:   func() interAlgo { return &mpiInter{} },
	plan.InterRing:  func() interAlgo { return &ringInter{} },
	plan.InterSharp: func() interAlgo { return sharpInter{} },
}

// newInterAlgos makes a Comm's instances of the registered algorithms.
func newInterAlgos() [plan.NumInter]interAlgo {
	var a [plan.NumInter]interAlgo
	for i, mk := range interAlgos {
		if mk != nil {
			a[i] = mk()
		}
	}
	return a
}

// interFor returns the algorithm plan p runs, or an error when none is
// registered under its name (a plan the engine resolved always has one).
func (c *Comm) interFor(p *Plan) (interAlgo, error) {
	id := p.InterAlgorithm()
	if id < plan.NumInter {
		if a := c.inters[id]; a != nil {
			return a, nil
		}
	}
	return nil, fmt.Errorf("%w: no inter-node algorithm %v", ErrConfig, id)
}

// mpiCalls are the MPI calls an algorithm makes on n elements at p, for one
// element kind: the binding's generic calls instantiated once per kind, so
// that algorithms can be written without the call's type parameter.
type mpiCalls struct {
	allreduce  func(c *mpi.Comm, p unsafe.Pointer, n int, op mpi.Op) error
	iallreduce func(c *mpi.Comm, p unsafe.Pointer, n int, op mpi.Op, r *mpi.Request) error
	isend      func(c *mpi.Comm, p unsafe.Pointer, n, dest, tag int, r *mpi.Request) error
	irecv      func(c *mpi.Comm, p unsafe.Pointer, n, src, tag int, r *mpi.Request) error
}

// typedMPI[kind] holds the kind's calls (every kind the engine supports).
var typedMPI [mpi.KindComplex128 + 1]mpiCalls

func registerMPI[T mpi.Number]() {
	typedMPI[mpi.KindOf[T]()] = mpiCalls{
		allreduce: func(c *mpi.Comm, p unsafe.Pointer, n int, op mpi.Op) error {
			return mpi.AllreduceInPlace(c, unsafe.Slice((*T)(p), n), op)
		},
		iallreduce: func(c *mpi.Comm, p unsafe.Pointer, n int, op mpi.Op, r *mpi.Request) error {
			return mpi.IallreduceInPlaceReq(c, unsafe.Slice((*T)(p), n), op, r)
		},
		isend: func(c *mpi.Comm, p unsafe.Pointer, n, dest, tag int, r *mpi.Request) error {
			return mpi.IsendReq(c, unsafe.Slice((*T)(p), n), dest, tag, r)
		},
		irecv: func(c *mpi.Comm, p unsafe.Pointer, n, src, tag int, r *mpi.Request) error {
			return mpi.IrecvReq(c, unsafe.Slice((*T)(p), n), src, tag, r)
		},
	}
}

func init() {
	registerMPI[int8]()
	registerMPI[int16]()
	registerMPI[int32]()
	registerMPI[int64]()
	registerMPI[uint8]()
	registerMPI[uint16]()
	registerMPI[uint32]()
	registerMPI[uint64]()
	registerMPI[float32]()
	registerMPI[float64]()
	registerMPI[complex64]()
	registerMPI[complex128]()
}

// mpiInter is the MPI library's allreduce over the leader communicator:
// one blocking call (under the watchdog: a blocking MPI call cannot be left
// on a timeout, see watchdog.go), or one non-blocking call per sub-chunk
// when the plan overlaps.
type mpiInter struct {
	// pool[b][q]: the request of buffer set b and sub-chunk q, reused
	// (pointers: a pending request never moves when the pool grows).
	pool [2][]*mpi.Request
}

func (*mpiInter) run(c *Comm, st interStep) error {
	c.watch.enter(stepInter)
	err := typedMPI[st.kind].allreduce(c.leaderComm, st.buf, st.n, st.op)
	c.watch.leave()
	return err
}

func (*mpiInter) close(bool) error { return nil }

func (m *mpiInter) start(c *Comm, st interStep, b, q int) (pendingStep, error) {
	// The requests of set b are free: the previous segment of set b
	// completed all of them before this one started.
	for len(m.pool[b]) <= q {
		m.pool[b] = append(m.pool[b], new(mpi.Request))
	}
	r := m.pool[b][q]
	if err := typedMPI[st.kind].iallreduce(c.leaderComm, st.buf, st.n, st.op, r); err != nil {
		return nil, err
	}
	return r, nil
}

// sharpInter hands the step to the in-network offload attached at New
// (offload.go): one group per leader position, blocking with bounded waits
// of its own. The dispatch (offloadFor) gives it only plans that do not
// overlap.
type sharpInter struct{}

func (sharpInter) run(c *Comm, st interStep) error {
	return c.offloadInter(st.buf, st.n, st.kind, st.op)
}

// close has nothing to do: the offload's groups are closed with the
// offload (closeOffload).
func (sharpInter) close(bool) error { return nil }

func (sharpInter) start(*Comm, interStep, int, int) (pendingStep, error) {
	return nil, fmt.Errorf("%w: the in-network offload does not run overlapped", ErrConfig)
}
