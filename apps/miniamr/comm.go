package miniamr

import (
	"fmt"

	"github.com/dpmlgo/dpml/mpi"
)

// faceComm is the exchange with the rank across one face of the local
// subdomain: direction dir = 2*axis + side (side 0: toward -axis).
type faceComm struct {
	rank    int // -1: the domain boundary
	a, side int
	// Level maps: the local boundary plane out, the remote one in.
	lvSend, lvRecv []int8
	// Data: the face layers of the local leaves touching the face, and
	// of the remote leaves across it, in the canonical order (see
	// setupTasks).
	send             []*Block
	sendBuf, recvBuf []float64
	remote           map[key]int // offset of each remote leaf's layer in recvBuf
}

// Tags of the two kinds of exchange (plus the sender's direction).
const (
	tagLevels = 100
	tagData   = 200
)

func (m *Mesh) setupFaces() {
	for a := range 3 {
		for side := range 2 {
			d := [3]int{}
			d[a] = 2*side - 1
			fc := &m.faces[2*a+side]
			fc.a, fc.side, fc.rank = a, side, -1
			if m.comm != nil {
				fc.rank = m.Grid.Neighbor(d[0], d[1], d[2])
			}
			if fc.rank >= 0 {
				ua, va := axes(a)
				fc.lvSend = make([]int8, m.f[ua]*m.f[va])
				fc.lvRecv = make([]int8, m.f[ua]*m.f[va])
			}
		}
	}
}

// boundaryPlane is the normal coordinate of the local units on face (a,
// side) and of the ghost units beyond it.
func (m *Mesh) boundaryPlane(a, side int) (inside, ghost int) {
	if side == 0 {
		return 0, -1
	}
	return m.f[a] - 1, m.f[a]
}

// exchange posts the receives, then the sends of every face with a
// neighbour, and waits.
func exchange[T mpi.Number](m *Mesh, tag int, recv func(*faceComm) []T, send func(*faceComm) []T) error {
	var reqs []*mpi.Request
	fail := func(err error) error {
		_ = mpi.Waitall(reqs)
		return err
	}
	for i := range m.faces {
		fc := &m.faces[i]
		if fc.rank < 0 {
			continue
		}
		// The peer sends toward us: its direction is (a, 1-side).
		r, err := mpi.Irecv(m.comm, recv(fc), fc.rank, tag+2*fc.a+1-fc.side)
		if err != nil {
			return fail(fmt.Errorf("miniamr: irecv from %d: %w", fc.rank, err))
		}
		reqs = append(reqs, r)
	}
	for i := range m.faces {
		fc := &m.faces[i]
		if fc.rank < 0 {
			continue
		}
		r, err := mpi.Isend(m.comm, send(fc), fc.rank, tag+i)
		if err != nil {
			return fail(fmt.Errorf("miniamr: isend to %d: %w", fc.rank, err))
		}
		reqs = append(reqs, r)
	}
	if err := mpi.Waitall(reqs); err != nil {
		return fmt.Errorf("miniamr: face exchange: %w", err)
	}
	return nil
}

// exchangeLevels sends the level map's boundary planes to the face
// neighbours and fills the ghost shell with theirs.
func (m *Mesh) exchangeLevels() error {
	for i := range m.faces {
		fc := &m.faces[i]
		if fc.rank < 0 {
			continue
		}
		ua, va := axes(fc.a)
		w, _ := m.boundaryPlane(fc.a, fc.side)
		for v := 0; v < m.f[va]; v++ {
			for u := 0; u < m.f[ua]; u++ {
				x, y, z := point(fc.a, w, u, v)
				fc.lvSend[v*m.f[ua]+u] = m.lm[m.lmIndex(x, y, z)]
			}
		}
	}
	err := exchange(m, tagLevels, func(fc *faceComm) []int8 { return fc.lvRecv }, func(fc *faceComm) []int8 { return fc.lvSend })
	if err != nil {
		return err
	}
	for i := range m.faces {
		fc := &m.faces[i]
		if fc.rank < 0 {
			continue
		}
		ua, va := axes(fc.a)
		_, w := m.boundaryPlane(fc.a, fc.side)
		for v := 0; v < m.f[va]; v++ {
			for u := 0; u < m.f[ua]; u++ {
				x, y, z := point(fc.a, w, u, v)
				m.lm[m.lmIndex(x, y, z)] = fc.lvRecv[v*m.f[ua]+u]
			}
		}
	}
	return nil
}

// keyAt is the key of the level-L block over local finest unit (x, y, z).
func (m *Mesh) keyAt(L, x, y, z int) key {
	sh := m.maxL - L
	return key{int8(L), int32((m.origin[0] + x) >> sh), int32((m.origin[1] + y) >> sh), int32((m.origin[2] + z) >> sh)}
}

// Face-task kinds: where a block's ghost cells on one face come from.
const (
	kindBoundary = iota // the domain boundary: reflect
	kindSame            // one neighbour of the same level
	kindCoarser         // one neighbour one level coarser
	kindFiner           // four neighbours one level finer
)

