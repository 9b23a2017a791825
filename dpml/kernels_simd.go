//go:build goexperiment.simd && amd64

// The vector forms of the generated sum loops (kernels_gen.go); each lane
// keeps their order of operations.

package dpml

import (
	"simd/archsimd"

	"github.com/dpmlgo/dpml/mpi"
)

// With GOEXPERIMENT=simd on an AVX2 machine, float sums use 256-bit vectors.
// Each lane adds in the same order as the scalar loop, so results are
// bit-identical to it: only the speed (and the loads in flight, which is
// what a leader pulling lines from other cores' caches is bound by) changes.
//
// Every kernel that ran its vector loop ends with VZEROUPPER
// (archsimd.ClearAVXUpperBits; the compiler does not emit it yet). Left
// dirty, the upper halves of the vector registers make every later legacy
// SSE instruction of the process wait on them on Intel cores: the Go
// runtime's (its zero register X15, memmove) and the C code around the
// drop-in library's calls. On a 16-core node (Emerald Rapids) a tree call
// of 64 bytes, whose fold runs one vector step, took 2.83-3.11 us without
// it against 2.44-2.71 us with scalar kernels, for the same work.
func init() {
	if !archsimd.X86.AVX2() {
		return
	}
	kernels[mpi.KindFloat32][mpi.OpSum] = blocked(vsum2f32, vsum3f32, vsum4f32)
	kernels[mpi.KindFloat64][mpi.OpSum] = blocked(vsum2f64, vsum3f64, vsum4f64)
}

func vsum2f32(d, a, b []float32) {
	n := len(d)
	a, b = a[:n], b[:n]
	i := 0
	for ; i+16 <= n; i += 16 {
		x0 := archsimd.LoadFloat32x8Slice(a[i:]).Add(archsimd.LoadFloat32x8Slice(b[i:]))
		x1 := archsimd.LoadFloat32x8Slice(a[i+8:]).Add(archsimd.LoadFloat32x8Slice(b[i+8:]))
		x0.StoreSlice(d[i:])
		x1.StoreSlice(d[i+8:])
	}
	if i > 0 {
		archsimd.ClearAVXUpperBits() // see init
	}
	for ; i < n; i++ {
		d[i] = a[i] + b[i]
	}
}

func vsum3f32(d, a, b, c []float32) {
	n := len(d)
	a, b, c = a[:n], b[:n], c[:n]
	i := 0
	for ; i+16 <= n; i += 16 {
		x0 := archsimd.LoadFloat32x8Slice(a[i:]).Add(archsimd.LoadFloat32x8Slice(b[i:])).Add(archsimd.LoadFloat32x8Slice(c[i:]))
		x1 := archsimd.LoadFloat32x8Slice(a[i+8:]).Add(archsimd.LoadFloat32x8Slice(b[i+8:])).Add(archsimd.LoadFloat32x8Slice(c[i+8:]))
		x0.StoreSlice(d[i:])
		x1.StoreSlice(d[i+8:])
	}
	if i > 0 {
		archsimd.ClearAVXUpperBits() // see init
	}
	for ; i < n; i++ {
		d[i] = (a[i] + b[i] + c[i])
	}
}

func vsum4f32(d, a, b, c, e []float32) {
	n := len(d)
	a, b, c, e = a[:n], b[:n], c[:n], e[:n]
	i := 0
	for ; i+16 <= n; i += 16 {
		x0 := archsimd.LoadFloat32x8Slice(a[i:]).Add(archsimd.LoadFloat32x8Slice(b[i:])).Add(archsimd.LoadFloat32x8Slice(c[i:])).Add(archsimd.LoadFloat32x8Slice(e[i:]))
		x1 := archsimd.LoadFloat32x8Slice(a[i+8:]).Add(archsimd.LoadFloat32x8Slice(b[i+8:])).Add(archsimd.LoadFloat32x8Slice(c[i+8:])).Add(archsimd.LoadFloat32x8Slice(e[i+8:]))
		x0.StoreSlice(d[i:])
		x1.StoreSlice(d[i+8:])
	}
	if i > 0 {
		archsimd.ClearAVXUpperBits() // see init
	}
	for ; i < n; i++ {
		d[i] = ((a[i] + b[i] + c[i]) + e[i])
	}
}

func vsum2f64(d, a, b []float64) {
	n := len(d)
	a, b = a[:n], b[:n]
	i := 0
	for ; i+8 <= n; i += 8 {
		x0 := archsimd.LoadFloat64x4Slice(a[i:]).Add(archsimd.LoadFloat64x4Slice(b[i:]))
		x1 := archsimd.LoadFloat64x4Slice(a[i+4:]).Add(archsimd.LoadFloat64x4Slice(b[i+4:]))
		x0.StoreSlice(d[i:])
		x1.StoreSlice(d[i+4:])
	}
	if i > 0 {
		archsimd.ClearAVXUpperBits() // see init
	}
	for ; i < n; i++ {
		d[i] = a[i] + b[i]
	}
}

func vsum3f64(d, a, b, c []float64) {
	n := len(d)
	a, b, c = a[:n], b[:n], c[:n]
	i := 0
	for ; i+8 <= n; i += 8 {
		x0 := archsimd.LoadFloat64x4Slice(a[i:]).Add(archsimd.LoadFloat64x4Slice(b[i:])).Add(archsimd.LoadFloat64x4Slice(c[i:]))
		x1 := archsimd.LoadFloat64x4Slice(a[i+4:]).Add(archsimd.LoadFloat64x4Slice(b[i+4:])).Add(archsimd.LoadFloat64x4Slice(c[i+4:]))
		x0.StoreSlice(d[i:])
		x1.StoreSlice(d[i+4:])
	}
	if i > 0 {
		archsimd.ClearAVXUpperBits() // see init
	}
	for ; i < n; i++ {
		d[i] = (a[i] + b[i] + c[i])
	}
}

func vsum4f64(d, a, b, c, e []float64) {
	n := len(d)
	a, b, c, e = a[:n], b[:n], c[:n], e[:n]
	i := 0
	for ; i+8 <= n; i += 8 {
		x0 := archsimd.LoadFloat64x4Slice(a[i:]).Add(archsimd.LoadFloat64x4Slice(b[i:])).Add(archsimd.LoadFloat64x4Slice(c[i:])).Add(archsimd.LoadFloat64x4Slice(e[i:]))
		x1 := archsimd.LoadFloat64x4Slice(a[i+4:]).Add(archsimd.LoadFloat64x4Slice(b[i+4:])).Add(archsimd.LoadFloat64x4Slice(c[i+4:])).Add(archsimd.LoadFloat64x4Slice(e[i+4:]))
		x0.StoreSlice(d[i:])
		x1.StoreSlice(d[i+4:])
	}
	if i > 0 {
		archsimd.ClearAVXUpperBits() // see init
	}
	for ; i < n; i++ {
		d[i] = ((a[i] + b[i] + c[i]) + e[i])
	}
}
