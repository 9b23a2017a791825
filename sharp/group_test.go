package sharp

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/internal/testkit/fakesharp"
	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/shm"
)

// input is member r's element i for op: small integers, exact in every
// type, so any reduction order gives the same bits. For the logical ops
// some are zero; for the bitwise ones they differ in several bits.
func input(op mpi.Op, r, i int) int64 {
	switch op {
	case mpi.OpLand, mpi.OpLor, mpi.OpLxor:
		if (r+i)%3 == 0 {
			return 0
		}
		return int64(1 + (r*i)%2)
	case mpi.OpBand, mpi.OpBor, mpi.OpBxor:
		return int64((r*37 + i*11) % 64)
	}
	return int64((r*7+i*3)%11 + 1)
}

// expected is the oracle: the op over members 0..size-1 of input, in
// plain integer arithmetic (independent of the code under test and of the
// fake library's C reduction).
func expected(op mpi.Op, size, i int) int64 {
	acc := input(op, 0, i)
	b := func(v int64) bool { return v != 0 }
	for r := 1; r < size; r++ {
		x := input(op, r, i)
		switch op {
		case mpi.OpSum:
			acc += x
		case mpi.OpProd:
			acc *= x
		case mpi.OpMin:
			acc = min(acc, x)
		case mpi.OpMax:
			acc = max(acc, x)
		case mpi.OpLand:
			acc = boolInt(b(acc) && b(x))
		case mpi.OpLor:
			acc = boolInt(b(acc) || b(x))
		case mpi.OpLxor:
			acc = boolInt(b(acc) != b(x))
		case mpi.OpBand:
			acc &= x
		case mpi.OpBor:
			acc |= x
		case mpi.OpBxor:
			acc ^= x
		}
	}
	if op == mpi.OpLand || op == mpi.OpLor || op == mpi.OpLxor {
		acc = boolInt(acc != 0)
	}
	return acc
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// checkKind runs every op g supports on n elements of T and compares with
// the oracle. It returns how many (op) combinations ran.
func checkKind[T mpi.Number](t *testing.T, g *Group, w *mpi.Comm, n int, wait *shm.Waiter) int {
	t.Helper()
	k := mpi.KindOf[T]()
	ran := 0
	for _, op := range mpi.Ops() {
		if g.Caps().Supports(k, op) != nil {
			continue
		}
		buf := make([]T, n)
		for i := range buf {
			buf[i] = conv[T](input(op, w.Rank(), i))
		}
		if err := g.Allreduce(unsafe.Pointer(&buf[0]), n, k, op, wait); err != nil {
			t.Fatalf("%v %v n=%d: %v", k, op, n, err)
		}
		for i, v := range buf {
			if want := conv[T](expected(op, w.Size(), i)); v != want {
				t.Fatalf("%v %v n=%d: element %d = %v, want %v", k, op, n, i, v, want)
			}
		}
		ran++
	}
	return ran
}

// conv converts a small integer to T (complex types included).
func conv[T mpi.Number](v int64) T {
	var z T
	switch p := any(&z).(type) {
	case *int8:
		*p = int8(v)
	case *int16:
		*p = int16(v)
	case *int32:
		*p = int32(v)
	case *int64:
		*p = v
	case *uint8:
		*p = uint8(v)
	case *uint16:
		*p = uint16(v)
	case *uint32:
		*p = uint32(v)
	case *uint64:
		*p = uint64(v)
	case *float32:
		*p = float32(v)
	case *float64:
		*p = float64(v)
	case *complex64:
		*p = complex(float32(v), 0)
	case *complex128:
		*p = complex(float64(v), 0)
	}
	return z
}

func checkAll(t *testing.T, g *Group, w *mpi.Comm, n int, wait *shm.Waiter) int {
	return checkKind[int8](t, g, w, n, wait) + checkKind[int16](t, g, w, n, wait) + checkKind[int32](t, g, w, n, wait) +
		checkKind[int64](t, g, w, n, wait) + checkKind[uint8](t, g, w, n, wait) + checkKind[uint16](t, g, w, n, wait) +
		checkKind[uint32](t, g, w, n, wait) + checkKind[uint64](t, g, w, n, wait) + checkKind[float32](t, g, w, n, wait) +
		checkKind[float64](t, g, w, n, wait) + checkKind[complex64](t, g, w, n, wait) + checkKind[complex128](t, g, w, n, wait)
}

func shmLeft(t *testing.T) []string {
	t.Helper()
	m, err := filepath.Glob("/dev/shm/dpml-" + os.Getenv(config.Job) + "-fakesharp*")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestLibsharpGroup runs the libsharp backend on the emulated switch: one
// process on each of 3 fake nodes, a payload of 64 bytes and 2 operations
// in flight, so that Allreduce must cut buffers and bound its window (the
// fake refuses anything beyond its limits). Every type and op the agreed
// caps offer is checked against the oracle; what SHArP lacks (complex
// numbers, prod) is refused as not supported.
func TestLibsharpGroup(t *testing.T) {
	lib := fakesharp.ForTest(t)
	t.Setenv(config.FakePayload, "64")
	t.Setenv(config.FakeOSTs, "2")
	mpitest.Run(t, 3, 1, func(t *testing.T, w *mpi.Comm) {
		g, err := Libsharp{Path: lib}.Attach(w, AttachOptions{MaxBytes: 1024, Timeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if left := shmLeft(t); len(left) > 0 {
			t.Errorf("the switch's segment is still named after attach: %v", left)
		}
		c := g.Caps()
		if !g.Emulated() || g.Backend() != "libsharp" || c.MaxPayload != 64 || c.MaxOutstanding != 2 || !c.OnePerNode {
			t.Fatalf("group: emulated %v, backend %s, caps %+v", g.Emulated(), g.Backend(), c)
		}
		wait := &shm.Waiter{Timeout: 20 * time.Second}
		if ran := checkAll(t, g, w, 37, wait); ran != 8*9+2*3 { // 8 integer kinds x 9 ops, 2 float kinds x sum,min,max
			t.Errorf("%d combinations ran, want %d", ran, 8*9+2*3)
		}
		// Whole staging buffer, 16 operations of 64 bytes.
		if ran := checkKind[float64](t, g, w, 128, wait); ran != 3 {
			t.Errorf("float64: %d ops", ran)
		}
		buf := make([]int32, 8)
		for _, bad := range []struct {
			n    int
			k    mpi.Kind
			op   mpi.Op
			what string
		}{
			{8, mpi.KindInt32, mpi.OpProd, "prod"},
			{4, mpi.KindComplex64, mpi.OpSum, "complex"},
			{2000, mpi.KindInt8, mpi.OpSum, "over MaxBytes"},
		} {
			p := unsafe.Pointer(&buf[0])
			if bad.n > len(buf) {
				p = unsafe.Pointer(&make([]byte, bad.n)[0])
			}
			if err := g.Allreduce(p, bad.n, bad.k, bad.op, wait); !Fallback(err) {
				t.Errorf("%s: %v, want a fallback error", bad.what, err)
			}
		}

		// The non-blocking interface: two operations in flight, a third
		// refused, one over the payload refused.
		ops := g.Ops()
		a, b := []int64{int64(w.Rank()), 1}, []int64{2, int64(w.Rank())}
		ra, err := g.Start(unsafe.Pointer(&a[0]), 2, mpi.KindInt64, mpi.OpSum)
		if err != nil {
			t.Fatal(err)
		}
		rb, err := g.Start(unsafe.Pointer(&b[0]), 2, mpi.KindInt64, mpi.OpMax)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Start(unsafe.Pointer(&buf[0]), 1, mpi.KindInt32, mpi.OpSum); !Fallback(err) {
			t.Errorf("third operation in flight: %v", err)
		}
		for _, r := range []*Request{ra, rb} {
			if err := wait.Until(r.Test); err != nil {
				t.Fatal(err)
			}
		}
		if a[0] != 0+1+2 || a[1] != 3 || b[0] != 2 || b[1] != 2 {
			t.Errorf("Start results: %v %v", a, b)
		}
		if g.Ops() != ops+2 {
			t.Errorf("two operations completed, Ops went from %d to %d", ops, g.Ops())
		}
		// 128 float64 in 64-byte operations: 16 of them.
		ops = g.Ops()
		if checkKind[float64](t, g, w, 128, wait); g.Ops() != ops+3*16 {
			t.Errorf("3 ops x 16 operations: Ops went from %d to %d", ops, g.Ops())
		}
		big := make([]int64, 9) // 72 bytes > 64
		if _, err := g.Start(unsafe.Pointer(&big[0]), 9, mpi.KindInt64, mpi.OpSum); !Fallback(err) {
			t.Errorf("operation over the payload: %v", err)
		}

		// The emulation enforces its limits itself: bypassing the
		// group's checks, the fake refuses the payload (an error that is
		// not a fallback: the library said no after the call was made).
		st := g.impl.staging()
		if _, err := g.impl.start(unsafe.Pointer(&st[0]), 9, mpi.KindInt64, mpi.OpSum); err == nil || Fallback(err) {
			t.Errorf("fake accepted 72 bytes over a 64-byte payload: %v", err)
		}
		var live []reqImpl
		for range 2 {
			r, err := g.impl.start(unsafe.Pointer(&st[0]), 1, mpi.KindInt64, mpi.OpSum)
			if err != nil {
				t.Fatal(err)
			}
			live = append(live, r)
		}
		if _, err := g.impl.start(unsafe.Pointer(&st[0]), 1, mpi.KindInt64, mpi.OpSum); err == nil {
			t.Error("fake accepted a third outstanding operation")
		}
		for _, r := range live {
			if err := wait.Until(r.test); err != nil {
				t.Fatal(err)
			}
			r.free()
		}
		if err := g.Close(true); err != nil {
			t.Fatal(err)
		}
		// The switch exits once every member has closed: then only the
		// ranks map the library.
		if err := w.Barrier(); err != nil {
			t.Fatal(err)
		}
		// Up to a minute: the switch looks at its members every 10 ms and
		// exits at once, but an oversubscribed machine may run it much
		// later than that (a one-second wait was a guess it could outrun).
		n := 0
		for end := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
			if n = len(fakesharp.Mappers(lib)) + 1; n <= w.Size() || !time.Now().Before(end) {
				break
			}
		}
		if n != w.Size() {
			t.Errorf("%d processes map the emulated library after Close, want the %d ranks", n, w.Size())
		}
	})
	checkNoSwitch(t, lib)
}

// TestMPIBackend: the mpi backend (the leader communicator's own
// allreduce) against the same oracle, complex numbers and prod included.
func TestMPIBackend(t *testing.T) {
	mpitest.Run(t, 2, 1, func(t *testing.T, w *mpi.Comm) {
		g, err := MPI{}.Attach(w, AttachOptions{MaxBytes: 4096})
		if err != nil {
			t.Fatal(err)
		}
		wait := &shm.Waiter{Timeout: 20 * time.Second}
		if ran := checkAll(t, g, w, 19, wait); ran != 8*10+2*4+2*2 {
			t.Errorf("%d combinations ran", ran)
		}
		if g.Emulated() || g.Caps().OnePerNode || g.Caps().MaxPayload != 0 {
			t.Errorf("mpi group: %+v", g.Caps())
		}
		if err := g.Close(true); err != nil {
			t.Fatal(err)
		}
	})
}

// TestAttachFailsTogether: a library missing everywhere, or on one member
// only, is ErrUnavailable on every member (none is left waiting in a
// collective of the sequence).
func TestAttachFailsTogether(t *testing.T) {
	lib := fakesharp.ForTest(t)
	mpitest.Run(t, 2, 1, func(t *testing.T, w *mpi.Comm) {
		_, err := Libsharp{Path: "/nonexistent/libsharp_coll.so"}.Attach(w, AttachOptions{})
		if !errors.Is(err, ErrUnavailable) || !Fallback(err) {
			t.Fatalf("absent library: %v", err)
		}
		path := lib
		if w.Rank() == 1 {
			path = "/nonexistent/libsharp_coll.so"
		}
		_, err = Libsharp{Path: path}.Attach(w, AttachOptions{})
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("library absent on rank 1: %v", err)
		}
		if w.Rank() == 0 && !errors.Is(err, ErrElsewhere) || w.Rank() == 1 && errors.Is(err, ErrElsewhere) {
			t.Errorf("rank 0's error: %v", err)
		}
	})
}

// TestSwitchKilled: the emulated switch dies after 3 operations. The
// operation in flight then never completes: Allreduce fails with
// ErrFailed after the wait's timeout on every member (no hang), and the
// next one is refused at once (the switch is known to be gone).
//
// Only the wait that must time out has the short timeout: the operations
// before the kill wait with a generous one, as nothing but an
// oversubscribed machine could make them slow. The one clock bound tells
// the 2 s timeout from the waiter's 60 s default, nothing about speed.
//
// Mutation check: Allreduce waiting with a copy of w whose Timeout is 0
// (the default) fails after a minute.
func TestSwitchKilled(t *testing.T) {
	lib := fakesharp.ForTest(t)
	t.Setenv(config.FakeKill, "3")
	mpitest.Run(t, 2, 1, func(t *testing.T, w *mpi.Comm) {
		g, err := Libsharp{Path: lib}.Attach(w, AttachOptions{MaxBytes: 4096})
		if err != nil {
			t.Fatal(err)
		}
		before := &shm.Waiter{Timeout: 20 * time.Second}
		wait := &shm.Waiter{Timeout: 2 * time.Second}
		buf := []int32{1, 2, 3}
		for i := range 3 {
			if err := g.Allreduce(unsafe.Pointer(&buf[0]), 3, mpi.KindInt32, mpi.OpSum, before); err != nil {
				t.Fatalf("operation %d before the kill: %v", i, err)
			}
		}
		t0 := time.Now()
		err = g.Allreduce(unsafe.Pointer(&buf[0]), 3, mpi.KindInt32, mpi.OpSum, wait)
		if !errors.Is(err, ErrFailed) || !errors.Is(err, shm.ErrTimeout) || Fallback(err) {
			t.Fatalf("operation after the kill: %v", err)
		}
		if d := time.Since(t0); d >= shm.DefaultTimeout {
			t.Errorf("the failure took %v with a 2 s timeout: the wait ran to the default %v", d, shm.DefaultTimeout)
		}
		err = g.Allreduce(unsafe.Pointer(&buf[0]), 3, mpi.KindInt32, mpi.OpSum, wait)
		if !errors.Is(err, ErrFailed) || errors.Is(err, shm.ErrTimeout) || !strings.Contains(err.Error(), "gone") {
			t.Fatalf("operation on a dead switch: %v", err)
		}
		if err := g.Close(false); err != nil {
			t.Fatal(err)
		}
		if left := shmLeft(t); len(left) > 0 {
			t.Errorf("left in /dev/shm: %v", left)
		}
		t.Logf("rank %d: %v", w.Rank(), err)
	})
	checkNoSwitch(t, lib)
}

// checkNoSwitch is fakesharp.CheckNoSwitch, which allows the switches one
// second to exit after the job, once they have had up to a minute (see
// TestLibsharpGroup).
func checkNoSwitch(t *testing.T, lib string) {
	t.Helper()
	for end := time.Now().Add(time.Minute); !mpitest.InRank() && len(fakesharp.Mappers(lib)) > 0 && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
	}
	fakesharp.CheckNoSwitch(t, lib)
}