// source is a neighbour's face layer: a local leaf, or a remote one at
// offset off of faces[dir].recvBuf.
type source struct {
	local *Block
	dir   int
	off   int
}

type faceTask struct {
	b       *Block
	a, side int
	kind    int
	qu, qv  int       // kindCoarser: which quarter of the coarse face is ours
	src     [4]source // kindSame, kindCoarser: src[0]; kindFiner: by quarter qu + 2 qv
}

// setupTasks derives, from the level map, what the face exchanges carry
// and where every ghost face of every leaf comes from. The leaves of a
// face are listed in a canonical order both sides derive alike: the finest
// units of the face plane by (v, u), each leaf at the unit of its lowest
// corner.
func (m *Mesh) setupTasks() error {
	ll := m.layerLen()
	for i := range m.faces {
		fc := &m.faces[i]
		if fc.rank < 0 {
			continue
		}
		ua, va := axes(fc.a)
		win, wout := m.boundaryPlane(fc.a, fc.side)
		fc.send = fc.send[:0]
		fc.remote = map[key]int{}
		off := 0
		for v := 0; v < m.f[va]; v++ {
			for u := 0; u < m.f[ua]; u++ {
				gu, gv := m.origin[ua]+u, m.origin[va]+v
				x, y, z := point(fc.a, win, u, v)
				if L := int(m.lm[m.lmIndex(x, y, z)]); gu%(1<<(m.maxL-L)) == 0 && gv%(1<<(m.maxL-L)) == 0 {
					b := m.byKey[m.keyAt(L, x, y, z)]
					if b == nil {
						return fmt.Errorf("miniamr: rank %d: no local leaf at level %d over unit %d,%d,%d", m.Grid.Rank, L, x, y, z)
					}
					fc.send = append(fc.send, b)
				}
				x, y, z = point(fc.a, wout, u, v)
				if L := int(m.lm[m.lmIndex(x, y, z)]); gu%(1<<(m.maxL-L)) == 0 && gv%(1<<(m.maxL-L)) == 0 {
					fc.remote[m.keyAt(L, x, y, z)] = off
					off += ll
				}
			}
		}
		fc.sendBuf = grow(fc.sendBuf, len(fc.send)*ll)
		fc.recvBuf = grow(fc.recvBuf, off)
	}

	m.tasks = m.tasks[:0]
	for _, b := range m.leaves {
		lo, sz := m.region(b)
		idx := [3]int{b.I, b.J, b.K}
		for a := range 3 {
			ua, va := axes(a)
			for side := range 2 {
				t := faceTask{b: b, a: a, side: side}
				w := lo[a] - 1
				if side == 1 {
					w = lo[a] + sz
				}
				x, y, z := point(a, w, lo[ua], lo[va])
				L := b.Level
				nl := int(m.lm[m.lmIndex(x, y, z)])
				var err error
				switch {
				case nl < 0:
					t.kind = kindBoundary
				case nl == L:
					t.kind = kindSame
					t.src[0], err = m.sourceAt(a, side, w, nl, x, y, z)
				case nl == L-1:
					t.kind = kindCoarser
					t.qu, t.qv = idx[ua]&1, idx[va]&1
					t.src[0], err = m.sourceAt(a, side, w, nl, x, y, z)
				case nl == L+1:
					t.kind = kindFiner
					h := sz / 2
					for q := 0; q < 4 && err == nil; q++ {
						x, y, z := point(a, w, lo[ua]+(q&1)*h, lo[va]+(q>>1)*h)
						t.src[q], err = m.sourceAt(a, side, w, nl, x, y, z)
					}
				default:
					err = fmt.Errorf("miniamr: rank %d: block %v at level %d has a level-%d neighbour (2:1 balance broken)", m.Grid.Rank, b.key(), L, nl)
				}
				if err != nil {
					return err
				}
				m.tasks = append(m.tasks, t)
			}
		}
	}
	return nil
}

// sourceAt finds the level-L leaf over local unit (x, y, z), which lies
// across face (a, side) at normal coordinate w.
func (m *Mesh) sourceAt(a, side, w, L, x, y, z int) (source, error) {
	k := m.keyAt(L, x, y, z)
	if w >= 0 && w < m.f[a] {
		if b := m.byKey[k]; b != nil {
			return source{local: b}, nil
		}
		return source{}, fmt.Errorf("miniamr: rank %d: no local leaf %v", m.Grid.Rank, k)
	}
	dir := 2*a + side
	off, ok := m.faces[dir].remote[k]
	if !ok {
		return source{}, fmt.Errorf("miniamr: rank %d: no remote leaf %v across face %d", m.Grid.Rank, k, dir)
	}
	return source{dir: dir, off: off}, nil
}

func grow(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}

func (m *Mesh) layerLen() int { return m.n * m.n * m.P.Vars }

// strides returns the array offset of cell (0,0,0) and the strides along
// the normal axis a and its tangential axes u, v.
func (m *Mesh) strides(a int) (base, sw, su, sv int) {
	st := [3]int{1, m.s, m.s * m.s}
	ua, va := axes(a)
	return 1 + m.s + m.s*m.s, st[a], st[ua], st[va]
}

