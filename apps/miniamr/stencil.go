package miniamr

// stencil applies the 7-point average to every variable of every leaf
// (miniAMR's stencil_calc): new = (c + 6 face neighbours) / 7, ghost cells
// included as neighbours.
func (m *Mesh) stencil() {
	n, s, s2 := m.n, m.s, m.s*m.s
	w := m.work
	for _, b := range m.leaves {
		for vr := 0; vr < m.P.Vars; vr++ {
			d := b.Data[vr*m.s3 : (vr+1)*m.s3]
			copy(w, d)
			for k := 0; k < n; k++ {
				for j := 0; j < n; j++ {
					c := m.cell(0, j, k)
					out := d[c : c+n]
					xm, x0, xp := w[c-1:c-1+n], w[c:c+n], w[c+1:c+1+n]
					ym, yp := w[c-s:c-s+n], w[c+s:c+s+n]
					zm, zp := w[c-s2:c-s2+n], w[c+s2:c+s2+n]
					for i := range out {
						out[i] = (xm[i] + ym[i] + zm[i] + x0[i] + zp[i] + yp[i] + xp[i]) / 7
					}
				}
			}
		}
	}
}

// localSums adds up every variable over this rank's leaves, leaf by leaf
// in the fixed order (miniAMR's check_sum before its allreduce).
func (m *Mesh) localSums(sum []float64) {
	n := m.n
	for i := range sum {
		sum[i] = 0
	}
	for _, b := range m.leaves {
		for vr := 0; vr < m.P.Vars; vr++ {
			d := b.Data[vr*m.s3 : (vr+1)*m.s3]
			bs := 0.0
			for k := 0; k < n; k++ {
				for j := 0; j < n; j++ {
					c := m.cell(0, j, k)
					for _, x := range d[c : c+n] {
						bs += x
					}
				}
			}
			sum[vr] += bs
		}
	}
}
