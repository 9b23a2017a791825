package nccl

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
)

// forcedCSV writes one run of a forced-channel sweep: rows "coll bytes
// variant median_us [check]".
func forcedCSV(rows ...string) string {
	var b strings.Builder
	b.WriteString("# gpus=2\n# gpu0=NVIDIA H200\n# nccl_version=22803\n# dtype=float32\n# op=sum\n")
	b.WriteString("coll,bytes,variant,policy,comm,ranks,nodes,reps,batch,median_us,min_us,max_us,algbw_gbs,busbw_gbs,wrong,checked,check,tuner_calls,tuner_choice\n")
	for _, r := range rows {
		f := strings.Fields(r)
		check := "ok"
		if len(f) > 4 {
			check = f[4]
		}
		pol, comm, _ := strings.Cut(f[2], "@")
		fmt.Fprintf(&b, "%s,%s,%s,%s,%s,2,1,3,1,%s,%s,%s,1,1,0,10,%s,-1,-\n", f[0], f[1], f[2], pol, comm, f[3], f[3], f[3], check)
	}
	return b.String()
}

func TestFitForced(t *testing.T) {
	// Three runs. allreduce 2 MiB: 32 channels beat the default by 10%,
	// 8% and 6% (median 8%); 16 by 2%. allreduce 4 KiB: 4 channels 10%
	// faster in two runs, slower in one (median 10%, but it lost once).
	// allgather 1 MiB: 32 channels 2% faster in every run (below the
	// margin). reducescatter 1 MiB: 8 channels 20% faster, but its third
	// run's check failed (two pairs). A minN row never counts.
	runs := [][]string{
		{"allreduce 2097152 nccl@dflt 110", "allreduce 2097152 nccl@32 100", "allreduce 2097152 nccl@16 107.8",
			"allreduce 4096 nccl@dflt 11", "allreduce 4096 nccl@4 10",
			"allgather 1048576 nccl@dflt 102", "allgather 1048576 nccl@32 100",
			"reducescatter 1048576 nccl@dflt 120", "reducescatter 1048576 nccl@8 100",
			"allreduce 2097152 nccl@min8 50"},
		{"allreduce 2097152 nccl@dflt 108", "allreduce 2097152 nccl@32 100", "allreduce 2097152 nccl@16 105.9",
			"allreduce 4096 nccl@dflt 9", "allreduce 4096 nccl@4 10",
			"allgather 1048576 nccl@dflt 102", "allgather 1048576 nccl@32 100",
			"reducescatter 1048576 nccl@dflt 120", "reducescatter 1048576 nccl@8 100"},
		{"allreduce 2097152 nccl@dflt 106", "allreduce 2097152 nccl@32 100", "allreduce 2097152 nccl@16 103.9",
			"allreduce 4096 nccl@dflt 11", "allreduce 4096 nccl@4 10",
			"allgather 1048576 nccl@dflt 102", "allgather 1048576 nccl@32 100",
			"reducescatter 1048576 nccl@dflt 120", "reducescatter 1048576 nccl@8 10 fail"},
	}
	var sweeps []*Sweep
	for _, r := range runs {
		sweeps = append(sweeps, readSweep(t, forcedCSV(r...)))
	}
	picks, lay, err := FitForced(sweeps, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lay != (Layout{Ranks: 2, Nodes: 1}) {
		t.Errorf("layout %v", lay)
	}
	type want struct {
		coll           string
		log2, best, ch int
		speedup, lo    float64
		pairs          int
	}
	wants := []want{
		{"allreduce", 12, 4, 0, 1.1, 0.9, 3},
		{"allreduce", 21, 32, 32, 1.08, 1.06, 3},
		{"reducescatter", 20, 8, 8, 1.2, 1.2, 2},
		{"allgather", 20, 32, 0, 1.02, 1.02, 3},
	}
	if len(picks) != len(wants) {
		t.Fatalf("%d picks, want %d: %+v", len(picks), len(wants), picks)
	}
	for i, w := range wants {
		p := picks[i]
		if p.Coll != w.coll || p.Log2 != w.log2 || p.Best != w.best || p.Channels != w.ch || p.Pairs != w.pairs ||
			math.Abs(p.Speedup-w.speedup) > 1e-9 || math.Abs(p.MinSpeedup-w.lo) > 1e-9 {
			t.Errorf("pick %d: %+v, want %+v", i, p, w)
		}
	}
	b, err := FitBuiltin(picks, Machine{GPUs: 2, Nodes: 1, GPU: "NVIDIA  H200", Link: "NVLink"},
		BuiltinProvenance{Machine: "test", NCCL: "2.28.3", Measured: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Ranges) != 2 || b.Ranges[0] != (BuiltinRange{Coll: "allreduce", MinLog2: 21, MaxLog2: 21, Channels: 32, Evidence: b.Ranges[0].Evidence}) ||
		b.Ranges[1].Coll != "reducescatter" || b.Ranges[1].Channels != 8 || b.Key.GPU != "NVIDIA H200" || b.Key.Link != "nvlink" {
		t.Errorf("built-in %+v", b)
	}
	var buf bytes.Buffer
	if err := b.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if b2, err := ReadBuiltin(&buf); err != nil || len(b2.Ranges) != 2 {
		t.Errorf("round trip: %v %+v", err, b2)
	}
	tb, err := ForcedTable(picks, lay, sweeps[0], "test")
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Settings{Mode: ModeAuto, Table: writeTableFile(t, tb)}, lay)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		coll Coll
		n    uint64
		ch   int
	}{{AllReduce, 4096, 0}, {AllReduce, 2 << 20, 32}, {ReduceScatter, 1 << 20, 8}, {AllGather, 1 << 20, 0}, {Broadcast, 1 << 20, 0}} {
		if d := p.Decide(c.coll, c.n); d.Channels != c.ch || d.Algo != -1 {
			t.Errorf("table: %s %d: %v, want %d channels", c.coll, c.n, d, c.ch)
		}
	}
	if _, _, err := FitForced([]*Sweep{readSweep(t, forcedCSV("allreduce 4096 nccl@8 10"))}, FitOptions{}); err == nil {
		t.Error("no default rows: want an error")
	}
}

