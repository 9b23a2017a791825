// Command hpcg runs the HPCG-style CG mini-app (package apps/hpcg) on the
// MPI job it is started in, with the allreduce backend of -backend, and
// reports the total time, the time in allreduce (the DDOTs), the
// iterations and the residual reduction.
//
//	mpirun -np 8 hpcg -nx 16 -ny 16 -nz 16 -iters 50 -sets 3 -backend dpml -json out.json
//	dpmlrun -nodes 2 -ppn 4 -- hpcg -backend dpml-l2
//
// Every set is one CG solve from x = 0 of MaxIters iterations (or until
// -tol); sets after the first must reproduce its residual history bit for
// bit, else the run fails. -warmup sets run first, untimed.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"

	"github.com/dpmlgo/dpml/apps/hpcg"
	"github.com/dpmlgo/dpml/apps/internal/backend"
	"github.com/dpmlgo/dpml/apps/internal/report"
	"github.com/dpmlgo/dpml/mpi"
)

const prog = "hpcg"

// Output is the app-specific part of the JSON result.
type Output struct {
	Iterations        int       `json:"iterations"` // per set
	Sets              int       `json:"sets"`
	Converged         bool      `json:"converged"`
	NormR0            float64   `json:"norm_r0"`
	ResidualReduction float64   `json:"residual_reduction"` // ||r|| / ||r0|| at the end of a set
	History           []float64 `json:"residual_history"`
	HistoryHash       string    `json:"history_hash"`  // FNV-1a of the history's bits
	MaxError          float64   `json:"max_error"`     // max |x - 1|
	SetsMaxDiff       float64   `json:"sets_max_diff"` // largest relative difference of a set's history from set 1's
	DDOTs             int64     `json:"ddots"`         // allreduces timed
	Rows              int64     `json:"global_rows"`
}

func main() {
	runtime.LockOSThread()
	fs := flag.NewFlagSet(prog, flag.ExitOnError)
	var p hpcg.Params
	fs.IntVar(&p.NX, "nx", 16, "local box size along x (per rank)")
	fs.IntVar(&p.NY, "ny", 16, "local box size along y")
	fs.IntVar(&p.NZ, "nz", 16, "local box size along z")
	fs.IntVar(&p.PX, "npx", 0, "process grid along x (0: npx, npy, npz chosen as cubic as possible)")
	fs.IntVar(&p.PY, "npy", 0, "process grid along y")
	fs.IntVar(&p.PZ, "npz", 0, "process grid along z")
	fs.IntVar(&p.Levels, "levels", 4, "multigrid levels of the preconditioner (1: one SymGS sweep, 0: no preconditioner)")
	fs.IntVar(&p.MaxIters, "iters", 50, "CG iterations per set (HPCG: 50)")
	fs.Float64Var(&p.Tol, "tol", 0, "stop a set once ||r||/||r0|| <= tol (0: always run -iters)")
	sets := fs.Int("sets", 1, "timed CG solves")
	warmup := fs.Int("warmup", 1, "untimed CG solves first")
	jsonOut := fs.String("json", "", "write the result as JSON to this file (- for standard output)")
	name := fs.String("name", prog, "the app's name in the JSON result (to tell configurations apart in apptable)")
	quiet := fs.Bool("quiet", false, "print only errors")
	bf := backend.AddFlags(fs)
	fs.Parse(os.Args[1:])

	if _, err := mpi.Init(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: MPI init: %v\n", prog, err)
		os.Exit(1)
	}
	defer mpi.Finalize()
	w := mpi.World()
	spec, err := bf.Spec()
	if err == nil && *sets < 1 {
		err = fmt.Errorf("-sets %d: want >= 1", *sets)
	}
	if err != nil {
		if w.Rank() == 0 {
			fmt.Fprintf(os.Stderr, "%s: %v\n", prog, err)
		}
		mpi.Finalize()
		os.Exit(2)
	}
	if err := run(w, p, spec, *sets, *warmup, *jsonOut, *name, *quiet); err != nil {
		backend.Fatal(prog, w, err)
	}
}

