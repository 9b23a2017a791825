package dpml

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/dpmlgo/dpml/mpi"
)

// The test oracle: a plain scalar fold written for the tests, sharing no
// code with the engine's kernels (kernels.go, kernels_gen.go,
// kernels_simd.go): not their loops, not minOf/maxOf/truth, not kernelFor.
// The conformance reference and the kernel tests compare against it
// (a reference folding with the engine's own kernelFor would let a broken
// kernel agree with itself).
//
// Semantics, per element, folding sources left to right
// (((s0 op s1) op s2) ...):
//   - sum, prod: Go's + and * of the type (integers wrap);
//   - min: the left operand unless the right one is strictly smaller
//     (so with NaNs and signed zeros the left operand stays), max alike;
//   - land, lor, lxor: 1 or 0 from the operands' truth (non-zero);
//   - band, bor, bxor: bitwise.

// oracleOp returns the scalar op for T, or nil when MPI does not define it
// on T.
func oracleOp[T mpi.Number](op mpi.Op) func(a, b T) T {
	switch op {
	case mpi.OpSum:
		return func(a, b T) T { return a + b }
	case mpi.OpProd:
		return func(a, b T) T { return a * b }
	}
	var z T
	switch any(z).(type) {
	case complex64, complex128:
		return nil // only sum and prod
	case float32:
		return castOp[float32, T](orderedOp[float32](op))
	case float64:
		return castOp[float64, T](orderedOp[float64](op))
	case int8:
		return castOp[int8, T](intOp[int8](op))
	case int16:
		return castOp[int16, T](intOp[int16](op))
	case int32:
		return castOp[int32, T](intOp[int32](op))
	case int64:
		return castOp[int64, T](intOp[int64](op))
	case uint8:
		return castOp[uint8, T](intOp[uint8](op))
	case uint16:
		return castOp[uint16, T](intOp[uint16](op))
	case uint32:
		return castOp[uint32, T](intOp[uint32](op))
	case uint64:
		return castOp[uint64, T](intOp[uint64](op))
	}
	return nil
}

func castOp[E, T any](f func(a, b E) E) func(a, b T) T {
	if f == nil {
		return nil
	}
	return any(f).(func(a, b T) T)
}

type ordered interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

