//go:build goexperiment.simd && amd64

package dpml

import (
	"math/rand/v2"
	"simd/archsimd"
	"testing"
	"unsafe"

	"github.com/dpmlgo/dpml/mpi"
)

// TestSIMDKernels calls the vector loops of kernels_simd.go directly (the
// kernel table uses them only on AVX2 machines) against the oracle, at
// every alignment within a cache line and lengths around the vector width
// and unroll (16 float32, 8 float64 per iteration).
func TestSIMDKernels(t *testing.T) {
	if !archsimd.X86.AVX2() {
		t.Skip("no AVX2: the portable kernels run (tested by TestKernelsMatchScalarFold)")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	simdCase(t, rng, "vsum2f32", 2, func(d []float32, s [][]float32) { vsum2f32(d, s[0], s[1]) })
	simdCase(t, rng, "vsum3f32", 3, func(d []float32, s [][]float32) { vsum3f32(d, s[0], s[1], s[2]) })
	simdCase(t, rng, "vsum4f32", 4, func(d []float32, s [][]float32) { vsum4f32(d, s[0], s[1], s[2], s[3]) })
	simdCase(t, rng, "vsum2f64", 2, func(d []float64, s [][]float64) { vsum2f64(d, s[0], s[1]) })
	simdCase(t, rng, "vsum3f64", 3, func(d []float64, s [][]float64) { vsum3f64(d, s[0], s[1], s[2]) })
	simdCase(t, rng, "vsum4f64", 4, func(d []float64, s [][]float64) { vsum4f64(d, s[0], s[1], s[2], s[3]) })
}

func simdCase[T float32 | float64](t *testing.T, rng *rand.Rand, name string, nsrc int, f func(d []T, s [][]T)) {
	t.Helper()
	sum := oracleOp[T](mpi.OpSum)
	line := alignBytes / int(unsafe.Sizeof(*new(T)))
	for n := 0; n <= 67; n++ {
		for off := range line {
			srcs := make([][]T, nsrc)
			for i := range srcs {
				o := (off + 5*i) % line
				srcs[i] = make([]T, n+line)[o : o+n]
				for j := range srcs[i] {
					srcs[i][j] = randomValue[T](rng)
				}
			}
			want := oracleFold(srcs, sum)
			d := make([]T, n+line)[off : off+n]
			f(d, srcs)
			for i := range want {
				if !sameBits(d[i], want[i]) {
					t.Fatalf("%s n=%d offset %d: [%d] = %v, want %v", name, n, off, i, d[i], want[i])
				}
			}
		}
	}
}
