package mpi_test

import (
	"errors"
	"math"
	"os"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/dpmlgo/dpml/mpi"
)

// Single-rank tests run under plain "go test" as an MPI singleton. go test
// runs each test on its own goroutine, hence ThreadSerialized. Multi-rank
// tests (multirank_test.go) initialize through mpitest instead, so MPI is
// initialized lazily here rather than in TestMain.
func TestMain(m *testing.M) {
	code := m.Run()
	if mpi.Initialized() && !mpi.Finalized() {
		if err := mpi.Finalize(); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

func initOnce(t *testing.T) *mpi.Comm {
	t.Helper()
	if _, err := mpi.InitThread(mpi.ThreadSerialized); err != nil {
		t.Fatalf("InitThread: %v", err)
	}
	w := mpi.World()
	if w == nil {
		t.Fatal("World() is nil after Init")
	}
	return w
}

func TestInit(t *testing.T) {
	w := initOnce(t)
	if !mpi.Initialized() || mpi.Finalized() {
		t.Fatal("Initialized/Finalized wrong")
	}
	p1, err := mpi.InitThread(mpi.ThreadSerialized)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := mpi.Init() // again: same level, no error
	if err != nil || p1 != p2 {
		t.Fatalf("second Init: %v %v %v", p1, p2, err)
	}
	if w.Rank() < 0 || w.Rank() >= w.Size() {
		t.Fatalf("rank %d size %d", w.Rank(), w.Size())
	}
	s := mpi.Self()
	if s.Size() != 1 || s.Rank() != 0 {
		t.Fatalf("Self: %v", s)
	}
	if v := mpi.LibraryVersion(); v == "" {
		t.Error("empty LibraryVersion")
	} else {
		t.Log(v)
	}
	if name, err := mpi.ProcessorName(); err != nil || name == "" {
		t.Errorf("ProcessorName %q %v", name, err)
	}
	t0 := mpi.Wtime()
	if t1 := mpi.Wtime(); t1 < t0 || t0 < 0 {
		t.Errorf("Wtime %v then %v", t0, t1)
	}
	if _, err := mpi.InitThread(mpi.ThreadLevel(7)); !errors.Is(err, mpi.ErrArg) {
		t.Errorf("InitThread(7): %v", err)
	}
}

func TestOpsAllTypes(t *testing.T) {
	w := initOnce(t)
	forEachType(t, w, allChecks)
	// And on Self, a different communicator of one rank.
	t.Run("Self", func(t *testing.T) { forEachType(t, mpi.Self(), typeChecks{reduce: true}) })
}

func TestArgErrors(t *testing.T) {
	checkArgErrors(t, initOnce(t))
}

func TestCheckOp(t *testing.T) {
	for _, tc := range []struct {
		err  error
		what string
	}{
		{mpi.CheckOp[float64](mpi.OpBand), "band float64"},
		{mpi.CheckOp[float32](mpi.OpLand), "land float32"},
		{mpi.CheckOp[complex128](mpi.OpMin), "min complex128"},
		{mpi.CheckOp[complex64](mpi.OpMax), "max complex64"},
		{mpi.CheckOp[namedC128](mpi.OpBxor), "bxor namedC128"},
		{mpi.CheckOp[int32](mpi.Op(-1)), "Op(-1)"},
		{mpi.CheckOp[int32](mpi.Op(10)), "Op(10)"},
	} {
		if !errors.Is(tc.err, mpi.ErrOp) {
			t.Errorf("%s: %v, want ErrOp", tc.what, tc.err)
		}
	}
	for _, err := range []error{
		mpi.CheckOp[complex128](mpi.OpSum), mpi.CheckOp[complex64](mpi.OpProd),
		mpi.CheckOp[float64](mpi.OpMin), mpi.CheckOp[namedF64](mpi.OpMax),
		mpi.CheckOp[int8](mpi.OpLand), mpi.CheckOp[uint64](mpi.OpBxor),
		mpi.CheckOp[namedU8](mpi.OpLxor),
	} {
		if err != nil {
			t.Errorf("valid op rejected: %v", err)
		}
	}
	// The full table, as the MPI standard defines it.
	for k := mpi.KindInt8; k <= mpi.KindComplex128; k++ {
		for _, op := range mpi.Ops() {
			var want bool
			switch op {
			case mpi.OpSum, mpi.OpProd:
				want = true
			case mpi.OpMin, mpi.OpMax:
				want = !k.IsComplex()
			default:
				want = k.IsInteger()
			}
			if got := mpi.OpValidFor(op, k); got != want {
				t.Errorf("OpValidFor(%v, %v) = %v", op, k, got)
			}
		}
	}
}

func TestParseOp(t *testing.T) {
	for _, op := range mpi.Ops() {
		for _, s := range []string{op.String(), strings.ToUpper(op.String()), "MPI_" + strings.ToUpper(op.String())} {
			got, err := mpi.ParseOp(s)
			if err != nil || got != op {
				t.Errorf("ParseOp(%q) = %v, %v", s, got, err)
			}
		}
	}
	if _, err := mpi.ParseOp("avg"); !errors.Is(err, mpi.ErrOp) {
		t.Errorf("ParseOp(avg): %v", err)
	}
	var o mpi.Op
	if err := o.Set("bxor"); err != nil || o != mpi.OpBxor {
		t.Errorf("Set: %v %v", o, err)
	}
	if mpi.Op(99).String() != "Op(99)" {
		t.Errorf("String of bad op: %s", mpi.Op(99))
	}
}

func TestKindOf(t *testing.T) {
	check := func(got, want mpi.Kind) {
		t.Helper()
		if got != want {
			t.Errorf("got %v want %v", got, want)
		}
	}
	check(mpi.KindOf[int8](), mpi.KindInt8)
	check(mpi.KindOf[uint16](), mpi.KindUint16)
	check(mpi.KindOf[float32](), mpi.KindFloat32)
	check(mpi.KindOf[complex64](), mpi.KindComplex64)
	check(mpi.KindOf[namedF64](), mpi.KindFloat64)
	check(mpi.KindOf[namedI32](), mpi.KindInt32)
	check(mpi.KindOf[namedU8](), mpi.KindUint8)
	check(mpi.KindOf[namedC128](), mpi.KindComplex128)
	if mpi.KindComplex128.Size() != 16 || mpi.KindInt16.Size() != 2 {
		t.Error("Kind.Size")
	}
	if mpi.DatatypeOf[float64]().Handle() == mpi.DatatypeOf[int64]().Handle() {
		t.Error("float64 and int64 share a datatype")
	}
	if mpi.DatatypeOf[namedF64]().Handle() != mpi.DatatypeOf[float64]().Handle() {
		t.Error("named float64 uses another datatype")
	}
}

func TestCommLifecycle(t *testing.T) {
	w := initOnce(t)
	s, err := w.Split(0, w.Rank())
	if err != nil || s == nil || s.Size() != w.Size() || s.Rank() != w.Rank() {
		t.Fatalf("Split(0): %v %v", s, err)
	}
	if err := s.Barrier(); err != nil {
		t.Fatal(err)
	}
	if err := s.Free(); err != nil {
		t.Fatal(err)
	}
	if err := s.Free(); err != nil {
		t.Fatalf("second Free: %v", err)
	}
	if err := s.Barrier(); !errors.Is(err, mpi.ErrNilComm) {
		t.Fatalf("Barrier after Free: %v", err)
	}
	if err := mpi.AllreduceInPlace(s, []int32{1}, mpi.OpSum); !errors.Is(err, mpi.ErrNilComm) {
		t.Fatalf("Allreduce after Free: %v", err)
	}
	var nilComm *mpi.Comm
	if err := mpi.Bcast(nilComm, []int32{1}, 0); !errors.Is(err, mpi.ErrNilComm) {
		t.Fatalf("Bcast nil comm: %v", err)
	}

	u, err := w.Split(mpi.Undefined, 0)
	if u != nil || err != nil {
		t.Fatalf("Split(Undefined) = %v, %v; want nil, nil", u, err)
	}
	if _, err := w.Split(-4, 0); !errors.Is(err, mpi.ErrArg) {
		t.Fatalf("Split(-4): %v", err)
	}

	sh, err := w.SplitShared(w.Rank())
	if err != nil || sh == nil {
		t.Fatalf("SplitShared: %v %v", sh, err)
	}
	if sh.Size() < 1 || sh.Size() > w.Size() {
		t.Fatalf("SplitShared size %d of %d", sh.Size(), w.Size())
	}
	if w.Size() == 1 && sh.Size() != 1 {
		t.Fatalf("singleton SplitShared size %d", sh.Size())
	}
	defer sh.Free()

	d, err := w.Dup()
	if err != nil || d.Size() != w.Size() || d.Rank() != w.Rank() {
		t.Fatalf("Dup: %v %v", d, err)
	}
	forEachType(t, d, typeChecks{reduce: false, gather: true, p2p: true})
	if err := d.Free(); err != nil {
		t.Fatal(err)
	}

	// World and Self are never freed.
	if err := w.Free(); err != nil {
		t.Fatal(err)
	}
	if err := mpi.Self().Free(); err != nil {
		t.Fatal(err)
	}
	if err := w.Barrier(); err != nil {
		t.Fatalf("World after Free: %v", err)
	}
}

func TestHandles(t *testing.T) {
	w := initOnce(t)
	d, err := w.Dup()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free()
	for _, c := range []*mpi.Comm{w, mpi.Self(), d} {
		f := mpi.CommFromFint(c.Fint())
		if f == nil || f.Size() != c.Size() || f.Rank() != c.Rank() || f.Handle() != c.Handle() {
			t.Fatalf("Fint round trip of %v: %v", c, f)
		}
		h := mpi.CommFromC(c.Handle())
		if h == nil || h.Size() != c.Size() || h.Fint() != c.Fint() {
			t.Fatalf("Handle round trip of %v: %v", c, h)
		}
		// Freeing a borrowed wrapper leaves the communicator alone.
		if err := h.Free(); err != nil {
			t.Fatal(err)
		}
		if err := c.Barrier(); err != nil {
			t.Fatalf("%v after freeing a wrapper: %v", c, err)
		}
	}
	if w.Fint() == d.Fint() || w.Handle() == d.Handle() {
		t.Fatal("World and its Dup share a handle")
	}
	var freed mpi.Comm
	if mpi.CommFromC(freed.Handle()) != nil {
		t.Fatal("CommFromC(null) != nil")
	}
}

func TestMPIErrorReturned(t *testing.T) {
	w := initOnce(t)
	// A message longer than the receive buffer is an MPI error
	// (MPI_ERR_TRUNCATE); with MPI_ERRORS_RETURN it must come back as *Error.
	// (Open MPI reports it for an already arrived message; with the receive
	// posted first its self path truncates silently.)
	me := w.Rank()
	sr, err := mpi.Isend(w, []int32{1, 2, 3, 4}, me, 3)
	if err != nil {
		t.Fatal(err)
	}
	_, err = mpi.Recv(w, make([]int32, 2), me, 3)
	if werr := sr.Wait(); werr != nil {
		t.Fatal(werr)
	}
	var e *mpi.Error
	if !errors.As(err, &e) {
		t.Fatalf("truncated receive: %v, want *mpi.Error", err)
	}
	if e.Code == 0 || e.Class == 0 || e.Msg == "" || e.Op != "MPI_Recv" || !strings.Contains(e.Error(), "MPI_Recv") {
		t.Fatalf("bad error: %#v (%v)", e, e)
	}
	t.Log(e)
	// The library is still usable.
	if err := w.Barrier(); err != nil {
		t.Fatal(err)
	}
}

func TestWaitallEmptyAndNil(t *testing.T) {
	initOnce(t)
	if err := mpi.Waitall(nil); err != nil {
		t.Fatal(err)
	}
	if err := mpi.Waitall([]*mpi.Request{nil, nil}); err != nil {
		t.Fatal(err)
	}
	var r *mpi.Request
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	if done, err := r.Test(); !done || err != nil {
		t.Fatal(done, err)
	}
}

func TestWaitallMany(t *testing.T) {
	w := initOnce(t)
	// More requests than Waitall's stack buffers.
	const k = 40
	me := w.Rank()
	bufs := make([][]float64, k)
	var reqs []*mpi.Request
	for i := range k {
		bufs[i] = make([]float64, 3)
		r, err := mpi.Irecv(w, bufs[i], me, i)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, r)
	}
	for i := range k {
		r, err := mpi.Isend(w, []float64{float64(i), 1, 2}, me, i)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, r)
	}
	if err := mpi.Waitall(reqs); err != nil {
		t.Fatal(err)
	}
	for i := range k {
		if bufs[i][0] != float64(i) || reqs[i].Status().Tag != i {
			t.Fatalf("message %d: %v %+v", i, bufs[i], reqs[i].Status())
		}
	}
}

