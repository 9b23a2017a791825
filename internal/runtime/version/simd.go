//go:build goexperiment.simd && amd64

package version

// VectorKernels reports whether this build has the vector reduction
// kernels of package dpml (GOEXPERIMENT=simd on amd64; they run where the
// CPU has AVX2).
const VectorKernels = true
