package nccl

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dpmlgo/dpml/costmodel"
)

const sweepHead = `# tool=ncclsweep
# date=2026-11-23T10:00:00Z
# host=gpuhost
# nccl_version=22803
# cuda_runtime=13000
# gpus=2
# gpu0=NVIDIA H200
# command=ncclsweep -variants x
# coll=allreduce
# dtype=float32
# op=sum
# env NCCL_NVLS_ENABLE=0
bytes,variant,policy,comm,ranks,nodes,reps,batch,median_us,min_us,max_us,algbw_gbs,busbw_gbs,check,tuner_calls,tuner_choice
`

// sweepCSV writes rows "bytes variant median [check]" as ncclsweep would.
func sweepCSV(rows ...string) string {
	var b strings.Builder
	b.WriteString(sweepHead)
	for _, r := range rows {
		f := strings.Fields(r)
		v := f[1]
		pol, comm, _ := strings.Cut(v, "@")
		check := "ok"
		if len(f) > 3 {
			check = f[3]
		}
		var n int64
		var med float64
		fmt.Sscan(f[0], &n)
		fmt.Sscan(f[2], &med)
		alg := float64(n) / (med * 1e-6) / 1e9
		fmt.Fprintf(&b, "%d,%s,%s,%s,2,1,10,4,%g,%g,%g,%.3f,%.3f,%s,80,-\n", n, v, pol, comm, med, med*0.9, med*1.2, alg, alg, check)
	}
	return b.String()
}

