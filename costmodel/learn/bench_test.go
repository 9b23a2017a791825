package learn

import "github.com/dpmlgo/dpml/costmodel"

import "testing"

// settled returns a tuner with key k frozen.
func settled(b *testing.B, k Key) *Tuner {
	b.Helper()
	tu := newTuners(b, 1, Config{Budget: -1, SegmentBytes: 256 << 10}, costmodel.DefaultModel())[0]
	cost := modelSurface(costmodel.DefaultModel(), k, 256<<10)
	for i := 0; i < 2000; i++ {
		a := tu.Choose(k)
		if tu.Record(k, a, cost(i, a)) {
			if err := commitLocal(tu); err != nil {
				b.Fatal(err)
			}
		}
	}
	if in, _ := tu.Info(k); in.State != Frozen {
		b.Fatalf("key did not settle")
	}
	return tu
}

// BenchmarkChooseFrozen is the per-call decision on a settled key.
func BenchmarkChooseFrozen(b *testing.B) {
	k := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<20, Layout{Nodes: 4, PPN: 8})
	tu := settled(b, k)
	b.ReportAllocs()
	b.ResetTimer()
	var sink Arm
	for i := 0; i < b.N; i++ {
		sink = tu.Choose(k)
	}
	_ = sink
}

// BenchmarkChooseFrozenTwoKeys alternates two keys, so every call misses
// the one-entry cache and goes through the map.
func BenchmarkChooseFrozenTwoKeys(b *testing.B) {
	k1 := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<20, Layout{Nodes: 4, PPN: 8})
	k2 := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<10, Layout{Nodes: 4, PPN: 8})
	tu := settled(b, k1)
	tu.Choose(k2)
	keys := [2]Key{k1, k2}
	b.ReportAllocs()
	b.ResetTimer()
	var sink Arm
	for i := 0; i < b.N; i++ {
		sink = tu.Choose(keys[i&1])
	}
	_ = sink
}

// BenchmarkCallFrozen is the whole per-call tuner cost on a settled key:
// costmodel.MakeKey, Choose, Record, and the amortised Commit (without the
// max-allreduce, which is the engine's).
func BenchmarkCallFrozen(b *testing.B) {
	lay := Layout{Nodes: 4, PPN: 8}
	k := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<20, lay)
	tu := settled(b, k)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		kk := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<20, lay)
		a := tu.Choose(kk)
		if tu.Record(kk, a, 1e-4) {
			_ = commitLocal(tu)
		}
	}
}

// BenchmarkCallExploring is the per-call cost while a key explores.
func BenchmarkCallExploring(b *testing.B) {
	lay := Layout{Nodes: 4, PPN: 8}
	k := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<20, lay)
	tu := newTuners(b, 1, Config{Budget: -1, SegmentBytes: 256 << 10}, costmodel.DefaultModel())[0]
	tu.Choose(k)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a := tu.Choose(k)
		if tu.Record(k, a, 1e-4) {
			b.StopTimer()
			tu = newTuners(b, 1, Config{Budget: -1, SegmentBytes: 256 << 10}, costmodel.DefaultModel())[0]
			tu.Choose(k)
			b.StartTimer()
		}
	}
}

// BenchmarkCommitCold is one commit step's Commit in a program's first
// calls: the default table's tuner, every size from 4 B to 16 MiB called
// 100 times in turn on 1x32 (the cold benchmark pattern), each call
// priced by the model. Only Commit is timed.
func BenchmarkCommitCold(b *testing.B) {
	lay := Layout{Nodes: 1, PPN: 32}
	flush := make([]byte, 64<<20)
	var commits int
	for i := 0; i < b.N; {
		b.StopTimer()
		tu, err := NewTunerFromDefault(DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		for bytes := 4; bytes <= 16<<20 && i < b.N; bytes *= 4 {
			k := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, bytes, lay)
			cost := modelSurface(costmodel.DefaultModel(), k, 1<<20)
			var at float64
			for j := 0; j < 100 && i < b.N; j++ {
				a := tu.Choose(k)
				d := cost(j, a)
				if tu.RecordSpan(k, a, at, at+d) {
					m := tu.Pending()
					s := tu.Exits(m)
					for f := 0; f < len(flush); f += 64 {
						flush[f]++
					}
					b.StartTimer()
					if err := tu.Commit(m, s); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					i++
					commits++
				}
				at += d + 1e-6
			}
		}
	}
	b.ReportMetric(float64(commits), "commits")
}

// BenchmarkFold32 is a node folder's work in one commit step on 32 local
// ranks: 32 ranks' Stamps of 16 calls folded, then the verdicts.
func BenchmarkFold32(b *testing.B) {
	tu := newTuners(b, 1, Config{Budget: -1}, costmodel.DefaultModel())[0]
	k := costmodel.MakeKey(costmodel.ElemFloat32, costmodel.OpArith, 1<<20, Layout{Nodes: 1, PPN: 32})
	for tu.np < 16 {
		a := tu.Choose(k)
		at := float64(tu.np) * 1e-3
		tu.RecordSpan(k, a, at, at+1e-4)
	}
	st := make([][]float64, 32)
	for r := range st {
		st[r] = append([]float64(nil), tu.Stamps()...)
		for i := range st[r] {
			st[r][i] += float64(r) * 1e-7
		}
	}
	f := make([]float64, FoldLen(len(st[0])))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r, s := range st {
			if err := Fold(f, s, r == 0); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := tu.Verdicts(f); err != nil {
			b.Fatal(err)
		}
	}
}