// TestBuiltinFiles: the embedded data reads, and the seeded files are the
// fit of the forced-channel sweeps of 2 and 4 H200 over NVLink (pass 0 of
// bench/results/2026-11-27-h200x2-nccl and -h200x4-nccl): a floor of 32
// channels, and 32 per call for every collective from 8 MiB to the 1 GiB
// bucket except 4-GPU allreduce, whose headroom there was below the margin.
func TestBuiltinFiles(t *testing.T) {
	all, err := Builtins()
	if err != nil {
		t.Fatal(err)
	}
	for _, gpus := range []int{2, 4} {
		b, ok, err := LookupBuiltin(Machine{GPUs: gpus, Nodes: 1, GPU: "NVIDIA H200", Link: "nvlink"})
		if err != nil || !ok {
			t.Fatalf("no built-in data for %d x H200 NVLink (%d files): %v", gpus, len(all), err)
		}
		if b.Schema != BuiltinSchema || b.Floor == nil || b.Floor.Channels != 32 || !strings.Contains(b.Floor.Evidence, "2^28..2^30") {
			t.Errorf("%d GPUs: schema %d, floor %+v", gpus, b.Schema, b.Floor)
		}
		if b.Provenance.NCCL != "2.28.3" || !strings.Contains(b.Provenance.Source, "-nccl/nccl") ||
			!strings.Contains(b.Provenance.Machine, "H200") || !strings.HasPrefix(b.Provenance.Command, "dpmlnccl fit -link nvlink") {
			t.Errorf("%d GPUs: provenance %+v", gpus, b.Provenance)
		}
		p, err := New(Settings{Mode: ModeAuto, GPU: "NVIDIA H200", Link: "nvlink"}, Layout{Ranks: gpus, Nodes: 1})
		if err != nil || !strings.Contains(p.Source, "built-in data for") || !strings.Contains(p.Source, "floor, 32") {
			t.Fatalf("%v: %s", err, p.Source)
		}
		for _, c := range []Coll{AllReduce, ReduceScatter, AllGather} {
			for bk := 24; bk <= 28; bk++ {
				want := Decision{Channels: 32, Algo: -1, Proto: -1}
				if gpus == 4 && c == AllReduce && bk >= 26 {
					want = Native
				}
				if got := p.Choice(c, bk); got != want {
					t.Errorf("%d GPUs: %s 2^%d: %v, want %v", gpus, c, bk, got, want)
				}
			}
		}
		for bk := 0; bk < NumBuckets; bk++ {
			if d := p.Choice(Broadcast, bk); !d.IsNative() {
				t.Errorf("%d GPUs: broadcast 2^%d: %v, not measured", gpus, bk, d)
			}
		}
	}
	lay := Layout{Ranks: 2, Nodes: 1}
	for _, m := range []Settings{
		{Mode: ModeAuto},
		{Mode: ModeAuto, GPU: "NVIDIA H200", Link: "pcie"},
		{Mode: ModeAuto, GPU: "NVIDIA H200 NVL", Link: "nvlink"},
		{Mode: ModeAuto, GPU: "NVIDIA A100-SXM4-80GB", Link: "nvlink"},
	} {
		for _, l := range []Layout{{Ranks: 2, Nodes: 1}, {Ranks: 3, Nodes: 1}, {Ranks: 2, Nodes: 2}} {
			p, err := New(m, l)
			if err != nil {
				t.Fatal(err)
			}
			want := m.GPU == "NVIDIA H200" && m.Link == "nvlink" && l == lay
			for c := Coll(0); c < NumColls && !want; c++ {
				for bk := 0; bk < NumBuckets; bk++ {
					if !p.Choice(c, bk).IsNative() {
						t.Errorf("%+v on %v: %s 2^%d: %v, want NCCL's default (%s)", m, l, c, bk, p.Choice(c, bk), p.Source)
					}
				}
			}
		}
	}
}

