package fused

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/shm"
)

// The test's own node segment: lines, then the two buffer sets of ppn
// slots and a result each, in anonymous memory (not Go's), as the C code
// reads the engine's.
const (
	line      = 64
	testSlot  = 64 << 10
	testLines = 256
)

type testSeg struct {
	mem       []byte
	st        *State
	ppn       int
	data      unsafe.Pointer
	bufStride int
}

func newTestSeg(t *testing.T, ppn int) *testSeg {
	t.Helper()
	size := testLines*line + 2*(ppn+1)*testSlot
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	s := &testSeg{mem: mem, ppn: ppn, data: unsafe.Pointer(&mem[testLines*line]), bufStride: (ppn + 1) * testSlot}
	s.st, err = New(Layout{Abort: s.line(0), Out0: s.line(1), Data: s.data, SlotStride: testSlot, BufStride: s.bufStride, PPN: ppn, Inline: line - 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.st.Free()
		_ = syscall.Munmap(mem)
	})
	return s
}

// line returns line i's flag word (lines 0 and 1: abort and out[0]; a
// tree's lines from 2 on).
func (s *testSeg) line(i int) *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(&s.mem[i*line])) }

// place is where the test expects rank i's partial (i == ppn: the result)
// of generation g, by the layout: the payload of its line when inline,
// else its slot of buffer set g mod 2.
func (s *testSeg) place(i int, ln *atomic.Uint64, inline bool, g uint64) unsafe.Pointer {
	if inline {
		return unsafe.Add(unsafe.Pointer(ln), 8)
	}
	return unsafe.Add(s.data, int(g&1)*s.bufStride+i*testSlot)
}

// oracle is Go's arithmetic for op on T, independent of the C code: the
// MPI meaning of each op, as the language computes it.
func oracle[T mpi.Number](op mpi.Op) func(a, b T) T {
	switch op {
	case mpi.OpSum:
		return func(a, b T) T { return a + b }
	case mpi.OpProd:
		return func(a, b T) T { return a * b }
	}
	var z T
	switch any(z).(type) {
	case float32:
		return any(ordered[float32](op)).(func(a, b T) T)
	case float64:
		return any(ordered[float64](op)).(func(a, b T) T)
	case int8:
		return any(integer[int8](op)).(func(a, b T) T)
	case int16:
		return any(integer[int16](op)).(func(a, b T) T)
	case int32:
		return any(integer[int32](op)).(func(a, b T) T)
	case int64:
		return any(integer[int64](op)).(func(a, b T) T)
	case uint8:
		return any(integer[uint8](op)).(func(a, b T) T)
	case uint16:
		return any(integer[uint16](op)).(func(a, b T) T)
	case uint32:
		return any(integer[uint32](op)).(func(a, b T) T)
	case uint64:
		return any(integer[uint64](op)).(func(a, b T) T)
	}
	return nil
}

func ordered[E int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | float32 | float64](op mpi.Op) func(a, b E) E {
	switch op {
	case mpi.OpMin:
		return func(a, b E) E {
			if b < a {
				return b
			}
			return a
		}
	case mpi.OpMax:
		return func(a, b E) E {
			if b > a {
				return b
			}
			return a
		}
	}
	return nil
}

func integer[E int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64](op mpi.Op) func(a, b E) E {
	truth := func(b bool) E {
		if b {
			return 1
		}
		return 0
	}
	switch op {
	case mpi.OpLand:
		return func(a, b E) E { return truth(a != 0 && b != 0) }
	case mpi.OpLor:
		return func(a, b E) E { return truth(a != 0 || b != 0) }
	case mpi.OpLxor:
		return func(a, b E) E { return truth((a != 0) != (b != 0)) }
	case mpi.OpBand:
		return func(a, b E) E { return a & b }
	case mpi.OpBor:
		return func(a, b E) E { return a | b }
	case mpi.OpBxor:
		return func(a, b E) E { return a ^ b }
	}
	return ordered[E](op)
}

// fill sets v to values of every class: random bits (integers: the whole
// range, so sums and products wrap), and for floats also zeros of both
// signs, infinities, NaNs, subnormals, the largest values and ordinary
// ones of mixed magnitude.
func fill[T mpi.Number](r *rand.Rand, v []T) {
	f64 := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 5e-324, -5e-324,
		math.MaxFloat64, -math.MaxFloat64, 1, -1, 0.1, 3}
	f32 := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		1e-45, -1e-45, math.MaxFloat32, -math.MaxFloat32, 1, -1, 0.1, 3}
	for i := range v {
		switch p := any(&v[i]).(type) {
		case *float32:
			if r.IntN(4) == 0 {
				*p = f32[r.IntN(len(f32))]
			} else {
				*p = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(9)-4)))
			}
		case *float64:
			if r.IntN(4) == 0 {
				*p = f64[r.IntN(len(f64))]
			} else {
				*p = r.NormFloat64() * math.Pow(10, float64(r.IntN(61)-30))
			}
		case *complex64:
			var re, im [1]float32
			fill(r, re[:])
			fill(r, im[:])
			*p = complex(re[0], im[0])
		case *complex128:
			var re, im [1]float64
			fill(r, re[:])
			fill(r, im[:])
			*p = complex(re[0], im[0])
		default:
			b := unsafe.Slice((*byte)(unsafe.Pointer(&v[i])), unsafe.Sizeof(v[i]))
			for j := range b {
				b[j] = byte(r.Uint32())
			}
		}
	}
}

