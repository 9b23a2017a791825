package miniamr

import (
	"fmt"
	"slices"

	"github.com/dpmlgo/dpml/mpi"
)

// box is block b's extent in the unit cube.
func (m *Mesh) box(b *Block) (lo, hi [3]float64) {
	idx := [3]int{b.I, b.J, b.K}
	for d := range 3 {
		n := float64(m.groot[d] << b.Level)
		lo[d] = float64(idx[d]) / n
		hi[d] = float64(idx[d]+1) / n
	}
	return lo, hi
}

// mark sets every leaf's target: one level finer where an object's surface
// crosses it, one coarser elsewhere (within 0..MaxLevel).
func (m *Mesh) mark() {
	for _, b := range m.leaves {
		lo, hi := m.box(b)
		hit := false
		for i := range m.objects {
			if m.objects[i].crossesSurface(lo, hi) {
				hit = true
				break
			}
		}
		b.target = b.Level
		if hit && b.Level < m.maxL {
			b.target = b.Level + 1
		} else if !hit && b.Level > 0 {
			b.target = b.Level - 1
		}
	}
}

// siblingsCoarsen reports whether the 8 children of b's parent are all
// leaves that want to coarsen.
func (m *Mesh) siblingsCoarsen(b *Block) bool {
	L := b.Level
	pi, pj, pk := b.I>>1, b.J>>1, b.K>>1
	for c := range 8 {
		s := m.byKey[key{int8(L), int32(2*pi + c&1), int32(2*pj + (c>>1)&1), int32(2*pk + c>>2)}]
		if s == nil || s.target != L-1 {
			return false
		}
	}
	return true
}

// balanceSweep raises targets so that no face neighbour (as the level map
// shows it) is more than one level finer, and cancels the coarsening of
// incomplete sibling groups. It returns the number of targets changed and
// writes the targets into the level map.
func (m *Mesh) balanceSweep() int {
	changes := 0
	for _, b := range m.leaves {
		t := b.target
		lo, sz := m.region(b)
		for a := range 3 {
			ua, va := axes(a)
			for _, w := range [2]int{lo[a] - 1, lo[a] + sz} {
				for v := lo[va]; v < lo[va]+sz; v++ {
					for u := lo[ua]; u < lo[ua]+sz; u++ {
						x, y, z := point(a, w, u, v)
						if nl := int(m.lm[m.lmIndex(x, y, z)]); nl > t+1 {
							t = nl - 1
						}
					}
				}
			}
		}
		if t != b.target {
			b.target = t
			changes++
		}
	}
	for _, b := range m.leaves {
		if b.target == b.Level-1 && !m.siblingsCoarsen(b) {
			b.target = b.Level
			changes++
		}
	}
	for _, b := range m.leaves {
		m.fillLevels(b, int8(b.target))
	}
	return changes
}

// Adapt refines and coarsens the mesh rounds times (each block changes by
// at most one level per round), as miniAMR's refine: mark, restore the 2:1
// balance (a loop of local sweeps, level-map exchanges and a one-int64
// allreduce of the change count), split and merge blocks, allreduce the
// block counts per level. At the end the minimum, maximum and total number
// of blocks per rank are allreduced.
func (m *Mesh) Adapt(rounds int) error {
	for r := 0; r < rounds; r++ {
		m.Stats.RefineRounds++
		if err := m.red.Int64("blocks", m.countsCopy(), mpi.OpSum); err != nil {
			return err
		}
		m.mark()
		for _, b := range m.leaves {
			m.fillLevels(b, int8(b.target))
		}
		if err := m.exchangeLevels(); err != nil {
			return err
		}
		for {
			m.Stats.BalanceSweeps++
			c := []int64{int64(m.balanceSweep())}
			if err := m.exchangeLevels(); err != nil {
				return err
			}
			if err := m.red.Int64("balance", c, mpi.OpSum); err != nil {
				return err
			}
			if c[0] == 0 {
				break
			}
		}
		if err := m.apply(); err != nil {
			return err
		}
		if err := m.setupTasks(); err != nil {
			return err
		}
		m.countLocal()
		counts := m.countsCopy()
		if err := m.red.Int64("blocks", counts, mpi.OpSum); err != nil {
			return err
		}
		copy(m.GlobalCount, counts)
		m.GlobalBlocks = 0
		for _, c := range counts {
			m.GlobalBlocks += c
		}
	}
	// miniAMR's closing statistics: min, max and sum of blocks per rank.
	nb := int64(len(m.leaves))
	for _, op := range []mpi.Op{mpi.OpMin, mpi.OpMax, mpi.OpSum} {
		v := []int64{nb}
		if err := m.red.Int64("minmax", v, op); err != nil {
			return err
		}
		switch op {
		case mpi.OpMin:
			m.Stats.MinRankBlocks = v[0]
		case mpi.OpMax:
			m.Stats.MaxRankBlocks = max(m.Stats.MaxRankBlocks, v[0])
		}
	}
	return nil
}

