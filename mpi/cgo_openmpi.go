//go:build !mpich

package mpi

// Open MPI is the default; build with -tags mpich for MPICH (and its ABI
// relatives). The rest of the package is ABI-neutral.

// #cgo pkg-config: ompi-c
import "C"