func TestBuiltinValidate(t *testing.T) {
	good := func() Builtin {
		return Builtin{Schema: 1, Key: Machine{GPUs: 2, Nodes: 1, GPU: "X", Link: "nvlink"},
			Provenance: BuiltinProvenance{Machine: "m", NCCL: "2.28.3", Measured: "m"},
			Ranges:     []BuiltinRange{{Coll: "allreduce", MinLog2: 21, MaxLog2: 30, Channels: 32}}}
	}
	b := good()
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	b.Schema, b.Floor = 2, &BuiltinFloor{Channels: 32}
	if err := b.Validate(); err != nil {
		t.Fatalf("schema 2 with a floor: %v", err)
	}
	for name, mut := range map[string]func(*Builtin){
		"schema":   func(b *Builtin) { b.Schema = 3 },
		"floor v1": func(b *Builtin) { b.Floor = &BuiltinFloor{Channels: 32} },
		"floor 0": func(b *Builtin) {
			b.Schema = 2
			b.Floor = &BuiltinFloor{}
		},
		"floor 65": func(b *Builtin) {
			b.Schema = 2
			b.Floor = &BuiltinFloor{Channels: 65}
		},
		"one gpu":    func(b *Builtin) { b.Key.GPUs = 1 },
		"no model":   func(b *Builtin) { b.Key.GPU = " " },
		"link":       func(b *Builtin) { b.Key.Link = "infiniband" },
		"provenance": func(b *Builtin) { b.Provenance.Measured = "" },
		"coll":       func(b *Builtin) { b.Ranges[0].Coll = "alltoall" },
		"channels":   func(b *Builtin) { b.Ranges[0].Channels = 65 },
		"reversed":   func(b *Builtin) { b.Ranges[0].MinLog2 = 31 },
		"bucket":     func(b *Builtin) { b.Ranges[0].MaxLog2 = 64 },
		"overlap": func(b *Builtin) {
			b.Ranges = append(b.Ranges, BuiltinRange{Coll: "AllReduce", MinLog2: 30, MaxLog2: 31, Channels: 8})
		},
	} {
		b := good()
		mut(&b)
		if err := b.Validate(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := ReadBuiltin(strings.NewReader(`{"schema": 1, "extra": 1}`)); err == nil {
		t.Error("unknown field: no error")
	}
}

func TestReadSweepColls(t *testing.T) {
	sw := readSweep(t, forcedCSV("allreduce 4096 nccl@dflt 10", "allgather 4096 nccl@dflt 12", "AllGather 8192 nccl@dflt 13"))
	if got := strings.Join(sw.Colls(), ","); got != "allreduce,allgather" {
		t.Errorf("colls %s", got)
	}
	ag := sw.ForColl("allgather")
	if len(ag.Rows) != 2 || ag.Meta["coll"] != "allgather" || sw.Meta["coll"] != "" {
		t.Errorf("ForColl: %d rows, meta %q / %q", len(ag.Rows), ag.Meta["coll"], sw.Meta["coll"])
	}
	if _, err := ReadSweep(strings.NewReader(forcedCSV("alltoall 4096 nccl@dflt 10"))); err == nil {
		t.Error("unknown collective: no error")
	}
}

// TestAnswerDefault: with a channel floor above NCCL's default count, a
// bucket the picks leave to NCCL answers the default communicator's count
// from 2 MiB up where the floor's count ran slower than the default, and
// nothing else changes. Mutations: the bucket bound removed -> the 1 MiB
// case; the floor's speedup not read -> the faster-floor case; a picked
// count overwritten -> the kept-pick case.
func TestAnswerDefault(t *testing.T) {
	floor := &BuiltinFloor{Channels: 32}
	picks := []ForcedPick{
		{Coll: "allreduce", Log2: 20, Speedups: map[int]float64{32: 0.95}},               // 1 MiB: below the bound
		{Coll: "allreduce", Log2: 21, Speedups: map[int]float64{32: 0.95}},               // 2 MiB, floor slower: answered
		{Coll: "allreduce", Log2: 22, Speedups: map[int]float64{32: 1.02}},               // floor faster: left to NCCL
		{Coll: "allreduce", Log2: 23, Channels: 16, Speedups: map[int]float64{32: 0.9}},  // a pick: kept
		{Coll: "reducescatter", Log2: 24, Speedups: map[int]float64{16: 0.9}},            // floor not measured: left
		{Coll: "reducescatter", Log2: 25, Speedups: map[int]float64{32: 0.99, 24: 1.00}}, // answered
	}
	got := AnswerDefault(picks, floor, 24)
	want := []struct {
		ch int
		at bool
	}{{0, false}, {24, true}, {0, false}, {16, false}, {0, false}, {24, true}}
	for i, w := range want {
		if got[i].Channels != w.ch || got[i].AtDefault != w.at {
			t.Errorf("%s 2^%d: channels %d (at default %v), want %d (%v)", got[i].Coll, got[i].Log2, got[i].Channels, got[i].AtDefault, w.ch, w.at)
		}
	}
	if picks[1].Channels != 0 {
		t.Errorf("AnswerDefault changed its argument")
	}
	for _, tc := range []struct {
		name  string
		floor *BuiltinFloor
		def   int
	}{{"no floor", nil, 24}, {"floor at the default", &BuiltinFloor{Channels: 24}, 24}, {"default unknown", floor, 0}} {
		for i, p := range AnswerDefault(picks, tc.floor, tc.def) {
			if p.Channels != picks[i].Channels || p.AtDefault {
				t.Errorf("%s: 2^%d answered %d", tc.name, p.Log2, p.Channels)
			}
		}
	}
	// The built-in data says where the answer comes from.
	b, err := FitBuiltin(got, Machine{GPUs: 2, Nodes: 1, GPU: "NVIDIA H100", Link: "nvlink"}, BuiltinProvenance{Machine: "test", NCCL: "2.28.3", Measured: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, r := range b.Ranges {
		if r.Channels == 24 {
			n++
			if !strings.Contains(r.Evidence, "default communicator's 24 channels") {
				t.Errorf("range %+v: evidence does not say it is the default communicator's count", r)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d ranges of 24 channels, want 2: %+v", n, b.Ranges)
	}
}