// same reports whether a and b are the same bits; with loose, any two NaNs
// (or complex values with NaN in the same parts) match: which operand's NaN
// payload a sum keeps is the instruction's operand order, which neither
// compiler fixes.
func same[T mpi.Number](a, b T, loose bool) bool {
	if loose {
		switch x := any(a).(type) {
		case float32:
			y := any(b).(float32)
			if x != x && y != y {
				return true
			}
		case float64:
			y := any(b).(float64)
			if x != x && y != y {
				return true
			}
		case complex64:
			y := any(b).(complex64)
			return same(real(x), real(y), true) && same(imag(x), imag(y), true)
		case complex128:
			y := any(b).(complex128)
			return same(real(x), real(y), true) && same(imag(x), imag(y), true)
		}
	}
	sa := unsafe.Slice((*byte)(unsafe.Pointer(&a)), unsafe.Sizeof(a))
	sb := unsafe.Slice((*byte)(unsafe.Pointer(&b)), unsafe.Sizeof(b))
	return string(sa) == string(sb)
}

// checkFold runs the tree's C steps on T for op: a root's fold
// (State.Fold) and a non-root rank's step (State.Step) over elements
// [lo, lo+n) of a segment, with nkids children folded in a shuffled
// order, inline when it fits, and compares every element with Go's
// arithmetic folded in the same order, bit for bit.
func checkFold[T mpi.Number](t *testing.T, s *testSeg, r *rand.Rand, op mpi.Op, nkids, lo, n int, g uint64) {
	t.Helper()
	f := oracle[T](op)
	kind := int(mpi.KindOf[T]())
	var z T
	es := int(unsafe.Sizeof(z))
	inline := (lo+n)*es <= line-8
	loose := (op == mpi.OpSum || op == mpi.OpProd) && !mpi.Kind(kind).IsInteger()
	// Ranks 1..nkids are the children, in a shuffled fold order; rank
	// me = nkids+1 folds them (its line: 2+me). Each child's flag line is
	// 2+rank.
	order := r.Perm(nkids)
	kids := make([]*atomic.Uint64, nkids)
	ranks := make([]int, nkids)
	for i, k := range order {
		ranks[i] = k + 1
		kids[i] = s.line(2 + k + 1)
	}
	me := nkids + 1
	own := make([]T, lo+n)
	fill(r, own)
	want := make([]T, lo+n)
	copy(want, own)
	for i := range nkids {
		part := unsafe.Slice((*T)(s.place(ranks[i], kids[i], inline, g)), lo+n)
		fill(r, part)
		for e := lo; e < lo+n; e++ {
			want[e] = f(want[e], part[e])
		}
	}
	for _, root := range []bool{true, false} {
		tr, err := s.st.NewTree(s.line(2+me), kids, ranks, me, root)
		if err != nil {
			t.Fatal(err)
		}
		var got []T
		if root {
			dst := s.st.TreeResult(inline, g)
			if wantRes := s.place(s.ppn, s.line(1), inline, g); dst != wantRes {
				t.Fatalf("result of generation %d (inline %v) at %p, want %p", g, inline, dst, wantRes)
			}
			if !s.st.Fold(tr, unsafe.Pointer(&own[0]), unsafe.Add(dst, lo*es), lo, n, inline, kind, int(op), g) {
				t.Fatalf("%v %v: no fold", mpi.Kind(kind), op)
			}
			got = unsafe.Slice((*T)(dst), lo+n)
		} else {
			if !s.st.Step(tr, unsafe.Pointer(&own[0]), lo, n, inline, kind, int(op), g) {
				t.Fatalf("%v %v: no fold", mpi.Kind(kind), op)
			}
			if seen := s.line(2 + me).Load(); seen != g {
				t.Fatalf("step left its flag at %d, want %d", seen, g)
			}
			got = unsafe.Slice((*T)(s.place(me, s.line(2+me), inline, g)), lo+n)
		}
		tr.Free()
		for e := lo; e < lo+n; e++ {
			if !same(got[e], want[e], loose) {
				t.Fatalf("%v %v, %d children, elements [%d, %d), root %v, inline %v: element %d is %v, want %v",
					mpi.Kind(kind), op, nkids, lo, lo+n, root, inline, e, got[e], want[e])
			}
		}
	}
}

