package mpi_test

// Shared by the single-rank and multi-rank tests: rank-dependent inputs, a
// Go reference for every op, and generic checks that hold for any size.

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/dpmlgo/dpml/mpi"
)

// Named types must work like their underlying types.
type (
	namedF64  float64
	namedI32  int32
	namedU8   uint8
	namedC128 complex128
)

// forEachType runs f once per Number type, named ones included.
func forEachType(t *testing.T, c *mpi.Comm, f typeChecks) {
	t.Run("int8", func(t *testing.T) { runChecks[int8](t, c, f) })
	t.Run("int16", func(t *testing.T) { runChecks[int16](t, c, f) })
	t.Run("int32", func(t *testing.T) { runChecks[int32](t, c, f) })
	t.Run("int64", func(t *testing.T) { runChecks[int64](t, c, f) })
	t.Run("uint8", func(t *testing.T) { runChecks[uint8](t, c, f) })
	t.Run("uint16", func(t *testing.T) { runChecks[uint16](t, c, f) })
	t.Run("uint32", func(t *testing.T) { runChecks[uint32](t, c, f) })
	t.Run("uint64", func(t *testing.T) { runChecks[uint64](t, c, f) })
	t.Run("float32", func(t *testing.T) { runChecks[float32](t, c, f) })
	t.Run("float64", func(t *testing.T) { runChecks[float64](t, c, f) })
	t.Run("complex64", func(t *testing.T) { runChecks[complex64](t, c, f) })
	t.Run("complex128", func(t *testing.T) { runChecks[complex128](t, c, f) })
	t.Run("namedF64", func(t *testing.T) { runChecks[namedF64](t, c, f) })
	t.Run("namedI32", func(t *testing.T) { runChecks[namedI32](t, c, f) })
	t.Run("namedU8", func(t *testing.T) { runChecks[namedU8](t, c, f) })
	t.Run("namedC128", func(t *testing.T) { runChecks[namedC128](t, c, f) })
}

// typeChecks selects which generic checks runChecks performs.
type typeChecks struct{ reduce, gather, p2p bool }

var allChecks = typeChecks{reduce: true, gather: true, p2p: true}

func runChecks[T mpi.Number](t *testing.T, c *mpi.Comm, f typeChecks) {
	if f.reduce {
		checkReductions[T](t, c)
	}
	if f.gather {
		checkBcastAllgather[T](t, c)
	}
	if f.p2p {
		checkRing[T](t, c)
	}
}

// gen is element i of rank's input for op, as an integer (real kinds) or a
// complex number (complex kinds). Values are small so every result is exact
// in every type, even products over 4 ranks in int8.
func gen(k mpi.Kind, op mpi.Op, rank, i int) (int64, complex128) {
	if k.IsComplex() {
		re := float64(1 + (i+rank)%3)
		im := float64((i * (rank + 1)) % 2)
		return 0, complex(re, im)
	}
	signed := k == mpi.KindInt8 || k == mpi.KindInt16 || k == mpi.KindInt32 || k == mpi.KindInt64 || k.IsFloat()
	switch op {
	case mpi.OpProd:
		v := int64(1 + (i+rank)%3)
		if signed && (i+2*rank)%5 == 0 {
			v = -v
		}
		return v, 0
	case mpi.OpLand, mpi.OpLor, mpi.OpLxor:
		return int64((i>>uint(rank%8))&1) * int64(1+i%3), 0
	case mpi.OpBand, mpi.OpBor, mpi.OpBxor:
		v := int64((i*37 + rank*11) % 128)
		if signed {
			v -= 64
		}
		return v, 0
	}
	v := int64((i*7 + rank*5) % 20)
	if signed {
		v -= 10
	}
	return v, 0
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func foldInt(op mpi.Op, a, b int64) int64 {
	switch op {
	case mpi.OpSum:
		return a + b
	case mpi.OpProd:
		return a * b
	case mpi.OpMin:
		return min(a, b)
	case mpi.OpMax:
		return max(a, b)
	case mpi.OpLand:
		return b2i(a != 0 && b != 0)
	case mpi.OpLor:
		return b2i(a != 0 || b != 0)
	case mpi.OpLxor:
		return b2i((a != 0) != (b != 0))
	case mpi.OpBand:
		return a & b
	case mpi.OpBor:
		return a | b
	case mpi.OpBxor:
		return a ^ b
	}
	panic("bad op")
}

func foldComplex(op mpi.Op, a, b complex128) complex128 {
	if op == mpi.OpProd {
		return a * b
	}
	return a + b
}

// fromVal converts a reference value to T (truncating integers as a
// conversion would).
func fromVal[T mpi.Number](iv int64, cv complex128) T {
	var x T
	p := unsafe.Pointer(&x)
	switch mpi.KindOf[T]() {
	case mpi.KindInt8:
		*(*int8)(p) = int8(iv)
	case mpi.KindInt16:
		*(*int16)(p) = int16(iv)
	case mpi.KindInt32:
		*(*int32)(p) = int32(iv)
	case mpi.KindInt64:
		*(*int64)(p) = iv
	case mpi.KindUint8:
		*(*uint8)(p) = uint8(iv)
	case mpi.KindUint16:
		*(*uint16)(p) = uint16(iv)
	case mpi.KindUint32:
		*(*uint32)(p) = uint32(iv)
	case mpi.KindUint64:
		*(*uint64)(p) = uint64(iv)
	case mpi.KindFloat32:
		*(*float32)(p) = float32(iv)
	case mpi.KindFloat64:
		*(*float64)(p) = float64(iv)
	case mpi.KindComplex64:
		*(*complex64)(p) = complex64(cv)
	case mpi.KindComplex128:
		*(*complex128)(p) = cv
	}
	return x
}

// input is rank's send buffer of n elements for op.
func input[T mpi.Number](op mpi.Op, rank, n int) []T {
	k := mpi.KindOf[T]()
	s := make([]T, n)
	for i := range s {
		s[i] = fromVal[T](gen(k, op, rank, i))
	}
	return s
}

// reference is the reduction of every rank's input with op. One contributor
// is returned as is (MPI applies no op then: LAND of 3 is 3, not 1).
func reference[T mpi.Number](op mpi.Op, size, n int) []T {
	k := mpi.KindOf[T]()
	out := make([]T, n)
	for i := range out {
		iv, cv := gen(k, op, 0, i)
		for r := 1; r < size; r++ {
			ir, cr := gen(k, op, r, i)
			iv, cv = foldInt(op, iv, ir), foldComplex(op, cv, cr)
		}
		out[i] = fromVal[T](iv, cv)
	}
	return out
}

func equal[T mpi.Number](t *testing.T, what string, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: len %d, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			if len(got) <= 64 {
				t.Fatalf("%s: [%d] = %v, want %v (got %v)", what, i, got[i], want[i], got)
			}
			t.Fatalf("%s: [%d] = %v, want %v (len %d)", what, i, got[i], want[i], len(got))
		}
	}
}

