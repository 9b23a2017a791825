package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/dpmlgo/dpml/dpml"
	"github.com/dpmlgo/dpml/internal/tools/bench"
	"github.com/dpmlgo/dpml/mpi"
)

// cmdCold times what a Go program's first calls of each size cost: N
// timed calls per size of the MPI library's allreduce and of dpml's, with
// no untimed call before them, the two taking turns going first (as
// dpmlbench-c -pattern cold does for C programs). The dpml communicator is
// made once, before the first size (its setup time is printed), or per
// size with -fresh (then each setup is timed apart). Back to back: the
// time to the end of call k is the largest over ranks, and the means are
// those ends over k; -barrier puts a barrier before each call and takes
// each call's largest time.
func cmdCold(args []string) error {
	fs := newFlagSet("cold", "dpmlbench cold [-sizes LIST] [-calls N] [-barrier] [-fresh]")
	sizes := fs.String("sizes", "4:16M:x4", "message sizes in bytes, as for run (float32 sum)")
	calls := fs.Int("calls", 100, "timed calls per size and variant (10, 100 and 1000 are the cases that matter)")
	barrier := fs.Bool("barrier", false, "a barrier before each call (default: back to back)")
	fresh := fs.Bool("fresh", false, "a new dpml communicator for each size")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	counts, err := bench.ParseSizes(*sizes)
	if err != nil {
		return usagef("-sizes: %v", err)
	}
	if err := bench.CheckElemSizes(counts, 4); err != nil {
		return usagef("-sizes %s: %v", *sizes, err)
	}
	if *calls < 1 {
		return usagef("-calls %d: want at least 1", *calls)
	}
	world, err := initMPI()
	if err != nil {
		return err
	}
	defer mpi.Finalize()
	return runCold(world, os.Stdout, counts, *calls, *barrier, *fresh)
}

// runCold is cold's measurement on world; rank 0 writes the table to w.
// Every variant's last result is checked against the sum computed here
// (#wrong), and a wrong element is an error on every rank.
func runCold(world *mpi.Comm, w io.Writer, counts []int, n int, barrier, fresh bool) error {
	var err error
	send := make([]float32, slices.Max(counts)/4)
	recv := make([]float32, len(send))
	for i := range send {
		send[i] = float32(world.Rank() + i%7)
	}
	size := world.Size()
	want := func(i int) float32 { return float32(size*(size-1)/2 + size*(i%7)) }
	loc, mx := make([]float64, n), make([]float64, n)
	var d *dpml.Comm
	newComm := func() (time.Duration, error) {
		t0 := time.Now()
		c, err := dpml.New(world)
		d = c
		return time.Since(t0), err
	}
	if !fresh {
		setup, err := newComm()
		if err != nil {
			return err
		}
		if world.Rank() == 0 {
			fmt.Fprintf(w, "# dpml communicator set up in %.2f ms (before the first size)\n", setup.Seconds()*1e3)
		}
	}
	pattern := "cold b2b"
	if barrier {
		pattern = "cold barrier"
	}
	if world.Rank() == 0 {
		fmt.Fprintf(w, "# dpmlbench cold: %d ranks, %s, %d timed calls per size and variant, float32 sum, times in us (max over ranks); ratio = dpml / native (lower is better)\n", world.Size(), pattern, n)
		fmt.Fprintf(w, "%12s %10s %-8s %10s %10s %10s %10s %7s %7s %7s %6s  %s\n", "bytes", "count", "variant", "first", "mean10", "mean", "median", "r.first", "r.10", "r.mean", "#wrong", "plan")
	}
	for si, bytes := range counts {
		x, y := send[:bytes/4], recv[:bytes/4]
		var row [2][4]float64
		var wrong [2]int64
		plan := "native"
		for t := range 2 {
			v := t
			if si%2 == 1 {
				v = 1 - t // the variants take turns going first
			}
			if v == 1 && fresh {
				setup, err := newComm()
				if err != nil {
					return err
				}
				if world.Rank() == 0 {
					fmt.Fprintf(w, "# %d bytes: dpml communicator set up in %.2f ms\n", bytes, setup.Seconds()*1e3)
				}
			}
			if err := world.Barrier(); err != nil {
				return err
			}
			t0 := time.Now()
			clear(y)
			for j := range n {
				if barrier {
					if err := world.Barrier(); err != nil {
						return err
					}
					t0 = time.Now()
				}
				if v == 0 {
					err = mpi.Allreduce(world, x, y, mpi.OpSum)
				} else {
					err = dpml.Allreduce(d, x, y, mpi.OpSum)
				}
				if err != nil {
					return err
				}
				loc[j] = time.Since(t0).Seconds()
			}
			bad := []int64{0}
			for i, got := range y {
				if got != want(i) {
					bad[0]++
				}
			}
			if err := mpi.AllreduceInPlace(world, bad, mpi.OpSum); err != nil {
				return err
			}
			wrong[v] = bad[0]
			if v == 1 {
				plan = d.LastPlan().Spec()
				if fresh {
					if err := d.Close(); err != nil {
						return err
					}
				}
			}
			if err := mpi.Allreduce(world, loc, mx, mpi.OpMax); err != nil {
				return err
			}
			k10 := min(n, 10)
			per := make([]float64, n)
			if barrier {
				copy(per, mx)
				row[v][0], row[v][1], row[v][2] = mx[0], mean(mx[:k10]), mean(mx)
			} else {
				for j := range n {
					per[j] = mx[j]
					if j > 0 {
						per[j] -= mx[j-1]
					}
				}
				row[v][0], row[v][1], row[v][2] = mx[0], mx[k10-1]/float64(k10), mx[n-1]/float64(n)
			}
			sort.Float64s(per)
			row[v][3] = per[n/2]
		}
		if world.Rank() == 0 {
			for v, name := range []string{"native", "dpml"} {
				r := row[v]
				fmt.Fprintf(w, "%12d %10d %-8s %10.2f %10.2f %10.2f %10.2f", bytes, bytes/4, name, r[0]*1e6, r[1]*1e6, r[2]*1e6, r[3]*1e6)
				if v == 1 {
					fmt.Fprintf(w, " %7.3f %7.3f %7.3f %6d  %s\n", r[0]/row[0][0], r[1]/row[0][1], r[2]/row[0][2], wrong[v], plan)
				} else {
					fmt.Fprintf(w, " %7s %7s %7s %6d  native\n", "-", "-", "-", wrong[v])
				}
			}
		}
		if wrong[0]+wrong[1] > 0 {
			return &exitError{code: 1, err: fmt.Errorf("cold: %d bytes: %d wrong elements (native %d, dpml %d)", bytes, wrong[0]+wrong[1], wrong[0], wrong[1])}
		}
	}
	if d != nil && !fresh {
		if err := d.Close(); err != nil {
			return err
		}
	}
	return nil
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}
