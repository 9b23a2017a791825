// Package fused is the small-message reduction tree in C (fused.h,
// fused.c) and its Go handle: the one implementation of the tree's fold
// and of its places in the node segment, which dpml's tree transport
// calls step by step (State.Step, State.Fold, State.TreeResult), and the
// fused call, which runs a whole call of a one-tree plan in one routine
// over the same steps (State.Call, Up, Down). Package dpml owns the
// protocol and decides which calls take which path (dpml/tree.go,
// dpml/fused.go); this package only holds the C code, which cannot live
// beside dpml's Go assembly (a package with cgo may not have Go assembly
// files), and the drop-in's C layer includes fused.h to run cleared calls
// itself.
package fused

// #cgo CFLAGS: -O3 -I${SRCDIR}/../../../mpi
// #include <stdlib.h>
// #include "fused.h"
// /* The Go side's calls (State.Call, Up, Down): the state and the tree as
//    integers (C memory), the buffers as char pointers, so that cgo checks
//    none of the arguments on each call (runtime.cgoCheckPointer: mpi's
//    package doc, "The call's cost"). */
// static inline int fused_call(uintptr_t f, uintptr_t t, const char *s, char *r, int n, int kind, int op, uint64_t g) {
// 	return dpml_fused_call((dpml_fused *)f, (const dpml_ftree *)t, s, r, n, kind, op, g);
// }
// static inline int fused_up(uintptr_t f, uintptr_t t, const char *s, const char *r, int n, int kind, int op, uint64_t g) {
// 	return dpml_fused_up((dpml_fused *)f, (const dpml_ftree *)t, s, r, n, kind, op, g);
// }
// static inline int fused_down(uintptr_t f, uintptr_t t, char *r, int bytes, uint64_t g) {
// 	return dpml_fused_down((dpml_fused *)f, (const dpml_ftree *)t, r, bytes, g);
// }
// static inline void *fused_result(uintptr_t f, int bytes, uint64_t g) { return dpml_fused_result((dpml_fused *)f, bytes, g); }
// /* The tree transport's steps (State.Fold, Step): the same, and the
//    segment's places (dst) as integers. */
// static inline int tree_fold(uintptr_t f, uintptr_t t, const char *own, uintptr_t dst, int lo, int n, int inl, int kind, int op, uint64_t g) {
// 	return dpml_tree_fold((const dpml_fused *)f, (const dpml_ftree *)t, own, (void *)dst, lo, n, inl, kind, op, g);
// }
// static inline int tree_step(uintptr_t f, uintptr_t t, const char *own, int lo, int n, int inl, int kind, int op, uint64_t g) {
// 	return dpml_tree_step((const dpml_fused *)f, (const dpml_ftree *)t, own, lo, n, inl, kind, op, g);
// }
// #cgo noescape fused_call
// #cgo nocallback fused_call
// #cgo noescape fused_up
// #cgo nocallback fused_up
// #cgo noescape fused_down
// #cgo nocallback fused_down
// #cgo noescape tree_fold
// #cgo nocallback tree_fold
// #cgo noescape tree_step
// #cgo nocallback tree_step
import "C"

import (
	"errors"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/dpmlgo/dpml/shm"
)

// Results of a call.
const (
	OK      = C.DPML_FUSED_OK
	Timeout = C.DPML_FUSED_TIMEOUT
	Aborted = C.DPML_FUSED_ABORTED
	Inter   = C.DPML_FUSED_INTER // the drop-in's inter-node step failed
)

// Layout is the node segment's layout, as the tree's C code reads it.
type Layout struct {
	Abort      *atomic.Uint64
	Out0       *atomic.Uint64 // out[0]'s line (its seq word; the payload follows)
	Data       unsafe.Pointer // the slots' area
	SlotStride int
	BufStride  int
	PPN        int
	Inline     int // bytes that travel in a line
}

// State is one communicator's C state (C memory: the drop-in keeps its
// address): the segment's layout for the tree's steps, and the fused
// call's waits and clearances. Not safe for concurrent use, like the
// communicator.
type State struct {
	f *C.dpml_fused
	x C.uintptr_t // f as an integer (fused_call)
}

// Tree is one rank's C view of one reduction tree.
type Tree struct {
	t *C.dpml_ftree
	x C.uintptr_t // t as an integer (fused_call)
}

var errNoMemory = errors.New("fused: no C memory")

