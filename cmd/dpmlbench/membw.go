package main

import (
	"encoding/json"
	"fmt"
	"github.com/dpmlgo/dpml/internal/tools/results"
	"os"
	"time"

	"github.com/dpmlgo/dpml/internal/tools/bench"
	"github.com/dpmlgo/dpml/mpi"
)

// cmdMemBW is the membw subcommand.
func cmdMemBW(args []string) error {
	fs := newFlagSet("membw", "mpirun -np N dpmlbench membw [flags]")
	size := fs.String("bytes", results.FormatSize(bench.DefaultMemBWBytes), "bytes per array per rank (three arrays)")
	reps := fs.Int("reps", 5, "repetitions (the best is reported)")
	method := fs.String("method", "ranks", "ranks: every rank runs single-threaded kernels at once; threads: one rank per node runs -threads locked goroutines")
	threads := fs.Int("threads", 0, "threads per node for -method threads (default: ranks on the node)")
	jsonOut := fs.String("json", "", "also write the result as JSON to this file")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	bytes, err := bench.ParseSize(*size)
	if err != nil || bytes < 8 {
		return usagef("-bytes %q: want a size >= 8", *size)
	}
	if *reps < 1 || (*method != "ranks" && *method != "threads") || *threads < 0 {
		return usagef("want -reps >= 1, -method ranks|threads, -threads >= 0")
	}
	world, err := initMPI()
	if err != nil {
		return err
	}
	defer mpi.Finalize()
	lay, err := gatherLayout(world)
	if err != nil {
		abort(world, err)
	}
	defer lay.node.Free()
	var bw *results.MemBW
	if *method == "ranks" {
		bw, err = probeMemBW(world, lay, bytes, *reps)
	} else {
		bw, err = probeMemBWThreads(world, lay, bytes, *reps, *threads)
	}
	if err != nil {
		abort(world, err)
	}
	if world.Rank() != 0 {
		return nil
	}
	fmt.Printf("memory bandwidth, %s method, %s per array, best of %d (GB/s = 1e9 bytes read+written per second):\n",
		bw.Method, results.FormatSize(bytes), *reps)
	fmt.Printf("%-20s %6s %10s %10s\n", "node", "ranks", "copy", "triad")
	for _, n := range bw.PerNode {
		fmt.Printf("%-20s %6d %10.1f %10.1f\n", n.Host, n.Ranks, n.CopyGBs, n.TriadGBs)
	}
	fmt.Printf("%-20s %6s %10.1f %10.1f\n", "min over nodes", "", bw.CopyGBs, bw.TriadGBs)
	if bw.SingleCopy > 0 {
		fmt.Printf("one rank alone: copy %.1f GB/s\n", bw.SingleCopy)
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(bw, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("membw: %w", err)
		}
	}
	return nil
}

