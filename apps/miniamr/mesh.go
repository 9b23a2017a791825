package miniamr

import (
	"fmt"
	"slices"

	"github.com/dpmlgo/dpml/apps/internal/grid"
	"github.com/dpmlgo/dpml/mpi"
)

// Reducer is the allreduce the mesh uses, with the purpose of each call
// (for the accounting): name is "checksum", "blocks", "balance" or
// "minmax".
type Reducer interface {
	Int64(name string, buf []int64, op mpi.Op) error
	Float64(name string, buf []float64, op mpi.Op) error
}

// Local is the Reducer of a single process: every reduction is the
// identity.
type Local struct{}

// Int64 is the identity.
func (Local) Int64(string, []int64, mpi.Op) error { return nil }

// Float64 is the identity.
func (Local) Float64(string, []float64, mpi.Op) error { return nil }

// key names a block: its level and its index at that level in the global
// grid of blocks of that level.
type key struct {
	L       int8
	I, J, K int32
}

// Block is a leaf of the mesh: N^3 cells of every variable with a ghost
// layer, variable-major.
type Block struct {
	Level   int
	I, J, K int // index among the blocks of its level (global)
	Data    []float64
	target  int // level after the adaptation being decided
}

func (b *Block) key() key { return key{int8(b.Level), int32(b.I), int32(b.J), int32(b.K)} }

func blockLess(a, b *Block) int {
	switch {
	case a.Level != b.Level:
		return a.Level - b.Level
	case a.K != b.K:
		return a.K - b.K
	case a.J != b.J:
		return a.J - b.J
	}
	return a.I - b.I
}

// Mesh is this rank's part of the adaptive mesh.
type Mesh struct {
	P    Params
	Grid grid.Grid

	comm *mpi.Comm // nil: single process
	red  Reducer

	n, s, s3   int // cells per edge, with ghosts, cells per variable
	maxL       int
	groot      [3]int // root blocks of the whole domain along x, y, z
	f          [3]int // local extent in finest-level block units
	origin     [3]int // global finest-level index of the local corner
	lm         []int8 // level of the leaf over each finest-level unit, with a ghost shell
	lsx, lsxy  int
	leaves     []*Block
	byKey      map[key]*Block
	free       [][]float64
	objects    []Object
	work       []float64 // stencil scratch, one variable
	layerBuf   [4][]float64
	faces      [6]faceComm
	tasks      []faceTask
	localCount []int64
	// GlobalCount is the number of blocks per level over all ranks (after
	// the last adaptation); GlobalBlocks their sum.
	GlobalCount  []int64
	GlobalBlocks int64
	Stats        Stats
}

// NewMesh builds the root blocks of this rank and fills every variable
// with values that depend only on the global cell position. comm carries
// the face exchanges (nil: one process), red the allreduces.
func NewMesh(comm *mpi.Comm, p Params, red Reducer) (*Mesh, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	rank, size := 0, 1
	if comm != nil {
		rank, size = comm.Rank(), comm.Size()
	}
	g, err := grid.New(rank, size, p.PX, p.PY, p.PZ)
	if err != nil {
		return nil, err
	}
	if red == nil {
		if size > 1 {
			return nil, fmt.Errorf("miniamr: no reducer for %d ranks", size)
		}
		red = Local{}
	}
	if p.Lattice {
		p.Objects = latticeObjects(g.PX, g.PY, g.PZ)
	}
	m := &Mesh{P: p, Grid: g, comm: comm, red: red, n: p.N, s: p.N + 2, maxL: p.MaxLevel,
		byKey: map[key]*Block{}, objects: slices.Clone(p.Objects)}
	m.s3 = m.s * m.s * m.s
	m.groot = [3]int{g.PX * p.InitX, g.PY * p.InitY, g.PZ * p.InitZ}
	init := [3]int{p.InitX, p.InitY, p.InitZ}
	at := [3]int{g.IX, g.IY, g.IZ}
	for d := range 3 {
		m.f[d] = init[d] << m.maxL
		m.origin[d] = at[d] * m.f[d]
	}
	m.lsx = m.f[0] + 2
	m.lsxy = m.lsx * (m.f[1] + 2)
	m.lm = make([]int8, m.lsxy*(m.f[2]+2))
	// Outside the domain: -1. Inside: 0 until the neighbours tell.
	for z := -1; z <= m.f[2]; z++ {
		for y := -1; y <= m.f[1]; y++ {
			for x := -1; x <= m.f[0]; x++ {
				gx, gy, gz := m.origin[0]+x, m.origin[1]+y, m.origin[2]+z
				if gx < 0 || gy < 0 || gz < 0 || gx >= m.groot[0]<<m.maxL || gy >= m.groot[1]<<m.maxL || gz >= m.groot[2]<<m.maxL {
					m.lm[m.lmIndex(x, y, z)] = -1
				}
			}
		}
	}
	m.work = make([]float64, m.s3)
	for i := range m.layerBuf {
		m.layerBuf[i] = make([]float64, m.n*m.n*p.Vars)
	}
	m.localCount = make([]int64, m.maxL+1)
	m.GlobalCount = make([]int64, m.maxL+1)
	for k := 0; k < p.InitZ; k++ {
		for j := 0; j < p.InitY; j++ {
			for i := 0; i < p.InitX; i++ {
				b := &Block{I: g.IX*p.InitX + i, J: g.IY*p.InitY + j, K: g.IZ*p.InitZ + k}
				b.Data = m.alloc()
				m.initData(b)
				m.leaves = append(m.leaves, b)
				m.byKey[b.key()] = b
			}
		}
	}
	slices.SortFunc(m.leaves, blockLess)
	m.setupFaces()
	if err := m.exchangeLevels(); err != nil {
		return nil, err
	}
	if err := m.setupTasks(); err != nil {
		return nil, err
	}
	m.countLocal()
	return m, nil
}

