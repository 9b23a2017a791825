package grid

import "testing"

func TestFactor3(t *testing.T) {
	for _, tc := range []struct{ n, x, y, z int }{
		{1, 1, 1, 1}, {2, 2, 1, 1}, {4, 2, 2, 1}, {8, 2, 2, 2}, {12, 3, 2, 2},
		{16, 4, 2, 2}, {32, 4, 4, 2}, {56, 4, 7, 2}, {64, 4, 4, 4}, {7, 7, 1, 1},
	} {
		x, y, z := Factor3(tc.n)
		if x*y*z != tc.n {
			t.Fatalf("Factor3(%d) = %d,%d,%d: product", tc.n, x, y, z)
		}
		if tc.n == 56 {
			// 4x7x2 and 7x4x2 are equally good; only the spread is fixed.
			if max(x, y, z)-min(x, y, z) != 5 {
				t.Errorf("Factor3(56) = %d,%d,%d", x, y, z)
			}
			continue
		}
		if x != tc.x || y != tc.y || z != tc.z {
			t.Errorf("Factor3(%d) = %d,%d,%d, want %d,%d,%d", tc.n, x, y, z, tc.x, tc.y, tc.z)
		}
	}
}

func TestGridNeighbors(t *testing.T) {
	const n = 12
	for r := 0; r < n; r++ {
		g, err := New(r, n, 0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if g.RankAt(g.IX, g.IY, g.IZ) != r {
			t.Fatalf("rank %d: coordinates %d,%d,%d map back to %d", r, g.IX, g.IY, g.IZ, g.RankAt(g.IX, g.IY, g.IZ))
		}
		for dz := -1; dz <= 1; dz++ {
			for dy := -1; dy <= 1; dy++ {
				for dx := -1; dx <= 1; dx++ {
					nb := g.Neighbor(dx, dy, dz)
					if nb < 0 {
						continue
					}
					h, _ := New(nb, n, g.PX, g.PY, g.PZ)
					if h.Neighbor(-dx, -dy, -dz) != r {
						t.Errorf("rank %d -> %d (%d,%d,%d) is not symmetric", r, nb, dx, dy, dz)
					}
				}
			}
		}
	}
	if _, err := New(0, 6, 2, 2, 2); err == nil {
		t.Error("2x2x2 grid for 6 ranks: want error")
	}
}
