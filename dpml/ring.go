package dpml

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/plan"
)

// ringInter is the bandwidth-optimal ring allreduce among the leaders, over
// point-to-point messages: a reduce-scatter then an allgather, 2(n-1)
// steps on n nodes, each moving one chunk (about 1/n of the leader's
// partition) to the next node of the ring and receiving one from the
// previous. The MPI library may or may not run a ring for a given size;
// this one runs it always, so the engine (and its tuner) can compare.
//
// Chunk j of a step is plan.Partition(n elements, nodes, the plan's
// alignment, j): cut like the engine's partitions, so chunks start on
// cache lines and the last ones are empty when the step has fewer cache
// lines than there are nodes. Steps on empty chunks send and receive
// nothing; both ends skip them alike, since both cut the same way.
//
// Determinism: in reduce-scatter step t, node r sends chunk r-t (mod n)
// and folds the chunk r-t-1 it receives into its own copy, so chunk c is
// reduced exactly once, in the fixed order x[c], x[c+1], ..., x[c-1] (node
// order rotated to start at c), by the kernels' fixed pairwise fold. The
// allgather then only copies the reduced chunks, so every node ends with
// the same bits, call after call.
//
// Pipelining: a step is a small state machine (ringStep) whose Test posts
// the next send and receive once the previous ones completed, so several
// rings (one per sub-chunk, and the two buffer sets') advance while the
// leader waits on shared memory, as the MPI library's non-blocking
// allreduces do. Concurrent rings use distinct tags, and each ring's
// messages between two nodes are sent and received in the same order on
// both ends, which MPI's non-overtaking rule then matches.
type ringInter struct {
	one  ringStep       // the blocking step
	pool [2][]*ringStep // by buffer set and sub-chunk, reused
}

// Ring tags: the blocking step's, then two per sub-chunk (one per buffer
// set). MPI guarantees tags up to 32767.
const (
	ringTagBase = 0x4000
	ringTagMax  = 32767
)

func (r *ringInter) run(c *Comm, st interStep) error {
	s := &r.one
	if err := s.begin(c.leaderComm, st, ringTagBase); err != nil {
		return err
	}
	err := c.wait.Until(s.Test)
	if err != nil && !s.failed { // a timeout or an abort: say where the ring stood
		err = s.context(err)
	}
	return err
}

func (r *ringInter) start(c *Comm, st interStep, b, q int) (pendingStep, error) {
	tag := ringTagBase + 1 + 2*q + b
	if tag > ringTagMax {
		return nil, fmt.Errorf("%w: ring inter-node step: sub-chunk %d is beyond the ring's %d tags", ErrConfig, q, (ringTagMax-ringTagBase)/2)
	}
	for len(r.pool[b]) <= q {
		r.pool[b] = append(r.pool[b], new(ringStep))
	}
	s := r.pool[b][q]
	if err := s.begin(c.leaderComm, st, tag); err != nil {
		return nil, err
	}
	return s, nil
}

// ringStep is one ring allreduce in progress.
type ringStep struct {
	comm        *mpi.Comm
	calls       *mpiCalls
	st          interStep
	nodes, me   int // ring members, and this leader's place (its rank in comm)
	left, right int
	tag         int
	round       int  // steps completed, of 2(nodes-1)
	posted      bool // the sends and receives of step round are posted
	failed      bool // Test returned an error (with the ring's context)
	send, recv  mpi.Request
	// tmp receives the reduce-scatter's chunks. It is an anonymous
	// mapping, not Go memory: a receive left pending by a failed call
	// (MPI cannot cancel it) must not hold a Go object pinned, which the
	// runtime reports as a leak once the object is collected.
	tmp  []byte
	srcs [2]unsafe.Pointer // the kernel's sources: own chunk, then the received one
}

// begin sets up the ring for st and posts its first step. The previous use
// of s must have completed.
func (s *ringStep) begin(comm *mpi.Comm, st interStep, tag int) error {
	s.comm, s.calls, s.st, s.tag = comm, &typedMPI[st.kind], st, tag
	s.nodes, s.me = comm.Size(), comm.Rank()
	s.right, s.left = (s.me+1)%s.nodes, (s.me+s.nodes-1)%s.nodes
	s.round, s.posted, s.failed = 0, false, false
	if _, per := plan.Split(st.n, s.nodes, st.align); per*st.es > len(s.tmp) {
		if err := s.free(); err != nil {
			return err
		}
		b, err := unix.Mmap(-1, 0, plan.CeilDiv(per*st.es, pageBytes)*pageBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return fmt.Errorf("ring inter-node step: staging buffer of %d bytes: %w", per*st.es, err)
		}
		s.tmp = b
	}
	_, err := s.Test()
	return err
}