// TestTreeFold holds the tree's C fold, the one the executor's tree
// transport and the fused call both run, to Go's arithmetic for every
// kind and op: inline and through the slots, several children and more
// than one pass of them (FOLD_GROUP), spans longer than a block
// (FOLD_BLOCK) and at offsets (a partition of an l-tree plan).
//
// Mutation checks (each fails it): the children folded in reverse order
// in dpml_tree_fold; only the first child folded; CPROD's imaginary part
// as ar*bi - ai*br; no complex product in COMPLEX_OPS.
func TestTreeFold(t *testing.T) {
	const maxKids = 40
	s := newTestSeg(t, maxKids+2)
	r := rand.New(rand.NewPCG(1, 2))
	shapes := []struct{ kids, lo, n int }{
		{0, 0, 3}, {1, 0, 1}, {3, 0, 5}, {2, 3, 4}, {5, 8, 300}, {17, 0, 33}, {maxKids, 5, 3000},
	}
	for _, op := range mpi.Ops() {
		for _, k := range mpi.Kinds() {
			if got := Supports(int(k), int(op)); got != mpi.OpValidFor(op, k) {
				t.Errorf("Supports(%v, %v) = %v, want %v (every pair MPI defines)", k, op, got, !got)
			}
		}
		for i, sh := range shapes {
			g := uint64(i + 1)
			run := func(ok bool, f func(*testing.T, *testSeg, *rand.Rand, mpi.Op, int, int, int, uint64)) {
				if ok {
					f(t, s, r, op, sh.kids, sh.lo, sh.n, g)
				}
			}
			run(mpi.CheckOp[int8](op) == nil, checkFold[int8])
			run(mpi.CheckOp[int16](op) == nil, checkFold[int16])
			run(mpi.CheckOp[int32](op) == nil, checkFold[int32])
			run(mpi.CheckOp[int64](op) == nil, checkFold[int64])
			run(mpi.CheckOp[uint8](op) == nil, checkFold[uint8])
			run(mpi.CheckOp[uint16](op) == nil, checkFold[uint16])
			run(mpi.CheckOp[uint32](op) == nil, checkFold[uint32])
			run(mpi.CheckOp[uint64](op) == nil, checkFold[uint64])
			run(mpi.CheckOp[float32](op) == nil, checkFold[float32])
			run(mpi.CheckOp[float64](op) == nil, checkFold[float64])
			run(mpi.CheckOp[complex64](op) == nil, checkFold[complex64])
			run(mpi.CheckOp[complex128](op) == nil, checkFold[complex128])
		}
	}
}

// TestWaitStepFollowsSchedule checks the C waits' back-off against
// shm.Schedule.Step, round by round, for the default schedule and others
// whose every number differs, with and without sleeping: the schedule is
// defined once (shm) and the C loop decides each round by it.
//
// Mutation check: C's wait step doubling every round (dropping its
// sleep_every test) fails at the first sleep round of the default
// schedule; reading DEFAULT-like constants instead of the state's fields
// fails the other schedules; SetWaits passing spin 0 through unresolved
// fails the spin check.
func TestWaitStepFollowsSchedule(t *testing.T) {
	st, err := New(Layout{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Free()
	schedules := []shm.Schedule{
		shm.DefaultSchedule(),
		{YieldRounds: 3, MinSleep: 2 * time.Microsecond, MaxSleep: 16 * time.Microsecond, SleepEvery: 2, ClockEvery: 5, AbortEvery: 7},
		{YieldRounds: 0, MinSleep: time.Microsecond, MaxSleep: time.Microsecond, SleepEvery: 1, ClockEvery: 1, AbortEvery: 1},
		{YieldRounds: 10, MinSleep: 5 * time.Microsecond, MaxSleep: 45 * time.Microsecond, SleepEvery: 3, ClockEvery: 4, AbortEvery: 2},
	}
	// The spin phase: 0 is shm.DefaultSpin, which C does not know.
	for _, c := range []struct{ set, want int }{{0, shm.DefaultSpin}, {-1, -1}, {5, 5}} {
		st.SetWaits(time.Second, c.set, false, shm.DefaultSchedule())
		if got := st.Spin(); got != c.want {
			t.Errorf("SetWaits spin %d: C spins %d, want %d", c.set, got, c.want)
		}
	}
	for i, sc := range schedules {
		for _, noSleep := range []bool{false, true} {
			st.SetWaits(time.Second, 0, noSleep, sc)
			var goPrev, cPrev time.Duration
			sleeps := 0
			for r := 1; r <= 2000; r++ {
				gs, gc := sc.Step(r, noSleep, goPrev)
				cs, cc := st.WaitStep(r, cPrev)
				if gs != cs || gc != cc {
					t.Fatalf("schedule %d, noSleep %v, round %d: C sleeps %v (clock %v), shm.Schedule.Step %v (clock %v)", i, noSleep, r, cs, cc, gs, gc)
				}
				if gs > 0 {
					sleeps++
				}
				goPrev, cPrev = gs, cs
			}
			if want := !noSleep; (sleeps > 0) != want {
				t.Errorf("schedule %d, noSleep %v: %d sleeping rounds of 2000", i, noSleep, sleeps)
			}
		}
	}
}
