package mpi

import (
	"os"
	"runtime"
)

// MPI ranks usually run one per core (mpirun --bind-to core), and the Go
// runtime then sets GOMAXPROCS to 1. With a single P, every MPI call that
// blocks for more than about 20 us (a barrier, a collective waiting for a
// late rank) is a cgo call whose P the runtime's monitor thread (sysmon)
// retakes: it does so only when no other P is idle. sysmon shares the
// rank's core, keeps waking every 20 us while it finds work like this, and
// each wake-up is a context switch on the core the rank polls from; the
// call returning then has to take a P back the slow way. A second P, idle,
// makes the runtime leave the syscall's P alone (runtime.retake), and
// sysmon backs off to 10 ms sleeps. The idle P runs nothing unless the
// program starts goroutines. GOMAXPROCS set in the environment wins.
//
// Seen on the 32-core device: MPI_Allreduce of 8 bytes had a median of
// 4.9 us from a C program and 15 us from dpmlbench (Go) in the same layout
// (bench/results/2026-11-22-h200x2), measured before this setting existed.
func init() {
	if os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) == 1 {
		runtime.GOMAXPROCS(2)
	}
}
