//go:build goexperiment.simd && amd64

package dpml

// vectorKernels: this build has the vector kernels (kernels_simd.go); they
// run where the CPU has AVX2.
const vectorKernels = true