var sizes = []int{0, 1, 37, 1000}

// checkReductions checks every op on T with every reduction entry point,
// and that the ops invalid for T are rejected before MPI.
func checkReductions[T mpi.Number](t *testing.T, c *mpi.Comm) {
	rank, size := c.Rank(), c.Size()
	for _, op := range mpi.Ops() {
		if err := mpi.CheckOp[T](op); err != nil {
			if mpi.OpValidFor(op, mpi.KindOf[T]()) {
				t.Fatalf("CheckOp and OpValidFor disagree on %v", op)
			}
			buf := input[T](mpi.OpSum, rank, 4)
			out := make([]T, 4)
			if err := mpi.Allreduce(c, buf, out, op); !errors.Is(err, mpi.ErrOp) {
				t.Fatalf("Allreduce %v: err %v, want ErrOp", op, err)
			}
			if err := mpi.AllreduceInPlace(c, buf, op); !errors.Is(err, mpi.ErrOp) {
				t.Fatalf("AllreduceInPlace %v: err %v, want ErrOp", op, err)
			}
			if _, err := mpi.Iallreduce(c, buf, out, op); !errors.Is(err, mpi.ErrOp) {
				t.Fatalf("Iallreduce %v: err %v, want ErrOp", op, err)
			}
			if err := mpi.Reduce(c, buf, out, op, 0); !errors.Is(err, mpi.ErrOp) {
				t.Fatalf("Reduce %v: err %v, want ErrOp", op, err)
			}
			continue
		}
		for _, n := range sizes {
			want := reference[T](op, size, n)
			send := input[T](op, rank, n)
			orig := append([]T(nil), send...)

			recv := make([]T, n)
			if err := mpi.Allreduce(c, send, recv, op); err != nil {
				t.Fatalf("Allreduce %v n=%d: %v", op, n, err)
			}
			equal(t, "Allreduce "+op.String(), recv, want)
			equal(t, "Allreduce send unchanged", send, orig)

			buf := append([]T(nil), send...)
			if err := mpi.AllreduceInPlace(c, buf, op); err != nil {
				t.Fatalf("AllreduceInPlace %v n=%d: %v", op, n, err)
			}
			equal(t, "AllreduceInPlace "+op.String(), buf, want)

			recv = make([]T, n)
			req, err := mpi.Iallreduce(c, send, recv, op)
			if err != nil {
				t.Fatalf("Iallreduce %v n=%d: %v", op, n, err)
			}
			if err := req.Wait(); err != nil {
				t.Fatalf("Iallreduce Wait: %v", err)
			}
			equal(t, "Iallreduce "+op.String(), recv, want)

			buf = append([]T(nil), send...)
			req, err = mpi.IallreduceInPlace(c, buf, op)
			if err != nil {
				t.Fatalf("IallreduceInPlace %v n=%d: %v", op, n, err)
			}
			for {
				done, err := req.Test()
				if err != nil {
					t.Fatalf("IallreduceInPlace Test: %v", err)
				}
				if done {
					break
				}
			}
			equal(t, "IallreduceInPlace "+op.String(), buf, want)

			root := int(op) % size
			recv = nil
			if rank == root {
				recv = make([]T, n)
			}
			if err := mpi.Reduce(c, send, recv, op, root); err != nil {
				t.Fatalf("Reduce %v n=%d root=%d: %v", op, n, root, err)
			}
			if rank == root {
				equal(t, "Reduce "+op.String(), recv, want)
			}

			buf = append([]T(nil), send...)
			if err := mpi.ReduceInPlace(c, buf, op, root); err != nil {
				t.Fatalf("ReduceInPlace %v n=%d root=%d: %v", op, n, root, err)
			}
			if rank == root {
				equal(t, "ReduceInPlace "+op.String(), buf, want)
			} else {
				equal(t, "ReduceInPlace non-root unchanged", buf, send)
			}
		}
	}
}