// probeMemBW: every rank runs single-threaded copy and triad over its own
// arrays, all ranks starting after a barrier. A node's bandwidth for one
// repetition is the bytes moved by all its ranks over the span from the
// first start to the last end on the node (one clock per node); the best
// repetition is kept. Collective over world.
func probeMemBW(world *mpi.Comm, lay layout, bytes, reps int) (*results.MemBW, error) {
	arr := bench.NewMemBWArrays(bytes)
	n := len(arr.A)
	per := [2]int{bench.CopyBytesPerElem, bench.TriadBytesPerElem}
	// per (rep, kernel): -start, end; MPI_MAX over the node gives the
	// earliest start and the latest end.
	local := make([]float64, 4*reps)
	for rep := 0; rep < reps; rep++ {
		for k := 0; k < 2; k++ {
			if err := world.Barrier(); err != nil {
				return nil, fmt.Errorf("membw: %w", err)
			}
			t0 := mpi.Wtime()
			if k == 0 {
				arr.Copy()
			} else {
				arr.Triad(3)
			}
			t1 := mpi.Wtime()
			local[(rep*2+k)*2], local[(rep*2+k)*2+1] = -t0, t1
		}
	}
	span := make([]float64, len(local))
	if err := mpi.Allreduce(lay.node, local, span, mpi.OpMax); err != nil {
		return nil, fmt.Errorf("membw: node reduction: %w", err)
	}
	var best [2]float64
	for rep := 0; rep < reps; rep++ {
		for k := 0; k < 2; k++ {
			i := (rep*2 + k) * 2
			best[k] = max(best[k], bench.GBs(float64(per[k]*n*lay.nodeSize), span[i]+span[i+1]))
		}
	}
	// One rank alone, for reference: rank 0 while the others wait.
	single := 0.0
	if err := world.Barrier(); err != nil {
		return nil, err
	}
	if world.Rank() == 0 {
		for rep := 0; rep < reps; rep++ {
			t0 := mpi.Wtime()
			arr.Copy()
			single = max(single, bench.GBs(float64(per[0]*n), mpi.Wtime()-t0))
		}
	}
	if err := world.Barrier(); err != nil {
		return nil, err
	}
	return collectMemBW(world, lay, "ranks", n*8, reps, best, single)
}

// probeMemBWThreads: the first rank of every node runs threads goroutines,
// each locked to an OS thread, while the node's other ranks sleep-wait.
func probeMemBWThreads(world *mpi.Comm, lay layout, bytes, reps, threads int) (*results.MemBW, error) {
	if threads == 0 {
		threads = lay.nodeSize
	}
	var best [2]float64
	var err error
	if lay.nodeRank == 0 {
		best[0], best[1], err = bench.ThreadedMemBW(threads, bytes, reps)
		if err != nil {
			return nil, err
		}
	}
	if err := quietBarrier(lay.node); err != nil {
		return nil, err
	}
	// Every rank of the node reports the node's figures.
	b := []float64{best[0], best[1]}
	if err := mpi.Bcast(lay.node, b, 0); err != nil {
		return nil, err
	}
	return collectMemBW(world, lay, fmt.Sprintf("threads(%d)", threads), max(bytes/8, 1)*8, reps, [2]float64{b[0], b[1]}, 0)
}

// quietBarrier waits for the node without busy-polling (so waiting ranks do
// not steal the cores the probe measures).
func quietBarrier(c *mpi.Comm) error {
	in, out := []int32{1}, make([]int32, 1)
	req, err := mpi.Iallreduce(c, in, out, mpi.OpSum)
	if err != nil {
		return err
	}
	for {
		done, err := req.Test()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
}

// collectMemBW gathers every node's figures (held by each of its ranks) and
// builds the result: per node, and the minimum over nodes.
func collectMemBW(world *mpi.Comm, lay layout, method string, bytesPerArray, reps int, best [2]float64, single float64) (*results.MemBW, error) {
	all := make([]float64, 3*world.Size())
	if err := mpi.Allgather(world, []float64{best[0], best[1], float64(lay.nodeSize)}, all); err != nil {
		return nil, fmt.Errorf("membw: gather: %w", err)
	}
	bw := &results.MemBW{Method: method, BytesPerRank: bytesPerArray, Reps: reps, SingleCopy: single}
	seen := map[string]bool{}
	for r, h := range lay.rankHosts {
		if seen[h] {
			continue
		}
		seen[h] = true
		nb := results.NodeMemBW{Host: h, Ranks: int(all[3*r+2]), CopyGBs: all[3*r], TriadGBs: all[3*r+1]}
		bw.PerNode = append(bw.PerNode, nb)
		if len(bw.PerNode) == 1 || nb.CopyGBs < bw.CopyGBs {
			bw.CopyGBs = nb.CopyGBs
		}
		if len(bw.PerNode) == 1 || nb.TriadGBs < bw.TriadGBs {
			bw.TriadGBs = nb.TriadGBs
		}
	}
	return bw, nil
}
