package main

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"github.com/dpmlgo/dpml/mpi"
	"github.com/dpmlgo/dpml/shm"
)

// go-floor: the cache-line allreduce of bench/diag/floor (gather over a
// heap of radix 4, then every rank reads rank 0's result line) written in
// plain Go over a shm.Segment, without the engine: what the language and
// its runtime cost against the C floor, apart from what the engine adds.
// Sizes of 8 to 56 bytes (1 to 7 float64; float32 sizes are refused).

type floorLine struct {
	seq  atomic.Uint64
	data [7]float64
	_    [0]uint64
}

type floorState struct {
	seg      *shm.Segment
	up, down []*floorLine
	upSeq    []*atomic.Uint64
	downSeq  *atomic.Uint64
	me, np   int
	g        uint64
}

var fl *floorState

const floorRadix = 4

func floorSetup(w *mpi.Comm) error {
	if fl != nil {
		return nil
	}
	me, np := w.Rank(), w.Size()
	pid := []int64{0}
	if me == 0 {
		pid[0] = int64(os.Getpid())
	}
	if err := mpi.AllreduceInPlace(w, pid, mpi.OpMax); err != nil {
		return err
	}
	name := fmt.Sprintf("dpml-gocall-floor-%d", pid[0])
	size := 64 * 2 * np
	var seg *shm.Segment
	var err error
	if me == 0 {
		seg, err = shm.Create(name, size)
	}
	if berr := w.Barrier(); berr != nil {
		return berr
	}
	if me != 0 {
		seg, err = shm.Open(name, size)
	}
	if berr := w.Barrier(); berr != nil {
		return berr
	}
	if err != nil {
		return err
	}
	if me == 0 {
		_ = seg.Unlink()
	}
	b := seg.Bytes()
	f := &floorState{seg: seg, me: me, np: np}
	for i := 0; i < 2*np; i++ {
		l := (*floorLine)(unsafe.Pointer(&b[64*i]))
		if i < np {
			f.up = append(f.up, l)
		} else {
			f.down = append(f.down, l)
		}
	}
	for _, l := range f.up {
		f.upSeq = append(f.upSeq, &l.seq)
	}
	f.downSeq = &f.down[0].seq
	fl = f
	return w.Barrier()
}

func loopFloor(w *mpi.Comm, b *bufs, bytes, iters int) error {
	return floorLoop(w, b, bytes, iters, nil)
}

// go-floor-w: go-floor waiting through a shm.Waiter (the engine's waits,
// default spin and back-off) instead of a bare spin.
func loopFloorW(w *mpi.Comm, b *bufs, bytes, iters int) error {
	return floorLoop(w, b, bytes, iters, &shm.Waiter{NoSleep: true})
}

func floorLoop(w *mpi.Comm, b *bufs, bytes, iters int, wt *shm.Waiter) error {
	if b.s64 == nil || len(b.s64) > 7 {
		return fmt.Errorf("go-floor: %d bytes: only 8 to 56 bytes of float64", bytes)
	}
	if err := floorSetup(w); err != nil {
		return err
	}
	f := fl
	n := len(b.s64)
	in, out := b.s64, b.r64
	var acc [7]float64
	for it := 0; it < iters; it++ {
		f.g++
		g := f.g
		copy(acc[:n], in)
		for c := floorRadix*f.me + 1; c <= floorRadix*f.me+floorRadix && c < f.np; c++ {
			l := f.up[c]
			if wt != nil {
				if err := wt.UntilAtLeast(f.upSeq[c], g); err != nil {
					return err
				}
			}
			for l.seq.Load() < g {
			}
			for j := 0; j < n; j++ {
				acc[j] += l.data[j]
			}
		}
		if f.me != 0 {
			// Through a pointer made without touching the line: a
			// nil check (a load) would first pull in the line this
			// rank is about to overwrite (see dpml's ctlLine.data).
			dp := (*[7]float64)(unsafe.Add(unsafe.Pointer(f.up[f.me]), 8))
			*dp = acc
			shm.StoreRelease(f.upSeq[f.me], g)
			d := f.down[0]
			if wt != nil {
				if err := wt.UntilAtLeast(f.downSeq, g); err != nil {
					return err
				}
			}
			for d.seq.Load() < g {
			}
			copy(out, d.data[:n])
		} else {
			dp := (*[7]float64)(unsafe.Add(unsafe.Pointer(f.down[0]), 8))
			*dp = acc
			shm.StoreRelease(f.downSeq, g)
			copy(out, acc[:n])
		}
	}
	return nil
}