// layer copies block b's cells next to face (a, side), every variable, as
// [var][v][u].
func (m *Mesh) layer(b *Block, a, side int, dst []float64) {
	n := m.n
	base, sw, su, sv := m.strides(a)
	if side == 1 {
		base += (n - 1) * sw
	}
	p := 0
	for vr := 0; vr < m.P.Vars; vr++ {
		d := b.Data[vr*m.s3 : (vr+1)*m.s3]
		for v := 0; v < n; v++ {
			stridedCopy(dst[p:p+n], 1, d[base+v*sv:], su)
			p += n
		}
	}
}

// stridedCopy copies len(dst)/ds elements from src (stride ss) to dst
// (stride ds).
func stridedCopy(dst []float64, ds int, src []float64, ss int) {
	if ds == 1 && ss == 1 {
		copy(dst, src[:len(dst)])
		return
	}
	for i, j := 0, 0; i < len(dst); i, j = i+ds, j+ss {
		dst[i] = src[j]
	}
}

// layerOf returns the face layer a source provides toward us (buffer i of
// the scratch for local leaves).
func (m *Mesh) layerOf(s source, a, side, i int) []float64 {
	if s.local == nil {
		return m.faces[s.dir].recvBuf[s.off : s.off+m.layerLen()]
	}
	m.layer(s.local, a, 1-side, m.layerBuf[i])
	return m.layerBuf[i]
}

// exchangeData sends every boundary leaf's face layer to the rank across
// the face and receives theirs.
func (m *Mesh) exchangeData() error {
	ll := m.layerLen()
	for i := range m.faces {
		fc := &m.faces[i]
		for j, b := range fc.send {
			m.layer(b, fc.a, fc.side, fc.sendBuf[j*ll:(j+1)*ll])
		}
	}
	return exchange(m, tagData, func(fc *faceComm) []float64 { return fc.recvBuf }, func(fc *faceComm) []float64 { return fc.sendBuf })
}

// fillGhosts sets the ghost cells of every leaf's six faces.
func (m *Mesh) fillGhosts() {
	n, h := m.n, m.n/2
	for ti := range m.tasks {
		t := &m.tasks[ti]
		base, sw, su, sv := m.strides(t.a)
		g := base - sw // ghost plane
		in := base     // own plane next to the face
		if t.side == 1 {
			g, in = base+n*sw, base+(n-1)*sw
		}
		d := t.b.Data
		switch t.kind {
		case kindBoundary:
			for vr := 0; vr < m.P.Vars; vr++ {
				dd := d[vr*m.s3 : (vr+1)*m.s3]
				for v := 0; v < n; v++ {
					stridedCopy(dd[g+v*sv:g+v*sv+(n-1)*su+1], su, dd[in+v*sv:], su)
				}
			}
		case kindSame:
			if nb := t.src[0].local; nb != nil {
				// Straight from the neighbour's plane next to the face.
				nin := base
				if t.side == 0 {
					nin = base + (n-1)*sw
				}
				for vr := 0; vr < m.P.Vars; vr++ {
					o := vr * m.s3
					dd, nd := d[o:o+m.s3], nb.Data[o:o+m.s3]
					for v := 0; v < n; v++ {
						stridedCopy(dd[g+v*sv:g+v*sv+(n-1)*su+1], su, nd[nin+v*sv:], su)
					}
				}
				break
			}
			f := m.layerOf(t.src[0], t.a, t.side, 0)
			p := 0
			for vr := 0; vr < m.P.Vars; vr++ {
				dd := d[vr*m.s3 : (vr+1)*m.s3]
				for v := 0; v < n; v++ {
					stridedCopy(dd[g+v*sv:g+v*sv+(n-1)*su+1], su, f[p:p+n], 1)
					p += n
				}
			}
		case kindCoarser:
			f := m.layerOf(t.src[0], t.a, t.side, 0)
			for vr := 0; vr < m.P.Vars; vr++ {
				o := vr*m.s3 + g
				fo := vr * n * n
				for v := 0; v < n; v++ {
					cv := t.qv*h + v/2
					for u := 0; u < n; u++ {
						d[o+u*su+v*sv] = f[fo+cv*n+t.qu*h+u/2] / 4
					}
				}
			}
		case kindFiner:
			for q := range 4 {
				f := m.layerOf(t.src[q], t.a, t.side, q)
				qu, qv := q&1, q>>1
				for vr := 0; vr < m.P.Vars; vr++ {
					o := vr*m.s3 + g
					fo := vr * n * n
					for v := 0; v < h; v++ {
						for u := 0; u < h; u++ {
							r0 := fo + 2*v*n + 2*u
							r1 := r0 + n
							d[o+(qu*h+u)*su+(qv*h+v)*sv] = f[r0] + f[r0+1] + f[r1] + f[r1+1]
						}
					}
				}
			}
		}
	}
}