func TestEmptySlices(t *testing.T) {
	w := initOnce(t)
	var nilS []float64
	empty := []float64{}
	if err := mpi.Allreduce(w, nilS, empty, mpi.OpSum); err != nil {
		t.Fatal(err)
	}
	if err := mpi.Allreduce(w, empty, empty, mpi.OpSum); err != nil {
		t.Fatalf("two empty views of one slice: %v", err)
	}
	if err := mpi.AllreduceInPlace(w, nilS, mpi.OpMax); err != nil {
		t.Fatal(err)
	}
	r, err := mpi.Iallreduce(w, nilS, nilS, mpi.OpSum)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := mpi.Bcast(w, nilS, 0); err != nil {
		t.Fatal(err)
	}
	if err := mpi.Allgather(w, nilS, nilS); err != nil {
		t.Fatal(err)
	}
	if err := mpi.Reduce(w, nilS, nilS, mpi.OpSum, 0); err != nil {
		t.Fatal(err)
	}
}

// Memory Go did not allocate (the engine passes mmap'd shared memory) must
// work with the non-blocking calls: pinning is a no-op for it.
func TestNonGoMemory(t *testing.T) {
	w := initOnce(t)
	m, err := syscall.Mmap(-1, 0, 1<<16, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	f := unsafe.Slice((*float64)(unsafe.Pointer(&m[0])), len(m)/8)
	send, recv := f[:100], f[100:200]
	for i := range send {
		send[i] = float64(i)
	}
	r, err := mpi.Iallreduce(w, send, recv, mpi.OpMax)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	if w.Size() == 1 {
		equal(t, "mmap Iallreduce", recv, send)
	}
	r, err = mpi.IallreduceInPlace(w, recv, mpi.OpSum)
	if err != nil {
		t.Fatal(err)
	}
	if err := mpi.Waitall([]*mpi.Request{r}); err != nil {
		t.Fatal(err)
	}
}

func TestCountLimit(t *testing.T) {
	w := initOnce(t)
	// Reserve (never touch) more than MaxInt32 bytes.
	n := math.MaxInt32 + 1
	m, err := syscall.Mmap(-1, 0, n, syscall.PROT_NONE, syscall.MAP_ANON|syscall.MAP_PRIVATE|syscall.MAP_NORESERVE)
	if err != nil {
		t.Skip("cannot reserve 2 GiB:", err)
	}
	defer syscall.Munmap(m)
	big := unsafe.Slice((*int8)(unsafe.Pointer(&m[0])), n)
	if err := mpi.AllreduceInPlace(w, big, mpi.OpSum); !errors.Is(err, mpi.ErrCount) {
		t.Fatalf("AllreduceInPlace 2^31: %v", err)
	}
	if err := mpi.Bcast(w, big, 0); !errors.Is(err, mpi.ErrCount) {
		t.Fatalf("Bcast 2^31: %v", err)
	}
	if _, err := mpi.Isend(w, big, 0, 0); !errors.Is(err, mpi.ErrCount) {
		t.Fatalf("Isend 2^31: %v", err)
	}
}

func TestHotPathAllocs(t *testing.T) {
	w := initOnce(t)
	send := make([]float64, 64)
	recv := make([]float64, 64)
	if a := testing.AllocsPerRun(200, func() {
		if err := mpi.Allreduce(w, send, recv, mpi.OpSum); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("Allreduce allocates %v per call", a)
	}
	named := make([]namedF64, 64)
	if a := testing.AllocsPerRun(200, func() {
		if err := mpi.AllreduceInPlace(w, named, mpi.OpMax); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("AllreduceInPlace (named type) allocates %v per call", a)
	}
	if a := testing.AllocsPerRun(200, func() {
		r, err := mpi.Iallreduce(w, send, recv, mpi.OpSum)
		if err == nil {
			err = r.Wait()
		}
		if err != nil {
			t.Fatal(err)
		}
	}); a > 1 {
		t.Errorf("Iallreduce+Wait allocates %v per call, want <= 1 (the Request)", a)
	}
}

// IallreduceInPlaceReq reuses the caller's Request: no allocation per call,
// a pending Request is refused, a completed one starts again.
func TestIallreduceInPlaceReq(t *testing.T) {
	w := initOnce(t)
	buf := []int64{3, -4, 5}
	var r mpi.Request
	if err := mpi.IallreduceInPlaceReq(w, buf, mpi.OpSum, &r); err != nil {
		t.Fatal(err)
	}
	if err := mpi.IallreduceInPlaceReq(w, buf, mpi.OpSum, &r); !errors.Is(err, mpi.ErrArg) {
		t.Errorf("start on a pending Request: %v, want ErrArg", err)
	}
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	if buf[0] != 3 || buf[1] != -4 || buf[2] != 5 {
		t.Errorf("singleton sum changed the buffer: %v", buf)
	}
	if err := mpi.IallreduceInPlaceReq(w, buf, mpi.OpSum, nil); !errors.Is(err, mpi.ErrArg) {
		t.Errorf("nil Request: %v, want ErrArg", err)
	}
	if err := mpi.IallreduceInPlaceReq(w, []float64{1}, mpi.OpBand, &r); !errors.Is(err, mpi.ErrOp) {
		t.Errorf("band on float64: %v, want ErrOp", err)
	}
	if a := testing.AllocsPerRun(200, func() {
		err := mpi.IallreduceInPlaceReq(w, buf, mpi.OpMax, &r)
		if err == nil {
			err = r.Wait()
		}
		if err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("IallreduceInPlaceReq+Wait allocates %v per call, want 0", a)
	}
}

// IsendReq and IrecvReq reuse the caller's Requests: no allocation per
// message, a pending Request is refused, a completed one starts again.
func TestIsendIrecvReq(t *testing.T) {
	w := initOnce(t)
	me := w.Rank()
	out, in := []float32{1, 2, 3}, make([]float32, 3)
	var sr, rr mpi.Request
	if err := mpi.IrecvReq(w, in, me, 5, &rr); err != nil {
		t.Fatal(err)
	}
	if err := mpi.IrecvReq(w, in, me, 5, &rr); !errors.Is(err, mpi.ErrArg) {
		t.Errorf("Irecv on a pending Request: %v, want ErrArg", err)
	}
	if err := mpi.IsendReq(w, out, me, 5, &sr); err != nil {
		t.Fatal(err)
	}
	if err := mpi.IsendReq(w, out, me, 5, &sr); !errors.Is(err, mpi.ErrArg) {
		t.Errorf("Isend on a pending Request: %v, want ErrArg", err)
	}
	if err := mpi.Waitall([]*mpi.Request{&rr, &sr}); err != nil {
		t.Fatal(err)
	}
	if in[0] != 1 || in[1] != 2 || in[2] != 3 || rr.Status().Count != 3 {
		t.Errorf("received %v (status %+v), want [1 2 3]", in, rr.Status())
	}
	if err := mpi.IsendReq(w, out, me, 5, nil); !errors.Is(err, mpi.ErrArg) {
		t.Errorf("Isend with a nil Request: %v, want ErrArg", err)
	}
	if err := mpi.IrecvReq(w, in, w.Size(), 5, &rr); !errors.Is(err, mpi.ErrRank) {
		t.Errorf("Irecv from rank %d: %v, want ErrRank", w.Size(), err)
	}
	if a := testing.AllocsPerRun(200, func() {
		err := mpi.IrecvReq(w, in, me, 6, &rr)
		if err == nil {
			err = mpi.IsendReq(w, out, me, 6, &sr)
		}
		if err == nil {
			err = rr.Wait()
		}
		if err == nil {
			err = sr.Wait()
		}
		if err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("IrecvReq+IsendReq+Wait allocates %v per message, want 0", a)
	}
}

func BenchmarkAllreduce8(b *testing.B) {
	if _, err := mpi.InitThread(mpi.ThreadSerialized); err != nil {
		b.Fatal(err)
	}
	w := mpi.World()
	s, r := make([]float64, 8), make([]float64, 8)
	for b.Loop() {
		mpi.Allreduce(w, s, r, mpi.OpSum)
	}
}

// MPI libraries (Open MPI's opal, UCX) install handlers for SIGSEGV; Go's
// must survive Init so nil dereferences stay recoverable panics.
func TestGoSignalsSurviveInit(t *testing.T) {
	initOnce(t)
	var recovered any
	func() {
		defer func() { recovered = recover() }()
		var p *int
		_ = *p
	}()
	if recovered == nil {
		t.Fatal("nil dereference did not panic")
	}
}
