// Package grid arranges MPI ranks in a 3D process grid, as HPCG and MiniAMR
// do: rank r sits at (r mod px, (r / px) mod py, r / (px py)).
package grid

import "fmt"

// Grid is a px x py x pz process grid and one rank's place in it.
type Grid struct {
	PX, PY, PZ int // ranks along x, y, z
	IX, IY, IZ int // this rank's coordinates
	Rank, Size int
}

// Factor3 splits n into px*py*pz = n as cubic as possible: the smallest
// spread max-min, then the smallest "surface" px*py+py*pz+px*pz, then
// px >= py >= pz. The choice is deterministic.
func Factor3(n int) (px, py, pz int) {
	if n < 1 {
		return 0, 0, 0
	}
	best := [3]int{n, 1, 1}
	score := func(a, b, c int) (int, int) {
		return max(a, b, c) - min(a, b, c), a*b + b*c + a*c
	}
	bs, bsurf := score(n, 1, 1)
	for a := 1; a <= n; a++ {
		if n%a != 0 {
			continue
		}
		for b := 1; b <= a; b++ {
			if (n/a)%b != 0 {
				continue
			}
			c := n / a / b
			if c > b {
				continue
			}
			s, surf := score(a, b, c)
			if s < bs || (s == bs && surf < bsurf) {
				best, bs, bsurf = [3]int{a, b, c}, s, surf
			}
		}
	}
	return best[0], best[1], best[2]
}

// New places rank in a px x py x pz grid of size ranks; zero px, py and pz
// are chosen by Factor3 (all three must be zero or all set).
func New(rank, size, px, py, pz int) (Grid, error) {
	if size < 1 || rank < 0 || rank >= size {
		return Grid{}, fmt.Errorf("grid: rank %d of %d", rank, size)
	}
	if px == 0 && py == 0 && pz == 0 {
		px, py, pz = Factor3(size)
	}
	if px < 1 || py < 1 || pz < 1 || px*py*pz != size {
		return Grid{}, fmt.Errorf("grid: process grid %dx%dx%d does not match %d ranks", px, py, pz, size)
	}
	return Grid{
		PX: px, PY: py, PZ: pz,
		IX: rank % px, IY: (rank / px) % py, IZ: rank / (px * py),
		Rank: rank, Size: size,
	}, nil
}

// RankAt returns the rank at grid coordinates (x, y, z), or -1 outside the
// grid.
func (g Grid) RankAt(x, y, z int) int {
	if x < 0 || y < 0 || z < 0 || x >= g.PX || y >= g.PY || z >= g.PZ {
		return -1
	}
	return x + g.PX*(y+g.PY*z)
}

// Neighbor returns the rank at offset (dx, dy, dz) from this rank, or -1
// (the grid is not periodic).
func (g Grid) Neighbor(dx, dy, dz int) int {
	return g.RankAt(g.IX+dx, g.IY+dy, g.IZ+dz)
}

// String is "PXxPYxPZ".
func (g Grid) String() string { return fmt.Sprintf("%dx%dx%d", g.PX, g.PY, g.PZ) }