// New allocates the state for layout l.
func New(l Layout) (*State, error) {
	f := (*C.dpml_fused)(C.calloc(1, C.size_t(unsafe.Sizeof(C.dpml_fused{}))))
	if f == nil {
		return nil, errNoMemory
	}
	f.abort = (*C.uint64_t)(unsafe.Pointer(l.Abort))
	f.out0 = (*C.uint64_t)(unsafe.Pointer(l.Out0))
	f.data = (*C.char)(l.Data)
	f.slot_stride, f.buf_stride = C.int64_t(l.SlotStride), C.int64_t(l.BufStride)
	f.ppn, f.inline_bytes = C.int(l.PPN), C.int(l.Inline)
	s := &State{f: f, x: C.uintptr_t(uintptr(unsafe.Pointer(f)))}
	s.SetWaits(shm.DefaultTimeout, 0, false, shm.DefaultSchedule())
	return s, nil
}

// SetWaits sets the waits: timeout, spin and noSleep as shm.Waiter's
// fields mean them (timeout < 0: forever; it must not be 0 here; spin 0:
// shm.DefaultSpin), and the back-off rounds of sched, whose Step the C
// waits follow round by round.
func (s *State) SetWaits(timeout time.Duration, spin int, noSleep bool, sched shm.Schedule) {
	f := s.f
	if spin == 0 {
		spin = shm.DefaultSpin
	}
	f.timeout_ns, f.spin, f.nosleep = C.int64_t(timeout), C.int(spin), 0
	if noSleep {
		f.nosleep = 1
	}
	f.yield_rounds, f.sleep_every = C.int(sched.YieldRounds), C.int(max(sched.SleepEvery, 1))
	f.clock_every, f.abort_every = C.int(max(sched.ClockEvery, 1)), C.int(max(sched.AbortEvery, 1))
	f.min_sleep_ns, f.max_sleep_ns = C.int64_t(max(sched.MinSleep, 1)), C.int64_t(sched.MaxSleep)
}

// Spin is the spin phase's length the C waits use (SetWaits).
func (s *State) Spin() int { return int(s.f.spin) }

// WaitStep is the C waits' decision for back-off round round, given the
// round before's sleep (dpml_wait_step): the same values as
// shm.Schedule.Step's for the schedule SetWaits set.
func (s *State) WaitStep(round int, prev time.Duration) (sleep time.Duration, clock bool) {
	var c C.int
	ns := C.dpml_wait_step(s.f, C.int(round), C.int64_t(prev), &c)
	return time.Duration(ns), c != 0
}

// SetInter lets the C caller run calls on nodes > 1 nodes itself, the
// root's inter-node step on the communicator whose MPI handle is h (in
// the form mpi.Comm.Handle gives; fused.h).
func (s *State) SetInter(nodes int, h uintptr) {
	s.f.nodes, s.f.inter = C.int(nodes), C.uintptr_t(h)
}

// NewTree makes a rank's view of one tree: its own flag line in the tree,
// its children's lines in fold order and their local ranks.
func (s *State) NewTree(my *atomic.Uint64, kids []*atomic.Uint64, kidRanks []int, me int, root bool) (*Tree, error) {
	if len(kids) != len(kidRanks) {
		return nil, errors.New("fused: a tree's children and their ranks differ in number")
	}
	t := C.dpml_ftree_new(C.int(len(kids)))
	if t == nil {
		return nil, errNoMemory
	}
	t.my = (*C.uint64_t)(unsafe.Pointer(my))
	lines := unsafe.Slice(t.kids, len(kids))
	ranks := unsafe.Slice(t.kid_rank, len(kids))
	for i, k := range kids {
		lines[i] = (*C.uint64_t)(unsafe.Pointer(k))
		ranks[i] = C.int(kidRanks[i])
	}
	t.me = C.int(me)
	if root {
		t.root = 1
	}
	return &Tree{t: t, x: C.uintptr_t(uintptr(unsafe.Pointer(t)))}, nil
}

// Free releases a tree.
func (t *Tree) Free() { C.free(unsafe.Pointer(t.t)) }

// Root reports whether the rank is the tree's root.
func (t *Tree) Root() bool { return t.t.root != 0 }

// Free releases the state.
func (s *State) Free() { C.free(unsafe.Pointer(s.f)) }

// Pointer is the state's C address (for the drop-in).
func (s *State) Pointer() unsafe.Pointer { return unsafe.Pointer(s.f) }

