package miniamr

import (
	"math"
	"testing"
)

func smallParams() Params {
	p := DefaultParams()
	p.N, p.Vars = 4, 3
	p.InitX, p.InitY, p.InitZ = 2, 2, 2
	p.MaxLevel = 2
	p.Steps, p.Stages, p.ChecksumFreq, p.RefineFreq = 6, 4, 2, 2
	p.Objects = DefaultObjects(2)
	return p
}

func newSerial(t *testing.T, p Params) *Mesh {
	t.Helper()
	m, err := NewMesh(nil, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkMesh verifies the bookkeeping: the leaves tile the domain exactly
// once, the level map and the index agree with them, face neighbours differ
// by at most one level, and the block counts add up.
func checkMesh(t *testing.T, m *Mesh) {
	t.Helper()
	cover := make([]int, len(m.lm))
	vol := 0.0
	for i, b := range m.leaves {
		if i > 0 && blockLess(m.leaves[i-1], b) >= 0 {
			t.Fatalf("leaves out of order at %d", i)
		}
		if m.byKey[b.key()] != b {
			t.Fatalf("leaf %v missing from the index", b.key())
		}
		lo, sz := m.region(b)
		for z := lo[2]; z < lo[2]+sz; z++ {
			for y := lo[1]; y < lo[1]+sz; y++ {
				for x := lo[0]; x < lo[0]+sz; x++ {
					p := m.lmIndex(x, y, z)
					cover[p]++
					if int(m.lm[p]) != b.Level {
						t.Fatalf("level map says %d over leaf %v", m.lm[p], b.key())
					}
				}
			}
		}
		vol += math.Pow(8, -float64(b.Level))
	}
	if len(m.byKey) != len(m.leaves) {
		t.Fatalf("index has %d entries, %d leaves", len(m.byKey), len(m.leaves))
	}
	for z := 0; z < m.f[2]; z++ {
		for y := 0; y < m.f[1]; y++ {
			for x := 0; x < m.f[0]; x++ {
				if c := cover[m.lmIndex(x, y, z)]; c != 1 {
					t.Fatalf("unit %d,%d,%d covered %d times", x, y, z, c)
				}
				l := m.lm[m.lmIndex(x, y, z)]
				for _, d := range [][3]int{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}} {
					n := m.lm[m.lmIndex(x+d[0], y+d[1], z+d[2])]
					if n >= 0 && (n-l > 1 || l-n > 1) {
						t.Fatalf("units %d,%d,%d (level %d) and +%v (level %d): 2:1 balance broken", x, y, z, l, d, n)
					}
				}
			}
		}
	}
	roots := float64(m.P.InitX * m.P.InitY * m.P.InitZ)
	if math.Abs(vol-roots) > 1e-12 {
		t.Fatalf("leaves cover %v root volumes, want %v", vol, roots)
	}
	var total int64
	for l, c := range m.localCount {
		total += c
		n := 0
		for _, b := range m.leaves {
			if b.Level == l {
				n++
			}
		}
		if int64(n) != c {
			t.Fatalf("level %d: count %d, leaves %d", l, c, n)
		}
	}
	if total != int64(len(m.leaves)) {
		t.Fatalf("counts add to %d, %d leaves", total, len(m.leaves))
	}
}

func sums(m *Mesh) []float64 {
	s := make([]float64, m.P.Vars)
	m.localSums(s)
	return s
}

func closeRel(a, b []float64, tol float64) bool {
	for i := range a {
		if math.Abs(a[i]-b[i]) > tol*math.Abs(b[i]) {
			return false
		}
	}
	return true
}

// Refinement follows the objects: every leaf the surface of an object
// crosses is at the finest level; the mesh is consistent after every
// adaptation, coarsens back when the objects leave, and the sums are
// conserved.
func TestRefineBookkeeping(t *testing.T) {
	p := smallParams()
	m := newSerial(t, p)
	checkMesh(t, m)
	s0 := sums(m)
	if err := m.Adapt(p.MaxLevel); err != nil {
		t.Fatal(err)
	}
	checkMesh(t, m)
	if m.GlobalCount[p.MaxLevel] == 0 || m.GlobalBlocks != int64(len(m.leaves)) {
		t.Fatalf("counts after refinement: %v (%d leaves)", m.GlobalCount, len(m.leaves))
	}
	for _, b := range m.leaves {
		lo, hi := m.box(b)
		for i := range m.objects {
			if m.objects[i].crossesSurface(lo, hi) && b.Level != p.MaxLevel {
				t.Fatalf("leaf %v crosses object %d but is at level %d", b.key(), i, b.Level)
			}
		}
	}
	if !closeRel(sums(m), s0, 1e-13) {
		t.Fatalf("refinement changed the sums: %v -> %v", s0, sums(m))
	}
	t.Logf("after refinement: %v blocks per level, %d splits", m.GlobalCount, m.Stats.Splits)
	// Move the objects out of the way: everything coarsens back.
	for i := range m.objects {
		m.objects[i].Center = [3]float64{5, 5, 5}
		m.objects[i].Radius = 0.01
	}
	if err := m.Adapt(p.MaxLevel); err != nil {
		t.Fatal(err)
	}
	checkMesh(t, m)
	if len(m.leaves) != 8 || m.Stats.Merges == 0 {
		t.Fatalf("after the objects left: %d leaves (%v), %d merges", len(m.leaves), m.GlobalCount, m.Stats.Merges)
	}
	if !closeRel(sums(m), s0, 1e-13) {
		t.Fatalf("coarsening changed the sums: %v -> %v", s0, sums(m))
	}
}

// Splitting a block and merging its children gives the block back (up to
// rounding in the sums of eighths).
func TestSplitMerge(t *testing.T) {
	p := smallParams()
	p.InitX, p.InitY, p.InitZ = 1, 1, 1
	m := newSerial(t, p)
	b := m.leaves[0]
	orig := append([]float64(nil), b.Data...)
	kids := m.split(b)
	if len(kids) != 8 || len(m.byKey) != 8 {
		t.Fatalf("split: %d children, index %d", len(kids), len(m.byKey))
	}
	var first *Block
	for _, k := range kids {
		if k.I == 0 && k.J == 0 && k.K == 0 {
			first = k
		}
	}
	// Child (1,0,0) cell (0,0,0) is an eighth of parent cell (N/2,0,0).
	for _, k := range kids {
		if k.I == 1 && k.J == 0 && k.K == 0 {
			if got, want := k.Data[m.cell(0, 0, 0)], orig[m.cell(p.N/2, 0, 0)]/8; got != want {
				t.Fatalf("child cell %v, want %v", got, want)
			}
		}
	}
	par := m.merge(first)
	for v := 0; v < p.Vars; v++ {
		for k := 0; k < p.N; k++ {
			for j := 0; j < p.N; j++ {
				for i := 0; i < p.N; i++ {
					c := v*m.s3 + m.cell(i, j, k)
					if math.Abs(par.Data[c]-orig[c]) > 1e-15*orig[c] {
						t.Fatalf("cell %d,%d,%d var %d: %v after split+merge, was %v", i, j, k, v, par.Data[c], orig[c])
					}
				}
			}
		}
	}
}

// On a uniform mesh every ghost cell is the neighbouring block's cell
// (same-level copy) or, on the domain boundary, the block's own cell.
func TestGhostsUniform(t *testing.T) {
	p := smallParams()
	p.MaxLevel = 0
	m := newSerial(t, p)
	m.fillGhosts()
	n := p.N
	val := func(gx, gy, gz, v int) float64 {
		g := [3]int{gx, gy, gz}
		for d := range 3 {
			g[d] = min(max(g[d], 0), m.groot[d]*n-1) // reflect = clamp
		}
		b := m.byKey[key{0, int32(g[0] / n), int32(g[1] / n), int32(g[2] / n)}]
		return b.Data[v*m.s3+m.cell(g[0]%n, g[1]%n, g[2]%n)]
	}
	for _, b := range m.leaves {
		for v := 0; v < p.Vars; v++ {
			for a := range 3 {
				for _, w := range []int{-1, n} {
					for q := 0; q < n; q++ {
						for r := 0; r < n; r++ {
							x, y, z := point(a, w, q, r)
							got := b.Data[v*m.s3+m.cell(x, y, z)]
							if want := val(b.I*n+x, b.J*n+y, b.K*n+z, v); got != want {
								t.Fatalf("block %v ghost %d,%d,%d var %d: %v, want %v", b.key(), x, y, z, v, got, want)
							}
						}
					}
				}
			}
		}
	}
}

// A whole run on one process: the checksums are conserved (rounding only)
// through stencils, refinements and coarsenings, and a second run gives the
// same bits.
func TestRunConserves(t *testing.T) {
	p := smallParams()
	run := func() (Result, *Mesh) {
		m := newSerial(t, p)
		res, err := m.Run()
		if err != nil {
			t.Fatal(err)
		}
		checkMesh(t, m)
		return res, m
	}
	res, m := run()
	if res.Checks != p.Steps*((p.Stages+p.ChecksumFreq-1)/p.ChecksumFreq) {
		t.Errorf("%d checksums", res.Checks)
	}
	if res.MaxDrift > 1e-13 {
		t.Errorf("sums drift by %v", res.MaxDrift)
	}
	if m.Stats.Splits == 0 || m.Stats.Merges == 0 {
		t.Errorf("the objects moved but %d splits, %d merges", m.Stats.Splits, m.Stats.Merges)
	}
	again, _ := run()
	if again.Hash != res.Hash {
		t.Errorf("two runs: checksum hashes %x and %x", res.Hash, again.Hash)
	}
	t.Logf("%d checksums, drift %.3g, blocks %d..%d, final %v, %d splits %d merges",
		res.Checks, res.MaxDrift, res.MinBlocks, res.MaxBlocks, res.BlocksPerLevel, m.Stats.Splits, m.Stats.Merges)
}

func TestObjectGeometry(t *testing.T) {
	o := Object{Center: [3]float64{0.5, 0.5, 0.5}, Radius: 0.25}
	for _, tc := range []struct {
		lo, hi [3]float64
		want   bool
	}{
		{[3]float64{0.45, 0.45, 0.45}, [3]float64{0.55, 0.55, 0.55}, false}, // inside
		{[3]float64{0, 0, 0}, [3]float64{0.1, 0.1, 0.1}, false},             // outside
		{[3]float64{0.7, 0.45, 0.45}, [3]float64{0.8, 0.55, 0.55}, true},    // on the surface
		{[3]float64{0, 0, 0}, [3]float64{1, 1, 1}, true},                    // contains it
	} {
		if got := o.crossesSurface(tc.lo, tc.hi); got != tc.want {
			t.Errorf("box %v-%v: %v, want %v", tc.lo, tc.hi, got, tc.want)
		}
	}
	b := Object{Center: [3]float64{0.99, 0.5, 0.5}, Move: [3]float64{0.02, 0, 0}}
	b.move()
	if b.Center[0] != 0.97 || b.Move[0] != -0.02 {
		t.Errorf("bounce: center %v move %v", b.Center, b.Move)
	}
}

// The ghost cells of every face of a refined mesh, checked against a
// geometric search: same level, the neighbour's cell; coarser, a quarter of
// the coarse cell; finer, the sum of the 4 fine cells touching the face.
func TestGhostsMixedLevels(t *testing.T) {
	p := smallParams()
	m := newSerial(t, p)
	if err := m.Adapt(p.MaxLevel); err != nil {
		t.Fatal(err)
	}
	if m.GlobalCount[0] == int64(len(m.leaves)) {
		t.Fatal("no refinement")
	}
	m.fillGhosts()
	n, M := p.N, p.MaxLevel
	ext := [3]int{}
	for d := range 3 {
		ext[d] = m.groot[d] << M * n // finest cells per axis
	}
	// value of the leaf cell containing finest cell g (nil leaf: outside).
	find := func(g [3]int) (*Block, [3]int) {
		for d := range 3 {
			if g[d] < 0 || g[d] >= ext[d] {
				return nil, [3]int{}
			}
		}
		for _, b := range m.leaves {
			cs := 1 << (M - b.Level)
			idx := [3]int{b.I, b.J, b.K}
			var c [3]int
			in := true
			for d := range 3 {
				o := g[d] - idx[d]*n*cs
				if o < 0 || o >= n*cs {
					in = false
					break
				}
				c[d] = o / cs
			}
			if in {
				return b, c
			}
		}
		t.Fatalf("finest cell %v in no leaf", g)
		return nil, [3]int{}
	}
	at := func(b *Block, c [3]int, v int) float64 { return b.Data[v*m.s3+m.cell(c[0], c[1], c[2])] }
	kinds := map[string]int{}
	for _, b := range m.leaves {
		cs := 1 << (M - b.Level)
		org := [3]int{b.I * n * cs, b.J * n * cs, b.K * n * cs}
		for a := range 3 {
			ua, va := axes(a)
			for side := range 2 {
				for q := 0; q < n; q++ {
					for r := 0; r < n; r++ {
						// Ghost cell (q, r) of this face, and the finest
						// cell just across the face at its low corner.
						w := -1
						g := org
						g[a] = org[a] - 1
						if side == 1 {
							w = n
							g[a] = org[a] + n*cs
						}
						g[ua] += q * cs
						g[va] += r * cs
						x, y, z := point(a, w, q, r)
						nb, c := find(g)
						for v := 0; v < p.Vars; v++ {
							got := b.Data[v*m.s3+m.cell(x, y, z)]
							var want float64
							switch {
							case nb == nil: // reflect
								xi, yi, zi := point(a, min(max(w, 0), n-1), q, r)
								want = b.Data[v*m.s3+m.cell(xi, yi, zi)]
								kinds["boundary"]++
							case nb.Level == b.Level:
								want = at(nb, c, v)
								kinds["same"]++
							case nb.Level == b.Level-1:
								want = at(nb, c, v) / 4
								kinds["coarser"]++
							case nb.Level == b.Level+1:
								// The 4 fine cells across the face: c and its
								// tangential neighbours.
								kinds["finer"]++
								// Same order as fillGhosts: (0,0)+(1,0)+(0,1)+(1,1).
								c01, c10, c11 := c, c, c
								c10[ua]++
								c01[va]++
								c11[ua]++
								c11[va]++
								want = at(nb, c, v) + at(nb, c10, v) + at(nb, c01, v) + at(nb, c11, v)
							default:
								t.Fatalf("levels %d and %d touch", b.Level, nb.Level)
							}
							if got != want {
								t.Fatalf("block %v face %d/%d ghost %d,%d var %d: %v, want %v", b.key(), a, side, q, r, v, got, want)
							}
						}
					}
				}
			}
		}
	}
	for _, k := range []string{"boundary", "same", "coarser", "finer"} {
		if kinds[k] == 0 {
			t.Errorf("no %s ghost cells checked: %v", k, kinds)
		}
	}
	t.Logf("ghost cells checked: %v", kinds)
}
