package hpcg

import (
	"math"
	"testing"
)

// field is a deterministic, non-trivial function of the global point.
func field(gx, gy, gz, salt int) float64 {
	h := uint64(gx)*0x9E3779B97F4A7C15 ^ uint64(gy)*0xC2B2AE3D27D4EB4F ^ uint64(gz)*0x165667B19E3779F9 ^ uint64(salt)*0x27D4EB2F165667C5
	h ^= h >> 29
	h *= 0xBF58476D1CE4E5B9
	h ^= h >> 32
	return float64(h>>11)/float64(1<<53) - 0.5
}

func fill(l *Level, v []float64, salt int) {
	for k := 0; k < l.NZ; k++ {
		for j := 0; j < l.NY; j++ {
			for i := 0; i < l.NX; i++ {
				v[l.Index(i, j, k)] = field(l.GX0+i, l.GY0+j, l.GZ0+k, salt)
			}
		}
	}
}

func serial(t *testing.T, nx, ny, nz, levels int) *Problem {
	t.Helper()
	pr, err := NewProblem(nil, Params{NX: nx, NY: ny, NZ: nz, Levels: levels, MaxIters: 200, Tol: 1e-10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

// The operator is symmetric and positive definite (on random vectors), and
// A * 1 = b.
func TestOperatorSPD(t *testing.T) {
	pr := serial(t, 8, 6, 4, 1)
	f := pr.Fine
	u, v, au, av := f.Vector(), f.Vector(), f.Vector(), f.Vector()
	for s := 0; s < 5; s++ {
		fill(f, u, 2*s)
		fill(f, v, 2*s+1)
		if err := pr.SpMV(u, au); err != nil {
			t.Fatal(err)
		}
		if err := pr.SpMV(v, av); err != nil {
			t.Fatal(err)
		}
		vau, _ := pr.Dot(v, au)
		uav, _ := pr.Dot(u, av)
		if math.Abs(vau-uav) > 1e-12*math.Max(1, math.Abs(vau)) {
			t.Errorf("v.Au = %v, u.Av = %v: not symmetric", vau, uav)
		}
		uau, _ := pr.Dot(u, au)
		uu, _ := pr.Dot(u, u)
		// The smallest eigenvalue of the 27-point operator is well above 0
		// (26 minus at most 26 neighbours, strictly diagonally dominant at
		// the boundary): u.Au > 0.
		if !(uau > 0) {
			t.Errorf("u.Au = %v for u.u = %v: not positive", uau, uu)
		}
	}
	ones, y := f.Vector(), f.Vector()
	for k := 0; k < f.NZ; k++ {
		for j := 0; j < f.NY; j++ {
			for i := 0; i < f.NX; i++ {
				ones[f.Index(i, j, k)] = 1
			}
		}
	}
	if err := pr.SpMV(ones, y); err != nil {
		t.Fatal(err)
	}
	for k := 0; k < f.NZ; k++ {
		for j := 0; j < f.NY; j++ {
			for i := 0; i < f.NX; i++ {
				c := f.Index(i, j, k)
				if y[c] != pr.B()[c] {
					t.Fatalf("(A 1)[%d,%d,%d] = %v, b = %v", i, j, k, y[c], pr.B()[c])
				}
			}
		}
	}
	// Interior rows have b = 0, corner rows 26 - 7.
	if got := pr.B()[f.Index(3, 3, 2)]; got != 0 {
		t.Errorf("interior b = %v", got)
	}
	if got := pr.B()[f.Index(0, 0, 0)]; got != 19 {
		t.Errorf("corner b = %v", got)
	}
}

// Every SymGS sweep lowers the energy norm of the error (Gauss-Seidel is
// a contraction in the A-norm for an SPD matrix).
func TestSymGSReducesError(t *testing.T) {
	pr := serial(t, 8, 8, 8, 1)
	f := pr.Fine
	x, e, ae := f.Vector(), f.Vector(), f.Vector()
	energy := func() float64 {
		for k := 0; k < f.NZ; k++ {
			for j := 0; j < f.NY; j++ {
				for i := 0; i < f.NX; i++ {
					c := f.Index(i, j, k)
					e[c] = x[c] - 1
				}
			}
		}
		if err := pr.SpMV(e, ae); err != nil {
			t.Fatal(err)
		}
		v, _ := pr.Dot(e, ae)
		return v
	}
	fill(f, x, 7) // a rough start
	prev := energy()
	first := prev
	for s := 0; s < 8; s++ {
		if err := pr.SymGS(f, pr.B(), x); err != nil {
			t.Fatal(err)
		}
		cur := energy()
		if !(cur < prev) {
			t.Fatalf("sweep %d: error energy %v, was %v", s+1, cur, prev)
		}
		prev = cur
	}
	// The rough part of the error goes first: 8 sweeps remove most of it.
	if prev > first/4 {
		t.Errorf("after 8 sweeps the error energy is %v, from %v", prev, first)
	}
	t.Logf("error energy %v -> %v in 8 sweeps", first, prev)
}

// CG converges to the exact solution (ones); the multigrid preconditioner
// needs far fewer iterations than none; the history is reproducible bit for
// bit.
func TestCGConverges(t *testing.T) {
	var iters [3]int
	for i, levels := range []int{0, 1, 4} {
		pr := serial(t, 16, 16, 16, levels)
		res, err := pr.Solve()
		if err != nil {
			t.Fatal(err)
		}
		if !res.Converged {
			t.Fatalf("levels %d: not converged in %d iterations: %v", levels, res.Iters, res.Final())
		}
		if e := pr.LocalMaxError(); e > 1e-8 {
			t.Errorf("levels %d: max error %v", levels, e)
		}
		for k := 1; k < len(res.History); k++ {
			if !(res.History[k] > 0) || math.IsInf(res.History[k], 0) {
				t.Fatalf("levels %d: history[%d] = %v", levels, k, res.History[k])
			}
		}
		again, err := pr.Solve()
		if err != nil {
			t.Fatal(err)
		}
		if !sameBits(res.History, again.History) {
			t.Errorf("levels %d: a second solve gives another history", levels)
		}
		iters[i] = res.Iters
		t.Logf("levels %d: %d iterations, final %.3e", levels, res.Iters, res.Final())
	}
	if !(iters[2] < iters[1] && iters[1] < iters[0]) {
		t.Errorf("iterations (none, SymGS, MG4) = %v: preconditioning should help", iters)
	}
}

// Restriction and prolongation use the fine points (2i, 2j, 2k).
func TestMultigridTransfer(t *testing.T) {
	pr := serial(t, 8, 8, 4, 3)
	f := pr.Fine
	c := f.Coarse()
	if c == nil || c.NX != 4 || c.NY != 4 || c.NZ != 2 || c.Coarse() == nil || c.Coarse().NZ != 1 {
		t.Fatalf("levels: %+v", c)
	}
	r, axf, rc := f.Vector(), f.Vector(), c.Vector()
	fill(f, r, 1)
	fill(f, axf, 2)
	f.restrict(r, axf, rc)
	x := f.Vector()
	f.prolong(rc, x)
	for k := 0; k < f.NZ; k++ {
		for j := 0; j < f.NY; j++ {
			for i := 0; i < f.NX; i++ {
				p := f.Index(i, j, k)
				want := 0.0
				if i%2 == 0 && j%2 == 0 && k%2 == 0 {
					want = r[p] - axf[p]
				}
				if x[p] != want {
					t.Fatalf("point %d,%d,%d: %v, want %v", i, j, k, x[p], want)
				}
			}
		}
	}
}

func TestBadParams(t *testing.T) {
	for _, p := range []Params{
		{NX: 6, NY: 8, NZ: 8, Levels: 4, MaxIters: 1},
		{NX: 0, NY: 8, NZ: 8, Levels: 1, MaxIters: 1},
		{NX: 8, NY: 8, NZ: 8, Levels: 1, MaxIters: 0},
		{NX: 8, NY: 8, NZ: 8, Levels: 1, MaxIters: 1, PX: 2, PY: 1, PZ: 1},
	} {
		if _, err := NewProblem(nil, p, nil); err == nil {
			t.Errorf("%+v: want error", p)
		}
	}
}

func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}