// Supports reports whether the C folds serve the element kind and op
// (numbered as mpi.Kind and mpi.Op): every pair dpml reduces.
func Supports(kind, op int) bool { return C.dpml_fused_ok(C.int(kind), C.int(op)) != 0 }

// Fold is the tree's fold (dpml_tree_fold): elements [lo, lo+n) of this
// rank's subtree in tree t at generation g, its own input own (the
// segment's element 0: caller's memory, holding no Go pointers) first,
// then each child's partial in fold order, into dst (segment memory, the
// place of element lo). inline: the plan's data travels in the flag
// lines. False when the C folds do not serve (kind, op) (Supports).
func (s *State) Fold(t *Tree, own, dst unsafe.Pointer, lo, n int, inline bool, kind, op int, g uint64) bool {
	return C.tree_fold(s.x, t.x, (*C.char)(own), C.uintptr_t(uintptr(dst)), C.int(lo), C.int(n), cbool(inline), C.int(kind), C.int(op), C.uint64_t(g)) != 0
}

// Step is a non-root rank's step in tree t once its children there
// reached g (dpml_tree_step): Fold into its own partial, then its flag
// line in the tree raised to g.
func (s *State) Step(t *Tree, own unsafe.Pointer, lo, n int, inline bool, kind, op int, g uint64) bool {
	return C.tree_step(s.x, t.x, (*C.char)(own), C.int(lo), C.int(n), cbool(inline), C.int(kind), C.int(op), C.uint64_t(g)) != 0
}

