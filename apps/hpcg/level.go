package hpcg

import (
	"fmt"

	"github.com/dpmlgo/dpml/apps/internal/grid"
)

// Level is one grid of the multigrid hierarchy on this rank: the local box,
// its halo pattern and the coarser level.
type Level struct {
	NX, NY, NZ int // local interior points
	// Global offset of the local box and global dimensions.
	GX0, GY0, GZ0 int
	GNX, GNY, GNZ int

	sx, sxy, n int // strides and length of a vector with its ghost layer
	halo       *halo

	coarse *Level
	// Work vectors of the V-cycle on this level (fine-level sized Axf;
	// coarse-level sized rc and xc).
	axf, rc, xc []float64
}

func newLevel(g grid.Grid, nx, ny, nz int) *Level {
	l := &Level{
		NX: nx, NY: ny, NZ: nz,
		GX0: g.IX * nx, GY0: g.IY * ny, GZ0: g.IZ * nz,
		GNX: g.PX * nx, GNY: g.PY * ny, GNZ: g.PZ * nz,
		sx: nx + 2, sxy: (nx + 2) * (ny + 2),
	}
	l.n = l.sxy * (nz + 2)
	return l
}

// Vector returns a zero vector of this level (ghost layer included).
func (l *Level) Vector() []float64 { return make([]float64, l.n) }

// Index is the position of local interior point (i, j, k) in a vector.
func (l *Level) Index(i, j, k int) int { return (k+1)*l.sxy + (j+1)*l.sx + i + 1 }

// Rows is the number of local interior points.
func (l *Level) Rows() int { return l.NX * l.NY * l.NZ }

// Coarse returns the next coarser level, nil on the coarsest.
func (l *Level) Coarse() *Level { return l.coarse }

// inDomainNeighbors counts the neighbours of local point (i, j, k) that lie
// inside the global domain (HPCG's nonzeros per row minus the diagonal).
func (l *Level) inDomainNeighbors(i, j, k int) int {
	n := 0
	gx, gy, gz := l.GX0+i, l.GY0+j, l.GZ0+k
	for dz := -1; dz <= 1; dz++ {
		for dy := -1; dy <= 1; dy++ {
			for dx := -1; dx <= 1; dx++ {
				if dx == 0 && dy == 0 && dz == 0 {
					continue
				}
				x, y, z := gx+dx, gy+dy, gz+dz
				if x >= 0 && y >= 0 && z >= 0 && x < l.GNX && y < l.GNY && z < l.GNZ {
					n++
				}
			}
		}
	}
	return n
}

// nsum is the sum of the 26 neighbours of position c, in a fixed order:
// plane below, own plane, plane above; rows by y; points by x.
func nsum(x []float64, c, sx, sxy int) float64 {
	b := c - sxy
	a := c + sxy
	_ = x[a+sx+1]
	_ = x[b-sx-1]
	s := x[b-sx-1] + x[b-sx] + x[b-sx+1] +
		x[b-1] + x[b] + x[b+1] +
		x[b+sx-1] + x[b+sx] + x[b+sx+1]
	s += x[c-sx-1] + x[c-sx] + x[c-sx+1] +
		x[c-1] + x[c+1] +
		x[c+sx-1] + x[c+sx] + x[c+sx+1]
	s += x[a-sx-1] + x[a-sx] + x[a-sx+1] +
		x[a-1] + x[a] + x[a+1] +
		x[a+sx-1] + x[a+sx] + x[a+sx+1]
	return s
}

// Diag is the operator's diagonal.
const Diag = 26.0

// spmvLocal computes y = A x on the interior, using x's ghost values as
// they are (no exchange).
func (l *Level) spmvLocal(x, y []float64) {
	sx, sxy := l.sx, l.sxy
	for k := 0; k < l.NZ; k++ {
		for j := 0; j < l.NY; j++ {
			c := l.Index(0, j, k)
			for i := 0; i < l.NX; i, c = i+1, c+1 {
				y[c] = Diag*x[c] - nsum(x, c, sx, sxy)
			}
		}
	}
}

// symgsLocal is one symmetric Gauss-Seidel sweep for A x = r (forward, then
// backward), using x's ghost values as they are.
func (l *Level) symgsLocal(r, x []float64) {
	sx, sxy := l.sx, l.sxy
	for k := 0; k < l.NZ; k++ {
		for j := 0; j < l.NY; j++ {
			c := l.Index(0, j, k)
			for i := 0; i < l.NX; i, c = i+1, c+1 {
				x[c] = (r[c] + nsum(x, c, sx, sxy)) / Diag
			}
		}
	}
	for k := l.NZ - 1; k >= 0; k-- {
		for j := l.NY - 1; j >= 0; j-- {
			c := l.Index(l.NX-1, j, k)
			for i := l.NX - 1; i >= 0; i, c = i-1, c-1 {
				x[c] = (r[c] + nsum(x, c, sx, sxy)) / Diag
			}
		}
	}
}

// dotLocal is this rank's part of x . y, in a fixed order.
func (l *Level) dotLocal(x, y []float64) float64 {
	s := 0.0
	for k := 0; k < l.NZ; k++ {
		for j := 0; j < l.NY; j++ {
			c := l.Index(0, j, k)
			xs, ys := x[c:c+l.NX], y[c:c+l.NX]
			for i := range xs {
				s += xs[i] * ys[i]
			}
		}
	}
	return s
}

// waxpby sets w = alpha x + beta y on the interior.
func (l *Level) waxpby(w []float64, alpha float64, x []float64, beta float64, y []float64) {
	for k := 0; k < l.NZ; k++ {
		for j := 0; j < l.NY; j++ {
			c := l.Index(0, j, k)
			ws, xs, ys := w[c:c+l.NX], x[c:c+l.NX], y[c:c+l.NX]
			for i := range ws {
				ws[i] = alpha*xs[i] + beta*ys[i]
			}
		}
	}
}

// restrict sets rc = (r - axf) at the fine points (2i, 2j, 2k).
func (l *Level) restrict(r, axf, rc []float64) {
	c := l.coarse
	for k := 0; k < c.NZ; k++ {
		for j := 0; j < c.NY; j++ {
			for i := 0; i < c.NX; i++ {
				f := l.Index(2*i, 2*j, 2*k)
				rc[c.Index(i, j, k)] = r[f] - axf[f]
			}
		}
	}
}

// prolong adds xc to x at the fine points (2i, 2j, 2k).
func (l *Level) prolong(xc, x []float64) {
	c := l.coarse
	for k := 0; k < c.NZ; k++ {
		for j := 0; j < c.NY; j++ {
			for i := 0; i < c.NX; i++ {
				x[l.Index(2*i, 2*j, 2*k)] += xc[c.Index(i, j, k)]
			}
		}
	}
}

func zero(x []float64) {
	for i := range x {
		x[i] = 0
	}
}

// checkDims validates the local box for a hierarchy of levels grids.
func checkDims(nx, ny, nz, levels int) error {
	if nx < 1 || ny < 1 || nz < 1 {
		return fmt.Errorf("hpcg: local box %dx%dx%d", nx, ny, nz)
	}
	if levels < 1 {
		return fmt.Errorf("hpcg: %d multigrid levels", levels)
	}
	f := 1 << (levels - 1)
	if nx%f != 0 || ny%f != 0 || nz%f != 0 {
		return fmt.Errorf("hpcg: local box %dx%dx%d: %d multigrid levels need every dimension divisible by %d", nx, ny, nz, levels, f)
	}
	return nil
}
