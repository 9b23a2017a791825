package dpml

import (
	"testing"
	"unsafe"

	"github.com/dpmlgo/dpml/mpi"
)

func ptrs[E any](ss [][]E) []unsafe.Pointer {
	ps := make([]unsafe.Pointer, len(ss))
	for i, s := range ss {
		ps[i] = unsafe.Pointer(unsafe.SliceData(s))
	}
	return ps
}

// TestKernelsMatchScalarFold is in oracle_test.go.

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
