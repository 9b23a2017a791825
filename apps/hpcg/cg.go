package hpcg

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/dpmlgo/dpml/apps/internal/grid"
	"github.com/dpmlgo/dpml/mpi"
)

// Params describe a problem and its solve.
type Params struct {
	NX, NY, NZ int // local box of every rank (HPCG's nx, ny, nz)
	PX, PY, PZ int // process grid; all zero: chosen by grid.Factor3
	// Levels is the number of multigrid levels of the preconditioner,
	// the finest included (HPCG: 4); 1 is one SymGS sweep; 0 is plain,
	// unpreconditioned CG.
	Levels int
	// MaxIters bounds the CG iterations; Tol stops them once the
	// residual has dropped by that factor (0: run MaxIters, as HPCG's
	// timed sets do).
	MaxIters int
	Tol      float64
}

// Sum is the DDOT allreduce: it returns the sum over all ranks of x, equal
// on every rank.
type Sum func(x float64) (float64, error)

// Times are this rank's time in the kernels of the solves so far. DDOT
// includes its allreduce; SpMV and MG include their halo exchanges, which
// Halo counts once more.
type Times struct {
	DDOT, SpMV, MG, WAXPBY, Halo time.Duration
}

// Problem is the distributed problem on this rank and the CG workspace.
type Problem struct {
	P    Params
	Grid grid.Grid
	Fine *Level

	b, x, r, z, p, ap []float64
	sum               Sum
	Times             Times
}

// Result is one CG solve.
type Result struct {
	Iters     int       // iterations made
	NormR0    float64   // ||b - A x0||
	History   []float64 // ||r_k|| / ||r_0||, k = 0..Iters
	Converged bool      // History[Iters] <= Tol (false when Tol is 0)
}

// Final is the last relative residual.
func (r Result) Final() float64 { return r.History[len(r.History)-1] }

// NewProblem builds the problem on this rank. comm carries the halo
// exchanges (nil: a single process), sum the DDOT allreduces (nil: the
// local value, for a single process).
func NewProblem(comm *mpi.Comm, p Params, sum Sum) (*Problem, error) {
	rank, size := 0, 1
	if comm != nil {
		rank, size = comm.Rank(), comm.Size()
	}
	if sum == nil {
		if size > 1 {
			return nil, errors.New("hpcg: no allreduce for a multi-rank problem")
		}
		sum = func(x float64) (float64, error) { return x, nil }
	}
	lv := max(p.Levels, 1)
	if err := checkDims(p.NX, p.NY, p.NZ, lv); err != nil {
		return nil, err
	}
	if p.MaxIters < 1 {
		return nil, fmt.Errorf("hpcg: max iterations %d", p.MaxIters)
	}
	g, err := grid.New(rank, size, p.PX, p.PY, p.PZ)
	if err != nil {
		return nil, err
	}
	pr := &Problem{P: p, Grid: g, sum: sum}
	var prev *Level
	for i := 0; i < lv; i++ {
		l := newLevel(g, p.NX>>i, p.NY>>i, p.NZ>>i)
		l.halo = newHalo(comm, g, l, 32*i)
		if prev == nil {
			pr.Fine = l
		} else {
			prev.coarse = l
			prev.axf = prev.Vector()
			prev.rc, prev.xc = l.Vector(), l.Vector()
		}
		prev = l
	}
	f := pr.Fine
	pr.b, pr.x, pr.r, pr.z, pr.p, pr.ap = f.Vector(), f.Vector(), f.Vector(), f.Vector(), f.Vector(), f.Vector()
	// b = A * ones: 26 minus the in-domain neighbours.
	for k := 0; k < f.NZ; k++ {
		for j := 0; j < f.NY; j++ {
			for i := 0; i < f.NX; i++ {
				pr.b[f.Index(i, j, k)] = Diag - float64(f.inDomainNeighbors(i, j, k))
			}
		}
	}
	return pr, nil
}

// B returns the right-hand side; X the current solution.
func (pr *Problem) B() []float64 { return pr.b }

// X returns the current solution (ghost layer included).
func (pr *Problem) X() []float64 { return pr.x }

// SpMV computes y = A x on the fine level (exchanging x's halo).
func (pr *Problem) SpMV(x, y []float64) error { return pr.spmv(pr.Fine, x, y) }

func (pr *Problem) exchange(l *Level, x []float64) error {
	t := time.Now()
	err := l.halo.exchange(x)
	pr.Times.Halo += time.Since(t)
	return err
}

func (pr *Problem) spmv(l *Level, x, y []float64) error {
	if err := pr.exchange(l, x); err != nil {
		return err
	}
	l.spmvLocal(x, y)
	return nil
}

