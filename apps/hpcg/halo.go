package hpcg

import (
	"fmt"

	"github.com/dpmlgo/dpml/apps/internal/grid"
	"github.com/dpmlgo/dpml/mpi"
)

// halo is the exchange pattern of one level: for each of the up to 26
// neighbouring ranks, the local points it needs (a face, an edge or a
// corner of the box) and the ghost points it fills.
type halo struct {
	comm *mpi.Comm
	nbrs []neighbor
	reqs []*mpi.Request
}

type neighbor struct {
	rank             int
	sendTag, recvTag int
	send, recv       []int32 // vector positions
	sendBuf, recvBuf []float64
}

// span is the range of local indices (lo inclusive, hi exclusive) of the
// points sent toward offset d along one axis of n points, and of the ghost
// points received from there.
func span(d, n int) (sendLo, sendHi, recvLo, recvHi int) {
	switch d {
	case -1:
		return 0, 1, -1, 0
	case 1:
		return n - 1, n, n, n + 1
	}
	return 0, n, 0, n
}

// newHalo builds the pattern of level l (tags offset by tagBase).
func newHalo(comm *mpi.Comm, g grid.Grid, l *Level, tagBase int) *halo {
	h := &halo{comm: comm}
	if comm == nil {
		return h
	}
	for dz := -1; dz <= 1; dz++ {
		for dy := -1; dy <= 1; dy++ {
			for dx := -1; dx <= 1; dx++ {
				if dx == 0 && dy == 0 && dz == 0 {
					continue
				}
				r := g.Neighbor(dx, dy, dz)
				if r < 0 {
					continue
				}
				d := (dx + 1) + 3*(dy+1) + 9*(dz+1)
				nb := neighbor{rank: r, sendTag: tagBase + d, recvTag: tagBase + 26 - d}
				xs0, xs1, xr0, xr1 := span(dx, l.NX)
				ys0, ys1, yr0, yr1 := span(dy, l.NY)
				zs0, zs1, zr0, zr1 := span(dz, l.NZ)
				for k := zs0; k < zs1; k++ {
					for j := ys0; j < ys1; j++ {
						for i := xs0; i < xs1; i++ {
							nb.send = append(nb.send, int32(l.Index(i, j, k)))
						}
					}
				}
				for k := zr0; k < zr1; k++ {
					for j := yr0; j < yr1; j++ {
						for i := xr0; i < xr1; i++ {
							nb.recv = append(nb.recv, int32(l.Index(i, j, k)))
						}
					}
				}
				nb.sendBuf = make([]float64, len(nb.send))
				nb.recvBuf = make([]float64, len(nb.recv))
				h.nbrs = append(h.nbrs, nb)
			}
		}
	}
	h.reqs = make([]*mpi.Request, 0, 2*len(h.nbrs))
	return h
}

// exchange fills x's ghost points from the neighbouring ranks.
func (h *halo) exchange(x []float64) error {
	if len(h.nbrs) == 0 {
		return nil
	}
	h.reqs = h.reqs[:0]
	for i := range h.nbrs {
		nb := &h.nbrs[i]
		r, err := mpi.Irecv(h.comm, nb.recvBuf, nb.rank, nb.recvTag)
		if err != nil {
			return h.fail(fmt.Errorf("halo irecv from %d: %w", nb.rank, err))
		}
		h.reqs = append(h.reqs, r)
	}
	for i := range h.nbrs {
		nb := &h.nbrs[i]
		for j, p := range nb.send {
			nb.sendBuf[j] = x[p]
		}
		r, err := mpi.Isend(h.comm, nb.sendBuf, nb.rank, nb.sendTag)
		if err != nil {
			return h.fail(fmt.Errorf("halo isend to %d: %w", nb.rank, err))
		}
		h.reqs = append(h.reqs, r)
	}
	if err := mpi.Waitall(h.reqs); err != nil {
		return fmt.Errorf("halo wait: %w", err)
	}
	for i := range h.nbrs {
		nb := &h.nbrs[i]
		for j, p := range nb.recv {
			x[p] = nb.recvBuf[j]
		}
	}
	return nil
}

// fail completes the requests already posted before returning err.
func (h *halo) fail(err error) error {
	_ = mpi.Waitall(h.reqs)
	return err
}
