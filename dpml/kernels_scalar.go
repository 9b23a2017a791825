//go:build !(goexperiment.simd && amd64)

package dpml

// vectorKernels: this build has only the scalar kernels (kernels_gen.go).
const vectorKernels = false