// free unmaps the staging buffer; no request may be using it.
func (s *ringStep) free() error {
	if s.tmp == nil {
		return nil
	}
	err := unix.Munmap(s.tmp)
	s.tmp = nil
	return err
}

// close releases the staging buffers. After a failed call (clean false) a
// receive may still be pending on them, and MPI may yet write there: they
// stay mapped, as the failed communicator's job is ending anyway.
func (r *ringInter) close(clean bool) error {
	if !clean {
		return nil
	}
	errs := []error{r.one.free()}
	for b := range r.pool {
		for _, s := range r.pool[b] {
			errs = append(errs, s.free())
		}
	}
	return errors.Join(errs...)
}

// rounds is the number of steps: n-1 of reduce-scatter, n-1 of allgather.
func (s *ringStep) rounds() int { return 2 * (s.nodes - 1) }

// chunks returns the chunks step t sends and receives.
func (s *ringStep) chunks(t int) (send, recv int) {
	n := s.nodes
	if t < n-1 { // reduce-scatter: pass the partial sums on
		return (s.me - t + 2*n) % n, (s.me - t - 1 + 2*n) % n
	}
	u := t - (n - 1) // allgather: pass the reduced chunks on
	return (s.me + 1 - u + 2*n) % n, (s.me - u + 2*n) % n
}

// chunk returns chunk j's element range.
func (s *ringStep) chunk(j int) (lo, hi int) {
	return plan.Partition(s.st.n, s.nodes, s.st.align, j)
}

func (s *ringStep) at(i int) unsafe.Pointer { return unsafe.Add(s.st.buf, i*s.st.es) }

// post posts step t's send and receive (none for an empty chunk).
func (s *ringStep) post(t int) error {
	sc, rc := s.chunks(t)
	if lo, hi := s.chunk(rc); hi > lo {
		dst := s.at(lo)
		if t < s.nodes-1 {
			dst = unsafe.Pointer(unsafe.SliceData(s.tmp))
		}
		if err := s.calls.irecv(s.comm, dst, hi-lo, s.left, s.tag, &s.recv); err != nil {
			return err
		}
	}
	if lo, hi := s.chunk(sc); hi > lo {
		if err := s.calls.isend(s.comm, s.at(lo), hi-lo, s.right, s.tag, &s.send); err != nil {
			return err
		}
	}
	return nil
}

// Test advances the ring as far as the messages that arrived allow, and
// reports whether it completed.
func (s *ringStep) Test() (bool, error) {
	for s.round < s.rounds() {
		if !s.posted {
			if err := s.post(s.round); err != nil {
				return false, s.context(err)
			}
			s.posted = true
		}
		if done, err := s.send.Test(); !done || err != nil {
			return false, s.context(err)
		}
		if done, err := s.recv.Test(); !done || err != nil {
			return false, s.context(err)
		}
		if s.round < s.nodes-1 {
			// Fold the received partial into this node's copy of the
			// chunk: the chunk's only reduction on this node.
			_, rc := s.chunks(s.round)
			if lo, hi := s.chunk(rc); hi > lo {
				s.srcs[0], s.srcs[1] = s.at(lo), unsafe.Pointer(unsafe.SliceData(s.tmp))
				s.st.kern(s.srcs[0], s.srcs[:], hi-lo)
			}
		}
		s.round++
		s.posted = false
	}
	return true, nil
}

// context says where in the ring an error happened, and marks the step
// failed (nil stays nil).
func (s *ringStep) context(err error) error {
	if err == nil {
		return nil
	}
	s.failed = true
	phase := "reduce-scatter"
	if s.round >= s.nodes-1 {
		phase = "allgather"
	}
	return fmt.Errorf("ring step %d of %d (%s; node %d sends to node %d, receives from node %d): %w",
		s.round+1, s.rounds(), phase, s.me, s.right, s.left, err)
}
