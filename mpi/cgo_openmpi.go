//go:build !mpich

package mpi

// Open MPI is the default; build with -tags mpich for MPICH (and its ABI
// relatives). The rest of the package is ABI-neutral.

// #cgo pkg-config: ompi-c
import "C"

// InitLevel is the thread level Init asks for. Open MPI 4.1 turns its
// internal locks on at every level above MPI_THREAD_SINGLE, funneled
// included: each send, match and progress step then takes a mutex. A Go
// program that calls MPI from its Init goroutine only needs none of them,
// so Init asks for single (package doc, "Thread level").
const InitLevel = ThreadSingle
