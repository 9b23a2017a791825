// Command miniamr runs the MiniAMR-style adaptive-mesh mini-app (package
// apps/miniamr) on the MPI job it is started in, with the allreduce backend
// of -backend, and reports the total time, the time in allreduce (split by
// purpose: checksums, block counts, balance loop, min/max) and the
// checksums.
//
//	mpirun -np 8 miniamr -nx 10 -vars 40 -num-refine 3 -steps 20 -backend dpml -json out.json
//	dpmlrun -nodes 2 -ppn 4 -- miniamr -backend dpml-l4 -vars 1024
//
// The flags follow miniAMR's options (--nx, --num_vars, --init_x, ...).
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"

	"github.com/dpmlgo/dpml/apps/internal/backend"
	"github.com/dpmlgo/dpml/apps/internal/report"
	"github.com/dpmlgo/dpml/apps/miniamr"
	"github.com/dpmlgo/dpml/mpi"
)

const prog = "miniamr"

// Output is the app-specific part of the JSON result.
type Output struct {
	Checksums      []float64        `json:"checksums"` // per variable, at the last check
	ChecksumHash   string           `json:"checksum_hash"`
	Checks         int              `json:"checks"`
	ChecksumBytes  int              `json:"checksum_bytes"` // size of one checksum allreduce
	MaxDrift       float64          `json:"max_drift"`      // largest relative change between checks
	BlocksPerLevel []int64          `json:"blocks_per_level"`
	MinBlocks      int64            `json:"min_blocks"`
	MaxBlocks      int64            `json:"max_blocks"`
	BlockStages    int64            `json:"block_stages"` // sum over stages of the global block count
	MaxRankBlocks  int64            `json:"max_rank_blocks"`
	Splits         int64            `json:"splits"` // over all ranks
	Merges         int64            `json:"merges"`
	RefineRounds   int              `json:"refine_rounds"`
	BalanceSweeps  int              `json:"balance_sweeps"`
	Objects        []miniamr.Object `json:"objects_final"`
}

func main() {
	runtime.LockOSThread()
	fs := flag.NewFlagSet(prog, flag.ExitOnError)
	p := miniamr.DefaultParams()
	fs.IntVar(&p.N, "nx", p.N, "cells per block edge (even) [--nx = --ny = --nz]")
	fs.IntVar(&p.Vars, "vars", p.Vars, "variables per cell; one checksum allreduce carries this many float64 [--num_vars]")
	fs.IntVar(&p.InitX, "init-x", p.InitX, "root blocks per rank along x [--init_x]")
	fs.IntVar(&p.InitY, "init-y", p.InitY, "root blocks per rank along y [--init_y]")
	fs.IntVar(&p.InitZ, "init-z", p.InitZ, "root blocks per rank along z [--init_z]")
	fs.IntVar(&p.PX, "npx", 0, "process grid along x (0: npx, npy, npz chosen as cubic as possible)")
	fs.IntVar(&p.PY, "npy", 0, "process grid along y")
	fs.IntVar(&p.PZ, "npz", 0, "process grid along z")
	fs.IntVar(&p.MaxLevel, "num-refine", p.MaxLevel, "refinement levels above the root blocks [--num_refine]")
	fs.IntVar(&p.Steps, "steps", p.Steps, "time steps [--num_tsteps]")
	fs.IntVar(&p.Stages, "stages", p.Stages, "stages per time step [--stages_per_ts]")
	fs.IntVar(&p.ChecksumFreq, "checksum-freq", p.ChecksumFreq, "checksum every this many stages, 0: never [--checksum_freq]")
	fs.IntVar(&p.RefineFreq, "refine-freq", p.RefineFreq, "adapt the mesh every this many steps, 0: never [--refine_freq]")
	fs.IntVar(&p.RefineRounds, "block-change", 0, "refinement rounds per adaptation (0: -num-refine) [--block_change]")
	fs.IntVar(&p.MaxBlocks, "max-blocks", p.MaxBlocks, "most blocks one rank may hold [--max_blocks]")
	fs.Float64Var(&p.Tol, "tol", p.Tol, "largest relative change of a checksum between checks [--tol]")
	nobj := fs.Int("objects", len(p.Objects), "moving spheres (the first two fixed, more generated)")
	fs.BoolVar(&p.Lattice, "lattice", false, "one sphere per rank, moving inside the rank's subdomain, instead of -objects: every rank refines alike (balanced weak scaling)")
	jsonOut := fs.String("json", "", "write the result as JSON to this file (- for standard output)")
	name := fs.String("name", prog, "the app's name in the JSON result (to tell configurations apart in apptable)")
	quiet := fs.Bool("quiet", false, "print only errors")
	bf := backend.AddFlags(fs)
	fs.Parse(os.Args[1:])
	p.Objects = miniamr.DefaultObjects(*nobj)

	if _, err := mpi.Init(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: MPI init: %v\n", prog, err)
		os.Exit(1)
	}
	defer mpi.Finalize()
	w := mpi.World()
	spec, err := bf.Spec()
	if err != nil {
		if w.Rank() == 0 {
			fmt.Fprintf(os.Stderr, "%s: %v\n", prog, err)
		}
		mpi.Finalize()
		os.Exit(2)
	}
	if err := run(w, p, spec, *jsonOut, *name, *quiet); err != nil {
		backend.Fatal(prog, w, err)
	}
}

