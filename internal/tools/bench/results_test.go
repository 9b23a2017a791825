package bench

import (
	"bytes"
	"encoding/csv"
	"github.com/dpmlgo/dpml/internal/tools/results"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func us(median float64) results.Summary {
	return results.Summary{N: 10, Min: median * 0.9, Max: median * 2, Mean: median * 1.1, Median: median,
		P25: median * 0.95, P75: median * 1.05, P99: median * 1.9, Stddev: median * 0.1}
}

// sampleReport is a small 2-node x 2-rank sweep: two sizes, native, two
// fixed plans and auto.
func sampleReport() *results.Report {
	rep := &results.Report{Meta: results.Meta{Tool: "dpmlbench", Format: results.FormatVersion, Command: []string{"dpmlbench", "-sizes", "4,64K"},
		Nodes: 2, PPN: 2, PPNMax: 2, WorldSize: 4, Type: "float32", ElemSize: 4, Op: "sum",
		Hosts: []string{"node1", "node2"}, RankHosts: []string{"node1", "node1", "node2", "node2"}}}
	for _, b := range []int{4, 65536} {
		f := float64(b / 1024)
		rep.Results = append(rep.Results,
			results.Result{Bytes: b, Count: b / 4, Variant: results.VariantNative, Warmup: 3, Iters: 10, US: us(20 + f), Check: "ok"},
			results.Result{Bytes: b, Count: b / 4, Variant: results.VariantDPML, Leaders: 1, Pipeline: 1, Warmup: 3, Iters: 10, US: us(10 + f), Check: "ok",
				Phases: []results.Phase{{Name: "copy-in", MedianUS: 1, MeanUS: 1.5}, {Name: "reduce", MedianUS: 2, MeanUS: 2}}},
			results.Result{Bytes: b, Count: b / 4, Variant: results.VariantDPML, Leaders: 2, Pipeline: 4, Warmup: 3, Iters: 10, US: us(15 + f/4), Check: "ok"},
			results.Result{Bytes: b, Count: b / 4, Variant: results.VariantAuto, Warmup: 3, Iters: 10, US: us(12 + f/2), Check: "ok"},
		)
	}
	rep.Results[2].Check, rep.Results[2].Mismatches = "mismatch", 7
	rep.Results[3].Plan = &results.PlanInfo{Variant: "pipelined", Leaders: 2, Pipeline: 2, Segments: 1}
	rep.Results[0].FloorUS = 0.5
	rep.Results = append(rep.Results, results.Result{Bytes: 4, Count: 1, Variant: results.VariantDPML, Leaders: 2, Pipeline: 8, Skipped: "plan rejected: count 1 < 16 segments"})
	return rep
}

func TestLabelRatio(t *testing.T) {
	rep := sampleReport()
	if got := rep.Results[1].Label(); got != "dpml l=1 k=1" {
		t.Errorf("Label = %q", got)
	}
	if got := rep.Results[3].Label(); got != "auto" {
		t.Errorf("Label = %q", got)
	}
	n, ok := rep.Native(4)
	if !ok || n.Variant != results.VariantNative {
		t.Fatal("Native(4) missing")
	}
	d := rep.Results[1]
	if r := results.Ratio(d, n); !near(r, d.US.Median/n.US.Median) {
		t.Errorf("Ratio = %v", r)
	}
	skipped := rep.Results[len(rep.Results)-1]
	if skipped.OK() || !math.IsNaN(results.Ratio(skipped, n)) {
		t.Error("skipped point should have no ratio")
	}
	if _, ok := rep.Native(12345); ok {
		t.Error("Native of unknown size")
	}
	if got := rep.Sizes(); !reflect.DeepEqual(got, []int{4, 65536}) {
		t.Errorf("Sizes = %v", got)
	}
	best, ok := BestFixed(rep.Results, 65536)
	if !ok || best.Leaders != 2 || best.Pipeline != 4 { // 15+16 < 10+64
		t.Errorf("BestFixed = %+v", best)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	rep := sampleReport()
	rep.MemBW = &results.MemBW{Method: "ranks", BytesPerRank: 1 << 20, Reps: 3, CopyGBs: 12.5, TriadGBs: 10,
		PerNode: []results.NodeMemBW{{Host: "node1", Ranks: 2, CopyGBs: 12.5, TriadGBs: 10}}}
	rep.Results[0].US.P99 = math.NaN() // must not break the encoder
	var buf bytes.Buffer
	if err := results.WriteJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	back, err := results.ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	rep.Results[0].US.P99 = 0
	if !reflect.DeepEqual(back, rep) {
		t.Errorf("round trip differs:\n got %+v\nwant %+v", back, rep)
	}
	if _, err := results.ReadJSON(strings.NewReader(`{"meta":{"format":99}}`)); err == nil {
		t.Error("newer format: want error")
	}
	if _, err := results.ReadJSON(strings.NewReader(`{`)); err == nil {
		t.Error("bad JSON: want error")
	}
}

func TestCSV(t *testing.T) {
	rep := sampleReport()
	var buf bytes.Buffer
	if err := results.WriteCSV(&buf, rep); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+len(rep.Results) {
		t.Fatalf("%d rows, want %d", len(rows), 1+len(rep.Results))
	}
	h := rows[0]
	col := map[string]int{}
	for i, c := range h {
		col[c] = i
	}
	for _, c := range []string{"bytes", "size", "variant", "leaders", "pipeline", "iters", "min_us", "median_us", "mean_us", "p99_us", "iqr_us",
		"ratio_vs_native", "check", "phase_copy-in_median_us", "phase_reduce_median_us"} {
		if _, ok := col[c]; !ok {
			t.Errorf("missing column %q in %v", c, h)
		}
	}
	for i, row := range rows {
		if len(row) != len(h) {
			t.Errorf("row %d has %d fields, header %d", i, len(row), len(h))
		}
	}
	r1 := rows[2] // dpml l=1 k=1 at 4 B: median 10, native 20
	want := map[string]string{"bytes": "4", "size": "4", "variant": "dpml", "label": "dpml l=1 k=1", "leaders": "1", "pipeline": "1",
		"iters": "10", "median_us": "10", "ratio_vs_native": "0.5", "check": "ok",
		"phase_copy-in_median_us": "1", "type": "float32", "op": "sum", "nodes": "2", "ppn": "2"}
	for k, v := range want {
		if got := r1[col[k]]; got != v {
			t.Errorf("column %s = %q, want %q", k, got, v)
		}
	}
	if a := rows[4]; a[col["plan_variant"]] != "pipelined" || a[col["plan_leaders"]] != "2" || rows[1][col["membw_floor_us"]] != "0.5" {
		t.Errorf("plan/floor columns: %v / %v", a, rows[1])
	}
	if rows[3][col["mismatches"]] != "7" || rows[3][col["check"]] != "mismatch" {
		t.Errorf("mismatch row: %v", rows[3])
	}
	last := rows[len(rows)-1]
	if last[col["median_us"]] != "" || !strings.HasPrefix(last[col["skipped"]], "plan rejected") {
		t.Errorf("skipped row: %v", last)
	}
}

func TestTable(t *testing.T) {
	var buf bytes.Buffer
	WriteTable(&buf, sampleReport())
	out := buf.String()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if !strings.Contains(lines[1], "median_us") || !strings.Contains(lines[1], "ratio") {
		t.Errorf("header: %q", lines[1])
	}
	for _, want := range []string{
		"       4  native     -   -     10      18.00      20.00      22.00      38.00       2.00   1.000       0",
		"       4  dpml       1   1     10       9.00      10.00      11.00      19.00       1.00   0.500       0",
		"       4  dpml       2   4     10      13.50      15.00      16.50      28.50       1.50   0.750       7  CHECK FAILED (7 elements)",
		"phases (median us, max over ranks): copy-in=1.00 reduce=2.00",
		"CHECK FAILED (7 elements)",
		"skipped: plan rejected",
		"     64K  auto",
		"       4  auto       2   2     10      10.80      12.00      13.20      22.80       1.20   0.600       0  plan pipelined",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// rows of 4 B come before rows of 64K
	if strings.Index(out, "     64K") < strings.Index(out, "skipped") {
		t.Errorf("sizes not grouped:\n%s", out)
	}
	buf.Reset()
	WriteBest(&buf, sampleReport())
	if !strings.Contains(buf.String(), "l=2 k=4") || !strings.Contains(buf.String(), "64K") || !strings.Contains(buf.String(), "0.50") {
		t.Errorf("best table:\n%s", buf.String())
	}
}

func TestFmtUS(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{{1.234, "1.23"}, {99.999, "100.00"}, {123.45, "123.5"}, {123456.7, "123457"}, {math.NaN(), "-"}} {
		if got := fmtUS(tc.in); got != tc.want {
			t.Errorf("fmtUS(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSeries(t *testing.T) {
	rep := sampleReport()
	lat := LatencySeries(rep)
	var names []string
	for _, s := range lat {
		names = append(names, s.Name)
	}
	if !reflect.DeepEqual(names, []string{"native", "dpml l=1", "dpml l=2", "dpml auto"}) {
		t.Errorf("latency series %v", names)
	}
	if lat[2].XY[0].X != 4 || !near(lat[2].XY[0].Y, 15) {
		t.Errorf("l=2 at 4 B: %+v", lat[2].XY)
	}
	if lo, hi := lat[0].Lo[0], lat[0].Hi[0]; !near(lo, 20*0.95) || !near(hi, 20*1.05) {
		t.Errorf("native band at 4 B: %v..%v, want its IQR", lo, hi)
	}
	sp := RatioSeries(rep)
	if len(sp) != 2 || sp[0].Name != "best fixed (l,k)" || len(sp[0].XY) != 2 {
		t.Fatalf("ratio series %+v", sp)
	}
	if !near(sp[0].XY[1].Y, (15+16.0)/(20+64.0)) {
		t.Errorf("best ratio at 64K = %v", sp[0].XY[1].Y)
	}
	if !near(sp[0].Hi[1], (15+16.0)*1.05/(20+64.0)) {
		t.Errorf("best ratio's band top at 64K = %v", sp[0].Hi[1])
	}
}

func TestWriteAllAndPlots(t *testing.T) {
	dir := t.TempDir()
	rep := sampleReport()
	paths, err := WriteAll(filepath.Join(dir, "out"), rep, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 4 {
		t.Fatalf("wrote %v", paths)
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", p, err)
		}
		if strings.HasSuffix(p, ".png") {
			f, _ := os.Open(p)
			cfg, err := png.DecodeConfig(f)
			f.Close()
			if err != nil || cfg.Width < 400 {
				t.Errorf("%s: %v %+v", p, err, cfg)
			}
		}
	}
	back, err := results.ReadJSONFile(filepath.Join(dir, "out", JSONFile))
	if err != nil || len(back.Results) != len(rep.Results) {
		t.Fatalf("ReadJSONFile: %v", err)
	}
	// Plots regenerated from the JSON alone.
	ps, err := WritePlots(t.TempDir(), back)
	if err != nil || len(ps) != 2 {
		t.Errorf("WritePlots from JSON: %v %v", ps, err)
	}
	// Native only: latency plot, no ratio plot, no error.
	nat := &results.Report{Meta: rep.Meta}
	for _, r := range rep.Results {
		if r.Variant == results.VariantNative {
			nat.Results = append(nat.Results, r)
		}
	}
	ps, err = WritePlots(t.TempDir(), nat)
	if err != nil || len(ps) != 1 {
		t.Errorf("native-only plots: %v %v", ps, err)
	}
	if _, err := WritePlots(t.TempDir(), &results.Report{}); err == nil {
		t.Error("empty report: want error")
	}
}

func TestShellQuote(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"bin/dpmlbench", "-sizes", "4:64M:x4", "-leaders", "1,2,max"}, "bin/dpmlbench -sizes 4:64M:x4 -leaders 1,2,max"},
		{[]string{"a b", "it's", ""}, `'a b' 'it'\''s' ''`},
	} {
		if got := results.ShellQuote(tc.in); got != tc.want {
			t.Errorf("results.ShellQuote(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestFloorUS(t *testing.T) {
	// 64 MiB on 32 ranks at 150 GB/s: 2*64Mi*32 bytes = 4.29 GB -> 28.6 ms
	if got := results.FloorUS(64<<20, 32, 150); !near(got, 2*float64(64<<20)*32/150e9*1e6) || got < 28000 || got > 29000 {
		t.Errorf("FloorUS = %v", got)
	}
	if results.FloorUS(1, 1, 0) != 0 {
		t.Error("unknown bandwidth should give 0")
	}
}

func TestMetaHelpers(t *testing.T) {
	hosts := []string{"n2", "n1", "n2", "n1", "n3"}
	if got := DistinctHosts(hosts); !reflect.DeepEqual(got, []string{"n2", "n1", "n3"}) {
		t.Errorf("DistinctHosts = %v", got)
	}
	if got := HostCounts(hosts); got["n1"] != 2 || got["n3"] != 1 {
		t.Errorf("HostCounts = %v", got)
	}
	if c, _ := GitCommit("abc"); c != "abc" {
		t.Errorf("GitCommit override = %q", c)
	}
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{{"0-31\n", 32, true}, {"0", 1, true}, {"0-3,8,10-11", 7, true}, {"3-1", 0, false}, {"x", 0, false}} {
		if got, err := CountCPUList(tc.in); got != tc.want || (err == nil) != tc.ok {
			t.Errorf("CountCPUList(%q) = %d, %v", tc.in, got, err)
		}
	}
	if HostCPUs() < 1 {
		t.Errorf("HostCPUs = %d", HostCPUs())
	}
	t.Setenv("DPML_TEST_X", "1")
	if e := Env([]string{"DPML_TEST_"}); e["DPML_TEST_X"] != "1" || len(e) != 1 {
		t.Errorf("Env = %v", e)
	}
}

func TestMemBW(t *testing.T) {
	m := NewMemBWArrays(1 << 16)
	if n := m.Copy(); n != 16*(1<<13) || m.C[5] != 1 {
		t.Errorf("Copy: %d %v", n, m.C[5])
	}
	m.C[3] = 2
	if n := m.Triad(3); n != 24*(1<<13) || m.A[3] != 8 || m.A[4] != 5 {
		t.Errorf("Triad: %d %v %v", n, m.A[3], m.A[4])
	}
	c, tr, err := ThreadedMemBW(2, 1<<20, 2)
	if err != nil || c <= 0 || tr <= 0 {
		t.Errorf("ThreadedMemBW = %v %v %v", c, tr, err)
	}
	if _, _, err := ThreadedMemBW(0, 1, 1); err == nil {
		t.Error("0 threads: want error")
	}
	if GBs(2e9, 1) != 2 || GBs(1, 0) != 0 {
		t.Error("GBs")
	}
}

func TestProgressNil(t *testing.T) {
	var p *Progress
	p.Describe("x")
	p.Add(1)
	p.Done()
	if NewProgress(&bytes.Buffer{}, 10, false) != nil {
		t.Error("disabled progress should be nil")
	}
	var buf bytes.Buffer
	q := NewProgress(&buf, 2, true)
	q.Describe("4 native")
	q.Add(2)
	q.Done()
}

func TestWriteRatios(t *testing.T) {
	var buf bytes.Buffer
	WriteRatios(&buf, sampleReport())
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("want header, rule and 2 sizes:\n%s", buf.String())
	}
	// 4 B: native 20, best fixed l=1 k=1 (l=2 k=4 failed its check) 10,
	// auto 12 as pipelined l=2 k=2, floor 0.5.
	want := "| 4 | 20.00 | l=1 k=1 | 10.00 | 0.500 | pipelined l=2 k=2 | 12.00 | 0.600 | 1.200 | 0.50 |"
	if lines[2] != want {
		t.Errorf("4 B row:\n got %s\nwant %s", lines[2], want)
	}
	if !strings.HasPrefix(lines[3], "| 64K | 84.00 | l=2 k=4 | 31.00 | 0.369 | - | 44.00 | 0.524 | 1.419 | - |") {
		t.Errorf("64K row: %s", lines[3])
	}
}

// TestWriteNCCL: the standard table's columns from a report, computed
// here independently: 1 MiB in 100 us on 4 ranks is 10.49 GB/s algbw and
// 15.73 busbw; unchecked points say N/A; a skipped point is a comment.
func TestWriteNCCL(t *testing.T) {
	rep := &results.Report{Meta: results.Meta{WorldSize: 4, Type: "float32", Op: "sum"}, Results: []results.Result{
		{Bytes: 1 << 20, Count: 1 << 18, Variant: results.VariantNative, US: results.Summary{Median: 100}, Check: "ok"},
		{Bytes: 8, Count: 2, Variant: results.VariantAuto, US: results.Summary{Median: 4}},
		{Bytes: 16, Count: 4, Variant: results.VariantNative, Skipped: "no library"},
	}}
	var b strings.Builder
	WriteNCCL(&b, rep)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines, want 3 headers, 2 rows and the skipped point's comment:\n%s", len(lines), b.String())
	}
	f := strings.Fields(lines[5])
	want := []string{"1048576", "262144", "float32", "sum", "native", "100.00", "10.49", "15.73", "0"}
	if !slices.Equal(f, want) {
		t.Errorf("row %q, want %q", f, want)
	}
	if g := strings.Fields(lines[3]); g[len(g)-1] != "N/A" || g[0] != "8" {
		t.Errorf("unchecked row %q", g)
	}
	if lines[4] != "# 16 native: skipped: no library" {
		t.Errorf("skipped point: %q", lines[4])
	}
}
