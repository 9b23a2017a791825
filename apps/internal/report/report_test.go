package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func res(app string, procs int, layout, be string, total, ar float64) Result {
	return Result{App: app, Procs: procs, Layout: layout, Backend: be, TotalSec: total, AllreduceSec: ar,
		Phases: map[string]float64{"refine": total / 2}}
}

func TestRowsAndTable(t *testing.T) {
	rs := []Result{
		res("hpcg", 32, "4x8", "dpml-l8", 9, 1),
		res("hpcg", 32, "4x8", "native", 10, 2),
		res("hpcg", 32, "4x8", "dpml", 8, 0.5),
		res("hpcg", 32, "4x8", "dpml-l2", 9.5, 1.5),
		res("hpcg", 32, "4x8", "native", 12, 4), // second run: median 11, 3
		res("hpcg", 32, "4x8", "native", 11, 3),
		res("miniamr", 32, "1x32", "dpml", 5, 1),
		res("hpcg", 32, "1x32", "native", 7, 1),
	}
	rows := Rows(rs, "refine")
	var order []string
	for _, r := range rows {
		order = append(order, r.App+"/"+r.Layout+"/"+r.Backend)
	}
	want := "hpcg/1x32/native hpcg/4x8/native hpcg/4x8/dpml hpcg/4x8/dpml-l2 hpcg/4x8/dpml-l8 miniamr/1x32/dpml"
	if got := strings.Join(order, " "); got != want {
		t.Fatalf("order:\n got %s\nwant %s", got, want)
	}
	nat, dp := rows[1], rows[2]
	if nat.Runs != 3 || nat.TotalSec != 11 || nat.AllreduceSec != 3 || nat.Speedup != 1 {
		t.Errorf("native row %+v", nat)
	}
	if dp.Speedup != 11.0/8 || dp.AllreduceSpeedup != 6 || dp.Share != 0.5/8 || dp.PhaseSpeedup != 11.0/8 {
		t.Errorf("dpml row %+v", dp)
	}
	if rows[5].Speedup != 0 {
		t.Errorf("no native baseline, but speedup %v", rows[5].Speedup)
	}
	txt := Table(rows, Text, "refine")
	if !strings.Contains(txt, "1.375x") || !strings.Contains(txt, "refine speedup") || !strings.Contains(txt, "6.2%") {
		t.Errorf("text table:\n%s", txt)
	}
	md := Table(rows, Markdown, "")
	if !strings.HasPrefix(md, "| app | procs |") || strings.Count(md, "\n") != len(rows)+2 {
		t.Errorf("markdown table:\n%s", md)
	}
	csv := Table(rows, CSV, "")
	if !strings.Contains(csv, "hpcg,32,4x8,dpml,1,8.0000,0.5000,6.2,1.375,6.000") {
		t.Errorf("csv:\n%s", csv)
	}
}

func TestWriteLoad(t *testing.T) {
	dir := t.TempDir()
	r := res("hpcg", 4, "2x2", "native", 1, 0.1)
	r.Output = map[string]any{"iterations": 50}
	if err := Write(filepath.Join(dir, "a.json"), &r); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "other.json"), []byte(`{"x": 1}`), 0o644)
	rs, skipped, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Backend != "native" || rs[0].TotalSec != 1 || len(skipped) != 1 {
		t.Fatalf("loaded %+v, skipped %v", rs, skipped)
	}
}

func TestHashFloats(t *testing.T) {
	a := HashFloats([]float64{1, 2, 3})
	if a != HashFloats([]float64{1, 2, 3}) || a == HashFloats([]float64{1, 2, 3.0000000000000004}) {
		t.Error("hash does not follow the bits")
	}
}