// Leaves returns this rank's blocks in their fixed order.
func (m *Mesh) Leaves() []*Block { return m.leaves }

// Objects returns the objects in their current state.
func (m *Mesh) Objects() []Object { return m.objects }

func (m *Mesh) alloc() []float64 {
	if n := len(m.free); n > 0 {
		d := m.free[n-1]
		m.free = m.free[:n-1]
		return d
	}
	return make([]float64, m.s3*m.P.Vars)
}

func (m *Mesh) release(d []float64) { m.free = append(m.free, d) }

// cell is the position of cell (i, j, k) (each in -1..N) of a variable's
// array.
func (m *Mesh) cell(i, j, k int) int { return ((k+1)*m.s+(j+1))*m.s + i + 1 }

func (m *Mesh) lmIndex(x, y, z int) int { return (z+1)*m.lsxy + (y+1)*m.lsx + x + 1 }

// region is the local finest-unit box [lo, lo+size) of block b.
func (m *Mesh) region(b *Block) (lo [3]int, size int) {
	size = 1 << (m.maxL - b.Level)
	idx := [3]int{b.I, b.J, b.K}
	for d := range 3 {
		lo[d] = idx[d]*size - m.origin[d]
	}
	return lo, size
}

func (m *Mesh) fillLevels(b *Block, v int8) {
	lo, sz := m.region(b)
	for z := lo[2]; z < lo[2]+sz; z++ {
		for y := lo[1]; y < lo[1]+sz; y++ {
			p := m.lmIndex(lo[0], y, z)
			for x := 0; x < sz; x++ {
				m.lm[p+x] = v
			}
		}
	}
}

// initData fills a root block: every cell of every variable gets a value
// in [0, 1) hashed from its global cell index and the variable.
func (m *Mesh) initData(b *Block) {
	n := m.n
	for v := 0; v < m.P.Vars; v++ {
		d := b.Data[v*m.s3 : (v+1)*m.s3]
		for k := 0; k < n; k++ {
			for j := 0; j < n; j++ {
				for i := 0; i < n; i++ {
					d[m.cell(i, j, k)] = hashValue(b.I*n+i, b.J*n+j, b.K*n+k, v)
				}
			}
		}
	}
}

func hashValue(x, y, z, v int) float64 {
	h := uint64(x)*0x9E3779B97F4A7C15 ^ uint64(y)*0xC2B2AE3D27D4EB4F ^ uint64(z)*0x165667B19E3779F9 ^ uint64(v+1)*0x27D4EB2F165667C5
	h ^= h >> 31
	h *= 0xBF58476D1CE4E5B9
	h ^= h >> 29
	return float64(h>>11) / float64(1<<53)
}

// axes returns the tangential axes (u, v) of a face normal to axis a.
func axes(a int) (u, v int) {
	switch a {
	case 0:
		return 1, 2
	case 1:
		return 0, 2
	}
	return 0, 1
}

// point builds coordinates from the normal coordinate w and tangential u, v.
func point(a, w, u, v int) (x, y, z int) {
	switch a {
	case 0:
		return w, u, v
	case 1:
		return u, w, v
	}
	return u, v, w
}

// countLocal recounts this rank's blocks per level.
func (m *Mesh) countLocal() {
	for i := range m.localCount {
		m.localCount[i] = 0
	}
	for _, b := range m.leaves {
		m.localCount[b.Level]++
	}
}