func readSweep(t *testing.T, s string) *Sweep {
	t.Helper()
	sw, err := ReadSweep(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return sw
}

func TestReadSweep(t *testing.T) {
	sw := readSweep(t, sweepCSV("4096 nccl@dflt 10", "4096 8@min32 12", "1048576 nccl@dflt 20"))
	if sw.Meta["nccl_version"] != "22803" || sw.Meta["command"] != "ncclsweep -variants x" || len(sw.Env) != 1 || sw.Env[0] != "NCCL_NVLS_ENABLE=0" {
		t.Errorf("meta %v env %v", sw.Meta, sw.Env)
	}
	if len(sw.Rows) != 3 || sw.Rows[1].Policy != "8" || sw.Rows[1].Comm != "min32" || sw.Rows[1].Median != 12 || sw.Rows[1].TunerCalls != 80 {
		t.Errorf("rows %+v", sw.Rows)
	}
	if d, ok := sw.Rows[1].Fixed(); !ok || d.Channels != 8 {
		t.Errorf("Fixed = %v, %v", d, ok)
	}
	if _, ok := sw.Rows[0].Fixed(); ok {
		t.Error("nccl@dflt is not a fixed answer")
	}
	if got := sw.Sizes(); len(got) != 2 || got[0] != 4096 {
		t.Errorf("Sizes = %v", got)
	}
	if s, ok := sw.Speedup("8@min32", "nccl@dflt", 4096); !ok || math.Abs(s-10.0/12) > 1e-9 {
		t.Errorf("Speedup = %v, %v", s, ok)
	}
	for _, c := range []struct{ name, csv, want string }{
		{"empty", "", "no header"},
		{"no rows", sweepHead, "no rows"},
		{"missing column", strings.Replace(sweepHead, ",tuner_choice", "", 1) + "1,a@b,a,b,2,1,1,1,1,1,1,1,1,ok,1\n", `no column "tuner_choice"`},
		{"bad number", sweepHead + "x,a@b,a,b,2,1,1,1,1,1,1,1,1,ok,1,-\n", "bytes"},
		{"zero median", sweepHead + "4,a@b,a,b,2,1,1,1,0,1,1,1,1,ok,1,-\n", "out of range"},
		{"short line", sweepHead + "4,a@b\n", "wrong number of fields"},
	} {
		if _, err := ReadSweep(strings.NewReader(c.csv)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

func TestBuildTable(t *testing.T) {
	sw := readSweep(t, sweepCSV(
		// 4 KiB: NCCL's own is best.
		"4096 nccl@dflt 10", "4096 nccl@min32 10", "4096 1@min32 10.1", "4096 4@min32 11",
		// 64 KiB: 4 channels 2% faster than NCCL's own: noise, keep native.
		"65536 nccl@dflt 20", "65536 nccl@min32 20", "65536 1@min32 30", "65536 4@min32 19.6",
		// 1 MiB: 8 channels 10% faster; the 16-channel row failed its check (faster, but ignored).
		"1048576 nccl@dflt 100", "1048576 nccl@min32 110", "1048576 8@min32 99", "1048576 16/ring/simple@min32 50 fail", "1048576 4@min32 120",
		// 2 MiB, same bucket as nothing else; ring/simple with 16 channels wins.
		"2097152 nccl@dflt 200", "2097152 nccl@min32 210", "2097152 16/ring/simple@min32 150", "2097152 8@min32 180",
		// 4 MiB: 16 channels only 2% faster than NCCL's own on min32, but
		// that is slower than NCCL's default: take the 16.
		"4194304 nccl@dflt 400", "4194304 nccl@min32 410", "4194304 16@min32 402", "4194304 32@min32 410",
		// 8 MiB: the same margin, NCCL's own on min32 as fast as the default: native.
		"8388608 nccl@dflt 800", "8388608 nccl@min32 800", "8388608 16@min32 790",
		// 16 MiB: only fixed answers measured: the best one.
		"16777216 8@min32 900", "16777216 32@min32 800",
		// comm-forced rows (NCCL_MIN/MAX_NCHANNELS) do not make the table.
		"65536 nccl@4 5",
	))
	tb, picks, err := BuildTable(sw, BuildOptions{Command: "dpmlnccl table"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]Decision{12: Native, 16: Native, 20: {8, -1, -1}, 21: {16, AlgoRing, ProtoSimple}, 22: {16, -1, -1}, 23: Native, 24: {32, -1, -1}}
	if len(picks) != len(want) || len(tb.Entries) != len(want) {
		t.Fatalf("%d picks, %d entries; want %d: %+v", len(picks), len(tb.Entries), len(want), picks)
	}
	for i, p := range picks {
		if p.Choice != want[p.Log2] {
			t.Errorf("2^%d: chose %v, want %v (%+v)", p.Log2, p.Choice, want[p.Log2], p)
		}
		d, err := EntryDecision(&tb.Entries[i])
		if err != nil || d != p.Choice || tb.Entries[i].Coll != "allreduce" || tb.Entries[i].PPN != 2 || tb.Entries[i].Nodes != 1 {
			t.Errorf("entry %+v: %v, %v", tb.Entries[i], d, err)
		}
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12 }
	if p := picks[2]; !near(p.Default, 100e-6) || !near(p.Native, 110e-6) || !near(p.Time, 99e-6) || p.Best != (Decision{8, -1, -1}) {
		t.Errorf("1 MiB evidence %+v", p)
	}
	if n := len(tb.Entries[2].Measured); n != 3 { // native, 4, 8; not the failed 16
		t.Errorf("1 MiB measured %d arms: %+v", n, tb.Entries[2].Measured)
	}
	pv := tb.Provenance
	if !strings.Contains(pv.MPI, "NCCL 2.28.3") || !strings.Contains(pv.Host, "2 x NVIDIA H200") || !strings.Contains(pv.Layout, "min32") ||
		!strings.Contains(pv.Command, "| dpmlnccl table") || pv.Date != "2026-11-23T10:00:00Z" {
		t.Errorf("provenance %+v", pv)
	}
	// The table reads back through costmodel and the plugin's policy
	// answers what the picks say.
	var b bytes.Buffer
	if err := tb.Write(&b); err != nil {
		t.Fatal(err)
	}
	if _, err := costmodel.ReadTable(bytes.NewReader(b.Bytes())); err != nil {
		t.Fatal(err)
	}
	p, err := New(Settings{Mode: ModeAuto, Table: writeTableFile(t, tb)}, Layout{Ranks: 2, Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, pk := range picks {
		if got := p.Decide(AllReduce, uint64(pk.Sizes[0])); got != pk.Choice {
			t.Errorf("plugin at %d bytes: %v, table says %v", pk.Sizes[0], got, pk.Choice)
		}
	}
}

func TestBuildTableErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		rows []string
		opt  BuildOptions
		want string
	}{
		{"two comms", []string{"4096 nccl@min32 10", "4096 8@min32 9", "4096 8@min16 9"}, BuildOptions{}, "2 communicator settings"},
		{"no rows for comm", []string{"4096 nccl@min32 10", "4096 8@min32 9"}, BuildOptions{Comm: "min8"}, "no rows"},
		{"nothing comparable", []string{"4096 nccl@dflt 10", "4096 8@min32 9 fail"}, BuildOptions{}, "no size"},
	} {
		if _, _, err := BuildTable(readSweep(t, sweepCSV(c.rows...)), c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	// Two layouts in one sweep.
	s := sweepCSV("4096 nccl@min32 10", "4096 8@min32 9") + "4096,8@min32,8,min32,4,1,10,4,9,9,9,1,1,ok,1,-\n"
	if _, _, err := BuildTable(readSweep(t, s), BuildOptions{}); err == nil || !strings.Contains(err.Error(), "one layout") {
		t.Errorf("two layouts: %v", err)
	}
}

func TestVersionString(t *testing.T) {
	for in, want := range map[string]string{"22803": "2.28.3", "21903": "2.19.3", "2708": "2.7.8", "": "", "x": "x"} {
		if got := VersionString(in); got != want {
			t.Errorf("VersionString(%q) = %q, want %q", in, got, want)
		}
	}
}
