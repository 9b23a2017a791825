//go:build mpich

package mpi

// #cgo pkg-config: mpich
import "C"

// InitLevel is the thread level Init asks for. MPICH takes its locks at
// MPI_THREAD_MULTIPLE only, so funneled, the level that describes a Go
// program whose MPI calls come from one locked goroutine, costs nothing
// over single (package doc, "Thread level").
const InitLevel = ThreadFunneled