func orderedOp[E ordered](op mpi.Op) func(a, b E) E {
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

type intE interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

func intOp[E intE](op mpi.Op) func(a, b E) E {
	bit := func(x bool) E {
		if x {
			return 1
		}
		return 0
	}
	switch op {
	case mpi.OpMin, mpi.OpMax:
		return orderedOp[E](op)
	case mpi.OpLand:
		return func(a, b E) E { return bit(a != 0 && b != 0) }
	case mpi.OpLor:
		return func(a, b E) E { return bit(a != 0 || b != 0) }
	case mpi.OpLxor:
		return func(a, b E) E { return bit((a != 0) != (b != 0)) }
	case mpi.OpBand:
		return func(a, b E) E { return a & b }
	case mpi.OpBor:
		return func(a, b E) E { return a | b }
	case mpi.OpBxor:
		return func(a, b E) E { return a ^ b }
	}
	return nil
}

// oracleFold folds srcs left to right into a new slice.
func oracleFold[T mpi.Number](srcs [][]T, f func(a, b T) T) []T {
	out := make([]T, len(srcs[0]))
	for i := range out {
		acc := srcs[0][i]
		for _, s := range srcs[1:] {
			acc = f(acc, s[i])
		}
		out[i] = acc
	}
	return out
}

// TestOracleItself pins the oracle to hand-computed values, so that it is
// not just another copy of whatever the kernels do.
func TestOracleItself(t *testing.T) {
	f := oracleOp[float64](mpi.OpMin)
	nan := math.NaN()
	if got := oracleFold([][]float64{{3, nan, 0}, {1, 1, math.Copysign(0, -1)}, {2, 0, 0}}, f); got[0] != 1 || !math.IsNaN(got[1]) || math.Signbit(got[2]) {
		t.Errorf("min: %v", got)
	}
	if got := oracleFold([][]int8{{127, 5}, {1, -7}}, oracleOp[int8](mpi.OpSum)); got[0] != -128 || got[1] != -2 {
		t.Errorf("int8 sum wraps: %v", got)
	}
	if got := oracleFold([][]uint16{{0, 2, 3}, {5, 0, 9}, {1, 1, 1}}, oracleOp[uint16](mpi.OpLxor)); got[0] != 0 || got[1] != 0 || got[2] != 1 {
		t.Errorf("lxor: %v", got)
	}
	if got := oracleFold([][]float32{{0.1}, {0.2}, {0.3}}, oracleOp[float32](mpi.OpSum)); got[0] != (float32(0.1)+float32(0.2))+float32(0.3) {
		t.Errorf("float32 sum order: %v", got)
	}
	if oracleOp[complex64](mpi.OpMax) != nil || oracleOp[float32](mpi.OpBand) != nil {
		t.Error("ops MPI does not define on a type must have no oracle")
	}
}

// Kernel tests: every kind x op x source count (1..9: every grouping of
// the 2-, 3- and 4-source loops), portable and SIMD builds alike (make
// test runs both), at every alignment of destination and sources within a
// cache line, for lengths around the vector widths and the 8 KiB block,
// compared bit for bit with the oracle.
//
// Mutation check: dropping source c from the second
// half of each vsum3f32 vector block (kernels_simd.go),
//
//	x1 := archsimd.LoadFloat32x8Slice(a[i+8:]).Add(archsimd.LoadFloat32x8Slice(b[i+8:]))
//
// passed -run 'Kernel|Partition|Stream' and TestConformance/2+3 before; with
// the oracle it fails (GOEXPERIMENT=simd go test ./dpml -run Kernel):
//
//	--- FAIL: TestKernelsMatchScalarFold (0.49s)
//	    oracle_test.go:262: float32 sum nsrc=3 n=16 dst+0 src+0: [8] = 0.22447446, want 0.3359661 (bitwise)
//	--- FAIL: TestSIMDKernels (0.00s)
//	    kernels_simd_test.go:47: vsum3f32 n=16 offset 0: [8] = 0.22447446, want 0.3359661
//
// and TestConformance/2+3 fails on its float32 sums of 3 local ranks.
func TestKernelsMatchScalarFold(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	kernelCase[int8](t, rng, mpi.KindInt8)
	kernelCase[int16](t, rng, mpi.KindInt16)
	kernelCase[int32](t, rng, mpi.KindInt32)
	kernelCase[int64](t, rng, mpi.KindInt64)
	kernelCase[uint8](t, rng, mpi.KindUint8)
	kernelCase[uint16](t, rng, mpi.KindUint16)
	kernelCase[uint32](t, rng, mpi.KindUint32)
	kernelCase[uint64](t, rng, mpi.KindUint64)
	kernelCase[float32](t, rng, mpi.KindFloat32)
	kernelCase[float64](t, rng, mpi.KindFloat64)
	kernelCase[complex64](t, rng, mpi.KindComplex64)
	kernelCase[complex128](t, rng, mpi.KindComplex128)
}

// randomValue draws values that exercise the op: full-range integers
// (wrapping sums and products), small integers (so logical ops see zeros),
// floats of mixed sign and magnitude with a few zeros, signed zeros and
// infinities.
func randomValue[T mpi.Number](rng *rand.Rand) T {
	var z T
	u := rng.Uint64()
	switch p := any(&z).(type) {
	case *int8, *int16, *int32, *int64, *uint8, *uint16, *uint32, *uint64:
		if rng.IntN(3) == 0 {
			u = uint64(rng.IntN(3)) // 0, 1, 2
		}
		switch q := p.(type) {
		case *int8:
			*q = int8(u)
		case *int16:
			*q = int16(u)
		case *int32:
			*q = int32(u)
		case *int64:
			*q = int64(u)
		case *uint8:
			*q = uint8(u)
		case *uint16:
			*q = uint16(u)
		case *uint32:
			*q = uint32(u)
		case *uint64:
			*q = u
		}
	case *float32:
		*p = float32(randomFloat(rng))
	case *float64:
		*p = randomFloat(rng)
	case *complex64:
		*p = complex(float32(randomFloat(rng)), float32(randomFloat(rng)))
	case *complex128:
		*p = complex(randomFloat(rng), randomFloat(rng))
	}
	return z
}

func randomFloat(rng *rand.Rand) float64 {
	switch rng.IntN(64) {
	case 0:
		return 0
	case 1:
		return math.Copysign(0, -1)
	case 2:
		return math.Inf(1 - 2*rng.IntN(2))
	}
	return rng.NormFloat64() * math.Ldexp(1, rng.IntN(40)-20)
}

func kernelCase[T mpi.Number](t *testing.T, rng *rand.Rand, kind mpi.Kind) {
	t.Helper()
	es := int(unsafe.Sizeof(*new(T)))
	blk := blockBytes / es
	line := alignBytes / es // elements per cache line: every alignment inside one
	lengths := []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100}
	long := []int{blk - 1, blk, blk + 1, 2*blk + line + 3}
	// Sources are windows of a pool of random values (drawing every
	// element afresh costs more than the kernels).
	pool := make([]T, 4*blk)
	for i := range pool {
		pool[i] = randomValue[T](rng)
	}
	fill := func(s []T) { copy(s, pool[rng.IntN(len(pool)-len(s)):]) }
	for _, op := range mpi.Ops() {
		f := oracleOp[T](op)
		k, err := kernelFor(kind, op)
		if (f == nil) != (err != nil) {
			t.Fatalf("%v %v: oracle defined %v, kernel error %v", kind, op, f != nil, err)
		}
		if f == nil {
			continue
		}
		for nsrc := 1; nsrc <= 9; nsrc++ {
			ns := lengths
			if nsrc <= 4 || nsrc == 7 {
				// Across the block boundary: every first pass (copy, 2-,
				// 3-, 4-source) and a 4-then-3 fold.
				ns = append(ns, long...)
			}
			for _, n := range ns {
				offsets := line
				if n > 100 {
					offsets = 2 // long vectors: aligned and one element off
				}
				for off := range offsets {
					// Each buffer starts at its own offset within a line.
					srcs := make([][]T, nsrc)
					for i := range srcs {
						o := (off + i*3) % line
						srcs[i] = make([]T, n+line)[o : o+n]
						fill(srcs[i])
					}
					want := oracleFold(srcs, f)
					dst := make([]T, n+line+1)[off : off+n+1]
					sentinel := randomValue[T](rng)
					dst[n] = sentinel
					if n > 0 {
						k(unsafe.Pointer(&dst[0]), ptrs(srcs), n)
					}
					for i := range want {
						if !sameBits(dst[i], want[i]) {
							t.Fatalf("%v %v nsrc=%d n=%d dst+%d src+%d: [%d] = %v, want %v (bitwise)", kind, op, nsrc, n, off, off, i, dst[i], want[i])
						}
					}
					if !sameBits(dst[n], sentinel) {
						t.Fatalf("%v %v nsrc=%d n=%d: wrote past the end", kind, op, nsrc, n)
					}
					// In place: dst aliases the first source.
					if n > 0 && nsrc > 1 {
						in := append([]T(nil), srcs[0]...)
						aliased := append([][]T{in}, srcs[1:]...)
						k(unsafe.Pointer(&in[0]), ptrs(aliased), n)
						for i := range want {
							if !sameBits(in[i], want[i]) {
								t.Fatalf("%v %v nsrc=%d n=%d in place: [%d] = %v, want %v", kind, op, nsrc, n, i, in[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}