// TreeResult is where the roots fold the node's result of generation g
// (dpml_tree_result).
func (s *State) TreeResult(inline bool, g uint64) unsafe.Pointer {
	return C.dpml_tree_result(s.f, cbool(inline), C.uint64_t(g))
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// Call runs a whole single-node call of generation g: send (nil: in place)
// and recv of count elements.
func (s *State) Call(t *Tree, send, recv unsafe.Pointer, count, kind, op int, g uint64) int {
	return int(C.fused_call(s.x, t.x, (*C.char)(send), (*C.char)(recv), C.int(count), C.int(kind), C.int(op), C.uint64_t(g)))
}

// Up is the first half of a call on several nodes (fused.h).
func (s *State) Up(t *Tree, send, recv unsafe.Pointer, count, kind, op int, g uint64) int {
	return int(C.fused_up(s.x, t.x, (*C.char)(send), (*C.char)(recv), C.int(count), C.int(kind), C.int(op), C.uint64_t(g)))
}

// Result is where the root folds the node's result of generation g.
func (s *State) Result(bytes int, g uint64) unsafe.Pointer {
	return C.fused_result(s.x, C.int(bytes), C.uint64_t(g))
}

// Down is the second half (fused.h).
func (s *State) Down(t *Tree, recv unsafe.Pointer, bytes int, g uint64) int {
	return int(C.fused_down(s.x, t.x, (*C.char)(recv), C.int(bytes), C.uint64_t(g)))
}

// Failure is the failed wait of the last call that returned an error.
type Failure struct {
	Step       int // 1: a child, 2: the result, 3: the inter-node step
	Index      int // the child's local rank, or the MPI error code (step 3)
	Want, Seen uint64
	AbortWord  uint64
}

// Failure returns the last failed wait.
func (s *State) Failure() Failure {
	f := s.f
	return Failure{Step: int(f.fail_step), Index: int(f.fail_index), Want: uint64(f.fail_want), Seen: uint64(f.fail_seen), AbortWord: uint64(f.fail_abort)}
}

// Grant is the drop-in's clearance (fused.h): the next n calls of exactly
// (count, kind, op) may run tree t at generations gen+1, gen+2, ..., or,
// with t nil, the MPI library's allreduce. timed: the calls are one block
// of the learner's confirmation, whose calls' entries and exits
// dpml_fused_run stamps as the drop-in runs them (TakeBlock).
func (s *State) Grant(n int64, t *Tree, count, kind, op int, gen uint64, timed bool) {
	f := s.f
	f.tree, f.native = nil, 1
	if t != nil {
		f.tree, f.native = t.t, 0
	}
	f.count, f.kind, f.op, f.gen = C.int(count), C.int(kind), C.int(op), C.uint64_t(gen)
	f.timed, f.smp_n = 0, 0
	if timed {
		f.timed = 1
	}
	f.budget = C.int64_t(n)
}

// Sample makes the clearance Grant set (not a timed one) stamp n stride
// samples, its calls at, at+stride, ... (fused.h, smp_n); TakeBlock then
// returns their stamps.
func (s *State) Sample(at, stride int64, n int) {
	f := s.f
	f.smp_at, f.smp_stride, f.smp_n = C.int64_t(at), C.int64_t(max(stride, 1)), C.int(min(n, MaxBlock))
}

// MaxBlock is the longest timed clearance the drop-in stamps call by call.
const MaxBlock = C.DPML_FUSED_MAX_BLOCK

// TakeBlock copies the drop-in's stamps of a timed clearance's first n
// calls (CLOCK_MONOTONIC, ns: call j's entry and exit) into entry and
// exit, n at most MaxBlock and their lengths, and returns n.
func (s *State) TakeBlock(n int, entry, exit []int64) int {
	f := s.f
	n = min(n, MaxBlock, len(entry), len(exit))
	for j := range n {
		entry[j], exit[j] = int64(f.blk_entry_ns[j]), int64(f.blk_exit_ns[j])
	}
	return n
}

// Revoke ends the clearance and every parked one.
func (s *State) Revoke() {
	s.f.budget, s.f.timed, s.f.smp_n = 0, 0, 0
	for i := range int(s.f.nparked) {
		s.f.parked[i].budget = 0
	}
}

// Parked is the most parked clearances a state holds (DPML_FUSED_PARKED).
const Parked = C.DPML_FUSED_PARKED

// Park sets parked clearance i (fused.h, dpml_fpark), i < Parked: the next
// n calls of (kind, op) with a count in [lo, hi] may run tree t at the
// communicator's next generations, or with t nil the MPI library's
// allreduce. n 0 keeps it but lets no call run.
func (s *State) Park(i int, n int64, t *Tree, kind, op, lo, hi int) {
	p := &s.f.parked[i]
	p.tree, p.native = nil, 1
	if t != nil {
		p.tree, p.native = t.t, 0
	}
	p.kind, p.op, p.lo, p.hi = C.int(kind), C.int(op), C.int(lo), C.int(hi)
	p.budget = C.int64_t(n)
	s.f.nparked = C.int(max(int(s.f.nparked), i+1))
}

// ParkedBudget returns the calls parked clearance i may still run.
func (s *State) ParkedBudget(i int) int64 { return int64(s.f.parked[i].budget) }

// ParkedRan returns the calls parked clearance i ran since the last
// TakeParked.
func (s *State) ParkedRan(i int) uint64 { return uint64(s.f.parked[i].ran) }

// TakeParked zeroes the counts of the calls the parked clearances ran;
// their budgets are what the calls left.
func (s *State) TakeParked() {
	for i := range int(s.f.nparked) {
		s.f.parked[i].ran = 0
	}
	s.f.parked_ran = 0
}

// SetGen sets the communicator's generation the C layer's next call
// follows (Grant sets it too).
func (s *State) SetGen(gen uint64) { s.f.gen = C.uint64_t(gen) }

// RevokeExact ends the clearance of exact arguments only.
func (s *State) RevokeExact() { s.f.budget, s.f.timed, s.f.smp_n = 0, 0, 0 }

// LastParked returns 1 + the index of the parked clearance that ran the
// latest call the C layer ran, and that call's count; 0 when the exact
// clearance ran it or Go ran the communicator's latest call (ClearLast).
func (s *State) LastParked() (i, count int) { return int(s.f.last_parked), int(s.f.last_count) }

// ClearLast notes that Go ran the communicator's latest call.
func (s *State) ClearLast() { s.f.last_parked = 0 }

// Ran returns the calls the drop-in ran since the last TakeRan and the
// generation after them.
func (s *State) Ran() (n uint64, gen uint64) { return uint64(s.f.ran), uint64(s.f.gen) }

// TakeEntry returns and clears the drop-in's clock (CLOCK_MONOTONIC, ns)
// at the entry of the call it routed through Go now, 0 if none.
func (s *State) TakeEntry() int64 {
	e := int64(s.f.c_entry_ns)
	s.f.c_entry_ns = 0
	return e
}

// Pending reports whether the drop-in ran calls since the last TakeRan
// (the exact clearance's) or TakeParked (the parked ones').
func (s *State) Pending() bool { return s.f.ran != 0 || s.f.parked_ran != 0 }

// TakeRan zeroes the count of calls the drop-in ran and ends the clearance.
func (s *State) TakeRan() { s.f.ran, s.f.budget, s.f.timed, s.f.smp_n = 0, 0, 0, 0 }