func run(w *mpi.Comm, p hpcg.Params, spec backend.Spec, sets, warmup int, jsonOut, name string, quiet bool) error {
	rank := w.Rank()
	lay, r, err := backend.Open(w, spec)
	if err != nil {
		return err
	}
	defer r.Close()
	ddot := r.Counter("ddot")
	pr, err := hpcg.NewProblem(w, p, func(x float64) (float64, error) { return r.Sum(ddot, x) })
	if err != nil {
		return err
	}
	f := pr.Fine
	if rank == 0 && !quiet {
		fmt.Printf("hpcg: %d ranks, layout %s (nodes x ppn), process grid %s, local %dx%dx%d, global %dx%dx%d, MG levels %d\n",
			w.Size(), lay, pr.Grid, f.NX, f.NY, f.NZ, f.GNX, f.GNY, f.GNZ, p.Levels)
		pi := r.Plan(1, 8)
		fmt.Printf("hpcg: backend %s (one-double allreduce: %s, l=%d, k=%d)\n", spec, pi.Variant, pi.Leaders, pi.Pipeline)
	}
	for i := 0; i < warmup; i++ {
		if _, err := pr.Solve(); err != nil {
			return err
		}
	}
	r.Reset()
	pr.Times = hpcg.Times{}
	if err := w.Barrier(); err != nil {
		return err
	}
	t0 := mpi.Wtime()
	var first hpcg.Result
	setsDiff := 0.0
	for s := 0; s < sets; s++ {
		res, err := pr.Solve()
		if err != nil {
			return err
		}
		if s == 0 {
			first = res
			continue
		}
		d := relDiff(res.History, first.History)
		setsDiff = max(setsDiff, d)
		// A fixed plan must repeat itself bit for bit. The engine's own
		// choice may change plans (and summation orders) between sets;
		// once the residual is below the rounding floor such last-bit
		// differences grow without bound, so they are only reported.
		if d != 0 && spec.Fixed() {
			return fmt.Errorf("set %d: the residual history differs from set 1's by %.3g (relative) with a fixed plan: non-deterministic run", s+1, d)
		}
	}
	total := mpi.Wtime() - t0
	// Check: the history is the same on every rank, and the error.
	h := report.HashFloats(first.History)
	hs := make([]uint64, w.Size())
	if err := mpi.Allgather(w, []uint64{h}, hs); err != nil {
		return err
	}
	for i, x := range hs {
		if x != h {
			return fmt.Errorf("residual history differs between rank 0 and rank %d", i)
		}
	}
	e := []float64{pr.LocalMaxError()}
	if err := mpi.AllreduceInPlace(w, e, mpi.OpMax); err != nil {
		return err
	}

	res := &report.Result{App: name, ProcGrid: pr.Grid.String(), Params: map[string]any{
		"nx": p.NX, "ny": p.NY, "nz": p.NZ, "npx": pr.Grid.PX, "npy": pr.Grid.PY, "npz": pr.Grid.PZ,
		"levels": p.Levels, "iters": p.MaxIters, "tol": p.Tol, "sets": sets, "warmup": warmup,
	}}
	tm := pr.Times
	phases := []backend.Phase{
		{Name: "ddot", Sec: tm.DDOT.Seconds()}, {Name: "spmv", Sec: tm.SpMV.Seconds()},
		{Name: "mg", Sec: tm.MG.Seconds()}, {Name: "waxpby", Sec: tm.WAXPBY.Seconds()},
		{Name: "halo", Sec: tm.Halo.Seconds()},
	}
	if err := r.Fill(res, lay, total, phases, []int{1}, 8); err != nil {
		return err
	}
	out := Output{
		Iterations: first.Iters, Sets: sets, Converged: first.Converged, NormR0: first.NormR0,
		ResidualReduction: first.Final(), History: first.History, HistoryHash: fmt.Sprintf("%016x", h),
		MaxError: e[0], SetsMaxDiff: setsDiff, DDOTs: ddot.Calls, Rows: int64(f.GNX) * int64(f.GNY) * int64(f.GNZ),
	}
	res.Output = out
	return report.Emit(rank, quiet, jsonOut, res, func() { summary(res, out) })
}

func summary(res *report.Result, out Output) {
	fmt.Printf("hpcg: %d sets x %d iterations, residual reduction %.6e (||r0|| = %.6e), max |x-1| = %.3e\n",
		out.Sets, out.Iterations, out.ResidualReduction, out.NormR0, out.MaxError)
	if out.SetsMaxDiff == 0 {
		fmt.Printf("hpcg: residual history hash %s (identical on all ranks and sets)\n", out.HistoryHash)
	} else {
		fmt.Printf("hpcg: residual history hash %s (identical on all ranks; sets differ by up to %.3g, relative, where the engine changed plans)\n", out.HistoryHash, out.SetsMaxDiff)
	}
	fmt.Printf("hpcg: total %.4f s, allreduce %.4f s (%.2f%%; min %.4f, max %.4f over ranks), %d allreduces, %.2f us each\n",
		res.TotalSec, res.AllreduceSec, 100*res.AllreduceShare, res.AllreduceMinSec, res.AllreduceMaxSec,
		out.DDOTs, 1e6*res.AllreduceSec/math.Max(1, float64(out.DDOTs)))
	var b strings.Builder
	for _, k := range []string{"ddot", "spmv", "mg", "waxpby", "halo"} {
		fmt.Fprintf(&b, " %s %.4f", k, res.Phases[k])
	}
	fmt.Printf("hpcg: kernel seconds (mean over ranks):%s\n", b.String())
}

func relDiff(a, b []float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(a[i]-b[i])/math.Abs(b[i]))
	}
	return d
}