// SymGS is one HPCG symmetric Gauss-Seidel sweep on level l for A x = r:
// the halo of x is exchanged once, then the forward and backward sweeps
// run over the local rows.
func (pr *Problem) SymGS(l *Level, r, x []float64) error {
	if err := pr.exchange(l, x); err != nil {
		return err
	}
	l.symgsLocal(r, x)
	return nil
}

// mg is ComputeMG_ref: x = M^-1 r by a V-cycle from level l.
func (pr *Problem) mg(l *Level, r, x []float64) error {
	zero(x)
	if l.coarse == nil {
		return pr.SymGS(l, r, x)
	}
	if err := pr.SymGS(l, r, x); err != nil {
		return err
	}
	if err := pr.spmv(l, x, l.axf); err != nil {
		return err
	}
	l.restrict(r, l.axf, l.rc)
	if err := pr.mg(l.coarse, l.rc, l.xc); err != nil {
		return err
	}
	l.prolong(l.xc, x)
	return pr.SymGS(l, r, x)
}

// Dot is the global x . y (local part, then one allreduce).
func (pr *Problem) Dot(x, y []float64) (float64, error) {
	t := time.Now()
	v, err := pr.sum(pr.Fine.dotLocal(x, y))
	pr.Times.DDOT += time.Since(t)
	return v, err
}

// precondition sets z = M^-1 r.
func (pr *Problem) precondition(r, z []float64) error {
	t := time.Now()
	defer func() { pr.Times.MG += time.Since(t) }()
	if pr.P.Levels == 0 {
		copy(z, r)
		return nil
	}
	return pr.mg(pr.Fine, r, z)
}

// Solve runs CG (HPCG's CG_ref) from x = 0 and returns the residual
// history. The solution stays in X.
func (pr *Problem) Solve() (Result, error) {
	f := pr.Fine
	x, r, z, p, ap, b := pr.x, pr.r, pr.z, pr.p, pr.ap, pr.b
	zero(x)
	timed := func(d *time.Duration, fn func()) {
		t := time.Now()
		fn()
		*d += time.Since(t)
	}
	var res Result
	// p = x; r = b - A p; normr = sqrt(r.r)
	copy(p, x)
	t := time.Now()
	err := pr.spmv(f, p, ap)
	pr.Times.SpMV += time.Since(t)
	if err != nil {
		return res, err
	}
	timed(&pr.Times.WAXPBY, func() { f.waxpby(r, 1, b, -1, ap) })
	rr, err := pr.Dot(r, r)
	if err != nil {
		return res, err
	}
	normr := math.Sqrt(rr)
	res.NormR0 = normr
	res.History = append(res.History, 1)
	if normr == 0 {
		res.Converged = true
		return res, nil
	}
	var rtz, oldrtz float64
	for k := 1; k <= pr.P.MaxIters; k++ {
		if pr.P.Tol > 0 && normr/res.NormR0 <= pr.P.Tol {
			break
		}
		if err := pr.precondition(r, z); err != nil {
			return res, err
		}
		if k == 1 {
			copy(p, z)
			if rtz, err = pr.Dot(r, z); err != nil {
				return res, err
			}
		} else {
			oldrtz = rtz
			if rtz, err = pr.Dot(r, z); err != nil {
				return res, err
			}
			beta := rtz / oldrtz
			timed(&pr.Times.WAXPBY, func() { f.waxpby(p, 1, z, beta, p) })
		}
		t := time.Now()
		err := pr.spmv(f, p, ap)
		pr.Times.SpMV += time.Since(t)
		if err != nil {
			return res, err
		}
		pap, err := pr.Dot(p, ap)
		if err != nil {
			return res, err
		}
		alpha := rtz / pap
		timed(&pr.Times.WAXPBY, func() {
			f.waxpby(x, 1, x, alpha, p)
			f.waxpby(r, 1, r, -alpha, ap)
		})
		if rr, err = pr.Dot(r, r); err != nil {
			return res, err
		}
		normr = math.Sqrt(rr)
		res.Iters = k
		res.History = append(res.History, normr/res.NormR0)
	}
	res.Converged = pr.P.Tol > 0 && res.Final() <= pr.P.Tol
	return res, nil
}

// LocalMaxError is max |x - 1| over this rank's points (the exact
// solution is all ones).
func (pr *Problem) LocalMaxError() float64 {
	f := pr.Fine
	e := 0.0
	for k := 0; k < f.NZ; k++ {
		for j := 0; j < f.NY; j++ {
			for i := 0; i < f.NX; i++ {
				e = max(e, math.Abs(pr.x[f.Index(i, j, k)]-1))
			}
		}
	}
	return e
}
