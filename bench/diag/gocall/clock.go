package main

// #include "probe.h"
import "C"

import (
	"fmt"
	"time"

	"github.com/dpmlgo/dpml/internal/runtime/gosched"
	"github.com/dpmlgo/dpml/mpi"
)

// clockProbe is `gocall clock`: what the calls a timed loop makes around
// each MPI call cost on this machine, every rank measuring at once. Rank
// 0 prints, in ns per call (max over ranks): CLOCK_MONOTONIC and
// MPI_Wtime read in C, Go's time.Now and time.Since, an empty cgo call,
// gosched.Pace (a clock read when no yield is due), and an allreduce of one
// float32 on MPI_COMM_SELF from C and through mpi.Allreduce (no peer to
// wait for: the difference is what the binding adds to every call). A Go
// caller pays the cgo call and Pace on every MPI call it makes; a timed
// loop adds its clock read.
func clockProbe(iters int) error {
	if _, err := mpi.Init(); err != nil {
		return err
	}
	defer mpi.Finalize()
	if err := gosched.Apply(); err != nil {
		return err
	}
	w := mpi.World()
	epoch := time.Now()
	var sink time.Duration
	goLoop := func(f func()) float64 {
		t0 := time.Now()
		for range iters {
			f()
		}
		return float64(time.Since(t0).Nanoseconds()) / float64(iters)
	}
	names := []string{"c_clock_gettime", "c_mpi_wtime", "go_time_now", "go_time_since", "cgo_noop", "mpi_pace", "c_allreduce_self", "go_allreduce_self"}
	var v [8]float64
	self, in, out := mpi.Self(), []float32{1}, []float32{0}
	for rep := 0; rep < 3; rep++ {
		if err := w.Barrier(); err != nil {
			return err
		}
		v[0] = float64(C.probe_clock_loop(C.long(iters), 0))
		v[1] = float64(C.probe_clock_loop(C.long(iters), 1))
		v[2] = goLoop(func() { sink += time.Duration(time.Now().Nanosecond()) })
		v[3] = goLoop(func() { sink += time.Since(epoch) })
		v[4] = goLoop(func() { C.probe_noop() })
		v[5] = goLoop(gosched.Pace)
		v[6] = float64(C.probe_self_loop(C.long(iters)))
		var serr error
		v[7] = goLoop(func() {
			if err := mpi.Allreduce(self, in, out, mpi.OpSum); err != nil {
				serr = err
			}
		})
		if serr != nil {
			return serr
		}
		var mx [8]float64
		if err := mpi.Reduce(w, v[:], mx[:], mpi.OpMax, 0); err != nil {
			return err
		}
		if w.Rank() == 0 {
			if rep == 0 {
				fmt.Println("clock,ranks,rep,probe,ns_per_call_max")
			}
			for i, n := range names {
				fmt.Printf("clock,%d,%d,%s,%.1f\n", w.Size(), rep, n, mx[i])
			}
		}
	}
	if sink == -1 {
		fmt.Println(sink) // keeps the reads
	}
	return nil
}
