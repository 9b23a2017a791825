package dpml

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/dpmlgo/dpml/mpi"
)

// refFold folds srcs left to right with a scalar op, the order the kernels
// promise.
func refFold[E number](srcs [][]E, f func(a, b E) E) []E {
	out := append([]E(nil), srcs[0]...)
	for _, s := range srcs[1:] {
		for i := range out {
			out[i] = f(out[i], s[i])
		}
	}
	return out
}

func ptrs[E any](ss [][]E) []unsafe.Pointer {
	ps := make([]unsafe.Pointer, len(ss))
	for i, s := range ss {
		ps[i] = unsafe.Pointer(unsafe.SliceData(s))
	}
	return ps
}

func TestKernelsMatchScalarFold(t *testing.T) {
	f64 := map[mpi.Op]func(a, b float64) float64{
		mpi.OpSum:  func(a, b float64) float64 { return a + b },
		mpi.OpProd: func(a, b float64) float64 { return a * b },
		mpi.OpMin:  minOf[float64],
		mpi.OpMax:  maxOf[float64],
	}
	i32 := map[mpi.Op]func(a, b int32) int32{
		mpi.OpSum:  func(a, b int32) int32 { return a + b },
		mpi.OpBand: func(a, b int32) int32 { return a & b },
		mpi.OpBor:  func(a, b int32) int32 { return a | b },
		mpi.OpBxor: func(a, b int32) int32 { return a ^ b },
		mpi.OpLand: func(a, b int32) int32 { return truth[int32](a != 0 && b != 0) },
		mpi.OpLor:  func(a, b int32) int32 { return truth[int32](a != 0 || b != 0) },
		mpi.OpLxor: func(a, b int32) int32 { return truth[int32]((a != 0) != (b != 0)) },
	}
	rng := rand.New(rand.NewPCG(1, 2))
	// Source counts cover every grouping path (1..7 sources); n crosses a
	// block boundary.
	for nsrc := 1; nsrc <= 7; nsrc++ {
		for _, n := range []int{0, 1, 7, blockBytes/8 + 3} {
			fs := make([][]float64, nsrc)
			is := make([][]int32, nsrc)
			for i := range fs {
				fs[i] = make([]float64, n)
				is[i] = make([]int32, n)
				for j := range fs[i] {
					fs[i][j] = rng.NormFloat64() * 1e3
					is[i][j] = int32(rng.IntN(5)) - 2
				}
			}
			for op, f := range f64 {
				k, err := kernelFor(mpi.KindFloat64, op)
				if err != nil {
					t.Fatal(err)
				}
				got := make([]float64, n)
				if n > 0 {
					k(unsafe.Pointer(&got[0]), ptrs(fs), n)
				}
				want := refFold(fs, f)
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("float64 %v nsrc=%d n=%d: [%d] = %v, want %v (bitwise, same order)", op, nsrc, n, i, got[i], want[i])
					}
				}
			}
			for op, f := range i32 {
				k, err := kernelFor(mpi.KindInt32, op)
				if err != nil {
					t.Fatal(err)
				}
				got := make([]int32, n)
				if n > 0 {
					k(unsafe.Pointer(&got[0]), ptrs(is), n)
				}
				want := refFold(is, f)
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("int32 %v nsrc=%d n=%d: [%d] = %v, want %v", op, nsrc, n, i, got[i], want[i])
					}
				}
			}
		}
	}
}

func TestKernelTableMatchesMPIRules(t *testing.T) {
	for k := mpi.KindInt8; k <= mpi.KindComplex128; k++ {
		for _, op := range mpi.Ops() {
			_, err := kernelFor(k, op)
			if want := mpi.OpValidFor(op, k); (err == nil) != want {
				t.Errorf("%v %v: kernel present = %v, MPI says valid = %v", k, op, err == nil, want)
			}
		}
	}
}

func TestKernelInPlaceFirstSource(t *testing.T) {
	// dst may alias the first source: the engine folds into the result.
	a := []float32{1, 2, 3}
	b := []float32{10, 20, 30}
	k, _ := kernelFor(mpi.KindFloat32, mpi.OpSum)
	k(unsafe.Pointer(&a[0]), ptrs([][]float32{a, b}), 3)
	if a[0] != 11 || a[2] != 33 {
		t.Fatalf("aliasing dst and src0: got %v", a)
	}
}

func benchKernel[E real](b *testing.B, kind mpi.Kind, nsrc int) {
	const n = 64 << 10 // elements per source
	srcs := make([][]E, nsrc)
	for i := range srcs {
		srcs[i] = make([]E, n)
		for j := range srcs[i] {
			srcs[i][j] = E(j % 7)
		}
	}
	dst := make([]E, n)
	k, _ := kernelFor(kind, mpi.OpSum)
	ps := ptrs(srcs)
	var z E
	b.SetBytes(int64(n) * int64(unsafe.Sizeof(z)) * int64(nsrc+1)) // bytes read + written
	b.ResetTimer()
	for b.Loop() {
		k(unsafe.Pointer(&dst[0]), ps, n)
	}
}

// The kernels are measured in bytes moved (sources read + result written)
// per second, comparable with BenchmarkCopy's bytes read + written.
func BenchmarkSumFloat64x2(b *testing.B) { benchKernel[float64](b, mpi.KindFloat64, 2) }
func BenchmarkSumFloat64x8(b *testing.B) { benchKernel[float64](b, mpi.KindFloat64, 8) }
func BenchmarkSumFloat32x2(b *testing.B) { benchKernel[float32](b, mpi.KindFloat32, 2) }
func BenchmarkSumFloat32x8(b *testing.B) { benchKernel[float32](b, mpi.KindFloat32, 8) }

func BenchmarkCopy(b *testing.B) {
	const n = 64 << 10
	src := make([]float64, n)
	dst := make([]float64, n)
	b.SetBytes(2 * n * 8)
	for b.Loop() {
		copy(dst, src)
	}
}