func checkBcastAllgather[T mpi.Number](t *testing.T, c *mpi.Comm) {
	rank, size := c.Rank(), c.Size()
	for _, n := range sizes {
		for root := 0; root < size; root++ {
			buf := make([]T, n)
			if rank == root {
				buf = input[T](mpi.OpSum, root, n)
			}
			if err := mpi.Bcast(c, buf, root); err != nil {
				t.Fatalf("Bcast n=%d root=%d: %v", n, root, err)
			}
			equal(t, "Bcast", buf, input[T](mpi.OpSum, root, n))
		}
		recv := make([]T, n*size)
		if err := mpi.Allgather(c, input[T](mpi.OpSum, rank, n), recv); err != nil {
			t.Fatalf("Allgather n=%d: %v", n, err)
		}
		for r := 0; r < size; r++ {
			equal(t, "Allgather block", recv[r*n:(r+1)*n], input[T](mpi.OpSum, r, n))
		}
	}
}

// checkRing sends to rank+1 and receives from rank-1 (oneself on 1 rank)
// with Isend/Irecv, then with blocking Send/Recv ordered to avoid deadlock.
func checkRing[T mpi.Number](t *testing.T, c *mpi.Comm) {
	rank, size := c.Rank(), c.Size()
	next, prev := (rank+1)%size, (rank+size-1)%size
	for _, n := range sizes {
		out := input[T](mpi.OpSum, rank, n)
		in := make([]T, n+3) // longer than the message: Count must say n
		rr, err := mpi.Irecv(c, in, prev, 7)
		if err != nil {
			t.Fatal(err)
		}
		sr, err := mpi.Isend(c, out, next, 7)
		if err != nil {
			t.Fatal(err)
		}
		if err := mpi.Waitall([]*mpi.Request{nil, sr, rr}); err != nil {
			t.Fatalf("Waitall: %v", err)
		}
		st := rr.Status()
		if st.Source != prev || st.Tag != 7 || st.Count != n {
			t.Fatalf("Irecv status %+v, want source %d tag 7 count %d", st, prev, n)
		}
		equal(t, "Isend/Irecv", in[:n], input[T](mpi.OpSum, prev, n))

		if size == 1 {
			continue
		}
		in = make([]T, n)
		var st2 mpi.Status
		if rank%2 == 0 {
			err = mpi.Send(c, out, next, 9)
			if err == nil {
				st2, err = mpi.Recv(c, in, mpi.AnySource, mpi.AnyTag)
			}
		} else {
			st2, err = mpi.Recv(c, in, prev, 9)
			if err == nil {
				err = mpi.Send(c, out, next, 9)
			}
		}
		if err != nil {
			t.Fatalf("Send/Recv: %v", err)
		}
		if st2.Source != prev || st2.Tag != 9 || st2.Count != n {
			t.Fatalf("Recv status %+v", st2)
		}
		equal(t, "Send/Recv", in, input[T](mpi.OpSum, prev, n))
	}
}