func run(w *mpi.Comm, p miniamr.Params, spec backend.Spec, jsonOut, name string, quiet bool) error {
	rank := w.Rank()
	lay, r, err := backend.Open(w, spec)
	if err != nil {
		return err
	}
	defer r.Close()
	m, err := miniamr.NewMesh(w, p, r)
	if err != nil {
		return err
	}
	p = m.P // defaults resolved
	if rank == 0 && !quiet {
		fmt.Printf("miniamr: %d ranks, layout %s (nodes x ppn), process grid %s, %dx%dx%d root blocks per rank of %d^3 cells x %d vars, %d levels, %d objects\n",
			w.Size(), lay, m.Grid, p.InitX, p.InitY, p.InitZ, p.N, p.Vars, p.MaxLevel, len(p.Objects))
		pi, pc := r.Plan(1, 8), r.Plan(p.Vars, 8)
		fmt.Printf("miniamr: backend %s (1-element allreduce: %s l=%d; %d-double checksum: %s l=%d k=%d)\n",
			spec, pi.Variant, pi.Leaders, p.Vars, pc.Variant, pc.Leaders, pc.Pipeline)
	}
	if err := w.Barrier(); err != nil {
		return err
	}
	t0 := mpi.Wtime()
	res, err := m.Run()
	if err != nil {
		return err
	}
	total := mpi.Wtime() - t0

	st := m.Stats
	sm := []int64{int64(st.Splits), int64(st.Merges)}
	if err := mpi.AllreduceInPlace(w, sm, mpi.OpSum); err != nil {
		return err
	}
	// The checksums must be the same bits everywhere.
	h := []uint64{res.Hash}
	hs := make([]uint64, w.Size())
	if err := mpi.Allgather(w, h, hs); err != nil {
		return err
	}
	for i, x := range hs {
		if x != h[0] {
			return fmt.Errorf("checksums differ between rank 0 and rank %d", i)
		}
	}
	out := &report.Result{App: name, ProcGrid: m.Grid.String(), Params: p}
	phases := []backend.Phase{
		{Name: "comm", Sec: st.Comm.Seconds()}, {Name: "stencil", Sec: st.Stencil.Seconds()},
		{Name: "checksum", Sec: st.Checksum.Seconds()}, {Name: "refine", Sec: st.Refine.Seconds()},
	}
	if err := r.Fill(out, lay, total, phases, []int{1, p.MaxLevel + 1, p.Vars}, 8); err != nil {
		return err
	}
	o := Output{
		Checksums: res.Checksums, ChecksumHash: fmt.Sprintf("%016x", res.Hash), Checks: res.Checks,
		ChecksumBytes: 8 * p.Vars, MaxDrift: res.MaxDrift, BlocksPerLevel: res.BlocksPerLevel,
		MinBlocks: res.MinBlocks, MaxBlocks: res.MaxBlocks, BlockStages: res.BlockStages,
		MaxRankBlocks: st.MaxRankBlocks, Splits: sm[0], Merges: sm[1],
		RefineRounds: st.RefineRounds, BalanceSweeps: st.BalanceSweeps, Objects: m.Objects(),
	}
	out.Output = o
	return report.Emit(rank, quiet, jsonOut, out, func() { summary(out, o) })
}

func summary(res *report.Result, o Output) {
	fmt.Printf("miniamr: %d checksums of %d variables (%d B each), largest relative drift %.3g, hash %s\n",
		o.Checks, len(o.Checksums), o.ChecksumBytes, o.MaxDrift, o.ChecksumHash)
	if len(o.Checksums) > 0 {
		n := min(4, len(o.Checksums))
		fmt.Printf("miniamr: checksums[0:%d] = %.17g\n", n, o.Checksums[:n])
	}
	fmt.Printf("miniamr: blocks per level %v (global %d..%d over the run, at most %d on one rank), %d splits, %d merges, %d refine rounds, %d balance sweeps\n",
		o.BlocksPerLevel, o.MinBlocks, o.MaxBlocks, o.MaxRankBlocks, o.Splits, o.Merges, o.RefineRounds, o.BalanceSweeps)
	fmt.Printf("miniamr: total %.4f s, allreduce %.4f s (%.2f%%; min %.4f, max %.4f over ranks)\n",
		res.TotalSec, res.AllreduceSec, 100*res.AllreduceShare, res.AllreduceMinSec, res.AllreduceMaxSec)
	for _, c := range res.Allreduce {
		fmt.Printf("miniamr:   allreduce %-8s %6d calls of up to %4d elements, %.4f s (%.2f us each)\n",
			c.Name, c.Calls, c.MaxCount, c.MeanSec, c.PerCall)
	}
	fmt.Printf("miniamr: phase seconds (mean over ranks): comm %.4f stencil %.4f checksum %.4f refine %.4f\n",
		res.Phases["comm"], res.Phases["stencil"], res.Phases["checksum"], res.Phases["refine"])
}