func (m *Mesh) countsCopy() []int64 { return slices.Clone(m.localCount) }

// apply splits the leaves whose target is one level finer and merges the
// sibling groups whose target is one level coarser.
func (m *Mesh) apply() error {
	grow := 0
	for _, b := range m.leaves {
		switch b.target - b.Level {
		case 1:
			grow += 7
		case -1:
			if b.I&1 == 0 && b.J&1 == 0 && b.K&1 == 0 {
				grow -= 7
			}
		}
	}
	if len(m.leaves)+grow > m.P.MaxBlocks {
		return fmt.Errorf("miniamr: rank %d would hold %d blocks, more than -max-blocks %d", m.Grid.Rank, len(m.leaves)+grow, m.P.MaxBlocks)
	}
	next := make([]*Block, 0, len(m.leaves)+grow)
	for _, b := range m.leaves {
		switch b.target - b.Level {
		case 0:
			next = append(next, b)
		case 1:
			next = append(next, m.split(b)...)
			m.Stats.Splits++
		case -1:
			if b.I&1 == 0 && b.J&1 == 0 && b.K&1 == 0 {
				next = append(next, m.merge(b))
				m.Stats.Merges++
			}
		default:
			return fmt.Errorf("miniamr: block %v: target level %d", b.key(), b.target)
		}
	}
	slices.SortFunc(next, blockLess)
	m.leaves = next
	for _, b := range next {
		b.target = b.Level
		m.fillLevels(b, int8(b.Level))
	}
	return nil
}

// split replaces b by its 8 children: child cell (i, j, k) gets an eighth
// of the parent cell it lies in (miniAMR's split_blocks).
func (m *Mesh) split(b *Block) []*Block {
	n, h := m.n, m.n/2
	delete(m.byKey, b.key())
	kids := make([]*Block, 8)
	for c := range 8 {
		cx, cy, cz := c&1, (c>>1)&1, c>>2
		k := &Block{Level: b.Level + 1, I: 2*b.I + cx, J: 2*b.J + cy, K: 2*b.K + cz}
		k.target = k.Level
		k.Data = m.alloc()
		for vr := 0; vr < m.P.Vars; vr++ {
			src := b.Data[vr*m.s3 : (vr+1)*m.s3]
			dst := k.Data[vr*m.s3 : (vr+1)*m.s3]
			for kk := 0; kk < n; kk++ {
				for j := 0; j < n; j++ {
					p := m.cell(cx*h, cy*h+j/2, cz*h+kk/2)
					q := m.cell(0, j, kk)
					for i := 0; i < n; i++ {
						dst[q+i] = src[p+i/2] / 8
					}
				}
			}
		}
		m.byKey[k.key()] = k
		kids[c] = k
	}
	m.release(b.Data)
	return kids
}

// merge replaces the sibling group whose first child is b by their parent:
// a parent cell is the sum of the 8 child cells it covers.
func (m *Mesh) merge(b *Block) *Block {
	n, h := m.n, m.n/2
	p := &Block{Level: b.Level - 1, I: b.I >> 1, J: b.J >> 1, K: b.K >> 1}
	p.target = p.Level
	p.Data = m.alloc()
	var kids [8]*Block
	for c := range 8 {
		k := key{int8(b.Level), int32(b.I + c&1), int32(b.J + (c>>1)&1), int32(b.K + c>>2)}
		kids[c] = m.byKey[k]
		delete(m.byKey, k)
	}
	for vr := 0; vr < m.P.Vars; vr++ {
		dst := p.Data[vr*m.s3 : (vr+1)*m.s3]
		for kk := 0; kk < n; kk++ {
			for j := 0; j < n; j++ {
				for i := 0; i < n; i++ {
					c := kids[(i/h)|(j/h)<<1|(kk/h)<<2]
					src := c.Data[vr*m.s3 : (vr+1)*m.s3]
					fi, fj, fk := 2*(i%h), 2*(j%h), 2*(kk%h)
					s := 0.0
					for dz := range 2 {
						for dy := range 2 {
							q := m.cell(fi, fj+dy, fk+dz)
							s += src[q] + src[q+1]
						}
					}
					dst[m.cell(i, j, kk)] = s
				}
			}
		}
	}
	for _, k := range kids {
		m.release(k.Data)
	}
	m.byKey[p.key()] = p
	return p
}