// checkArgErrors checks the argument errors every layout must report
// without calling MPI.
func checkArgErrors(t *testing.T, c *mpi.Comm) {
	size := c.Size()
	a := make([]float64, 8)
	b := make([]float64, 8)
	for _, root := range []int{-1, -7, size, size + 5} {
		if err := mpi.Reduce(c, a, b, mpi.OpSum, root); !errors.Is(err, mpi.ErrRank) {
			t.Errorf("Reduce root %d: %v, want ErrRank", root, err)
		}
		if err := mpi.ReduceInPlace(c, a, mpi.OpSum, root); !errors.Is(err, mpi.ErrRank) {
			t.Errorf("ReduceInPlace root %d: %v, want ErrRank", root, err)
		}
		if err := mpi.Bcast(c, a, root); !errors.Is(err, mpi.ErrRank) {
			t.Errorf("Bcast root %d: %v, want ErrRank", root, err)
		}
		if root == mpi.ProcNull || root == mpi.AnySource {
			continue // -1 is one of them in either ABI: valid peers
		}
		if err := mpi.Send(c, a, root, 0); !errors.Is(err, mpi.ErrRank) {
			t.Errorf("Send dest %d: %v, want ErrRank", root, err)
		}
		if _, err := mpi.Isend(c, a, root, 0); !errors.Is(err, mpi.ErrRank) {
			t.Errorf("Isend dest %d: %v, want ErrRank", root, err)
		}
		if _, err := mpi.Recv(c, a, root, 0); !errors.Is(err, mpi.ErrRank) {
			t.Errorf("Recv source %d: %v, want ErrRank", root, err)
		}
		if _, err := mpi.Irecv(c, a, root, 0); !errors.Is(err, mpi.ErrRank) {
			t.Errorf("Irecv source %d: %v, want ErrRank", root, err)
		}
	}
	if err := mpi.Send(c, a, 0, -3); !errors.Is(err, mpi.ErrTag) {
		t.Errorf("Send tag -3: %v, want ErrTag", err)
	}
	if err := mpi.Send(c, a, 0, mpi.AnyTag); !errors.Is(err, mpi.ErrTag) {
		t.Errorf("Send AnyTag: %v, want ErrTag", err)
	}
	// Length mismatches.
	if err := mpi.Allreduce(c, a, b[:7], mpi.OpSum); !errors.Is(err, mpi.ErrLength) {
		t.Errorf("Allreduce short recv: %v, want ErrLength", err)
	}
	if _, err := mpi.Iallreduce(c, a[:3], b, mpi.OpSum); !errors.Is(err, mpi.ErrLength) {
		t.Errorf("Iallreduce long recv: %v, want ErrLength", err)
	}
	if err := mpi.Allgather(c, a[:2], make([]float64, 2*size+1)); !errors.Is(err, mpi.ErrLength) {
		t.Errorf("Allgather: %v, want ErrLength", err)
	}
	if c.Rank() == 0 {
		if err := mpi.Reduce(c, a, b[:5], mpi.OpSum, 0); !errors.Is(err, mpi.ErrLength) {
			t.Errorf("Reduce on root, short recv: %v, want ErrLength", err)
		}
	}
	// Overlap: identical, partial, and not (adjacent).
	if err := mpi.Allreduce(c, a, a, mpi.OpSum); !errors.Is(err, mpi.ErrOverlap) {
		t.Errorf("Allreduce same slice: %v, want ErrOverlap", err)
	}
	if err := mpi.Allreduce(c, a[0:4], a[2:6], mpi.OpMax); !errors.Is(err, mpi.ErrOverlap) {
		t.Errorf("Allreduce partial overlap: %v, want ErrOverlap", err)
	}
	if _, err := mpi.Iallreduce(c, a[2:6], a[0:4], mpi.OpMax); !errors.Is(err, mpi.ErrOverlap) {
		t.Errorf("Iallreduce partial overlap: %v, want ErrOverlap", err)
	}
	if err := mpi.Allgather(c, a[:1], a[:size]); !errors.Is(err, mpi.ErrOverlap) {
		t.Errorf("Allgather overlap: %v, want ErrOverlap", err)
	}
	if c.Rank() == 0 {
		if err := mpi.Reduce(c, a, a, mpi.OpSum, 0); !errors.Is(err, mpi.ErrOverlap) {
			t.Errorf("Reduce overlap: %v, want ErrOverlap", err)
		}
	}
	if err := mpi.Allreduce(c, a[0:4], a[4:8], mpi.OpSum); err != nil {
		t.Errorf("Allreduce adjacent halves: %v", err)
	}
	// Invalid op/type pairs.
	if err := mpi.Allreduce(c, a, b, mpi.OpBand); !errors.Is(err, mpi.ErrOp) {
		t.Errorf("OpBand float64: %v, want ErrOp", err)
	}
	z := make([]complex128, 2)
	if err := mpi.AllreduceInPlace(c, z, mpi.OpMin); !errors.Is(err, mpi.ErrOp) {
		t.Errorf("OpMin complex128: %v, want ErrOp", err)
	}
	if err := mpi.AllreduceInPlace(c, a, mpi.Op(42)); !errors.Is(err, mpi.ErrOp) {
		t.Errorf("Op(42): %v, want ErrOp", err)
	}
}
