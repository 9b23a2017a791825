package miniamr

import "testing"

// benchMesh is a refined mesh of one process: 2x2x1 root blocks of 10^3
// cells x 40 variables, 3 levels, about 600 blocks.
func benchMesh(b *testing.B) *Mesh {
	p := DefaultParams()
	p.InitX, p.InitY, p.InitZ = 2, 2, 1
	m, err := NewMesh(nil, p, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := m.Adapt(p.MaxLevel); err != nil {
		b.Fatal(err)
	}
	return m
}

func cellUpdates(m *Mesh) float64 {
	return float64(len(m.leaves) * m.n * m.n * m.n * m.P.Vars)
}

func BenchmarkStencil(b *testing.B) {
	m := benchMesh(b)
	m.fillGhosts()
	b.ResetTimer()
	for b.Loop() {
		m.stencil()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/cellUpdates(m), "ns/cell")
}

func BenchmarkGhosts(b *testing.B) {
	m := benchMesh(b)
	b.ResetTimer()
	for b.Loop() {
		m.fillGhosts()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/cellUpdates(m), "ns/cell")
}

func BenchmarkChecksum(b *testing.B) {
	m := benchMesh(b)
	s := make([]float64, m.P.Vars)
	b.ResetTimer()
	for b.Loop() {
		m.localSums(s)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/cellUpdates(m), "ns/cell")
}
