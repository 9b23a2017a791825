package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpmlgo/dpml/costmodel"
)

const csvHead = `# nccl_version=22803
# gpus=2
# gpu0=NVIDIA H200
bytes,variant,policy,comm,ranks,nodes,reps,batch,median_us,min_us,max_us,algbw_gbs,busbw_gbs,check,tuner_calls,tuner_choice
`

func writeFile(t *testing.T, name, s string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func run(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := mainStatus(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestReport(t *testing.T) {
	in := writeFile(t, "sweep.csv", csvHead+
		"4096,nccl@dflt,nccl,dflt,2,1,5,10,10,9,11,0.4,0.4,ok,0,-\n"+
		"4096,plugin@min32,plugin,min32,2,1,5,10,10.5,9,11,0.39,0.39,ok,20,native\n"+
		"1048576,nccl@dflt,nccl,dflt,2,1,5,10,100,9,11,10,10,ok,0,-\n"+
		"1048576,plugin@min32,plugin,min32,2,1,5,10,80,9,11,13,13,ok,20,16\n"+
		"1048576,8@min32,8,min32,2,1,5,10,90,9,11,11,11,fail,20,8\n")
	code, out, errs := run("report", "-in", in)
	if code != 0 {
		t.Fatalf("report: %d %s", code, errs)
	}
	for _, want := range []string{"plugin@min32 vs nccl@dflt: MISSES >= 0.98", "below at 4K (0.952)", "faster by > 2% at 1M (1.250)", "13.0 (1.25) /16", "RESULT CHECKS FAILED: 8@min32 at 1M"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if code, _, errs := run("report", "-in", in, "-base", "nccl@9"); code != 1 || !strings.Contains(errs, "no rows of the base variant") {
		t.Errorf("unknown base: %d %s", code, errs)
	}
}

func TestTableAndShow(t *testing.T) {
	in := writeFile(t, "sweep.csv", csvHead+
		"1048576,nccl@dflt,nccl,dflt,2,1,5,10,100,9,11,10,10,ok,0,-\n"+
		"1048576,nccl@min32,nccl,min32,2,1,5,10,100,9,11,10,10,ok,0,native\n"+
		"1048576,16@min32,16,min32,2,1,5,10,80,9,11,13,13,ok,20,16\n")
	dir := t.TempDir()
	tablePath := filepath.Join(dir, "t.json")
	code, out, errs := run("table", "-in", in, "-out", tablePath, "-atlas", filepath.Join(dir, "atlas.png"), "-md", filepath.Join(dir, "p.md"))
	if code != 0 || !strings.Contains(out, "| 1M | 10.5 | 10.5 | 16 | 13.1 | 16 | 13.1 | 1.250 |") {
		t.Fatalf("table: %d %s\n%s", code, errs, out)
	}
	b, err := os.ReadFile(tablePath)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := costmodel.ReadTable(bytes.NewReader(b))
	if err != nil || len(tb.Entries) != 1 || tb.Entries[0].Leaders != 16 || tb.Entries[0].Coll != "allreduce" {
		t.Fatalf("table %+v, %v", tb, err)
	}
	for _, f := range []string{"atlas.png", "p.md"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	code, out, _ = run("show", "-table", tablePath, "-coll", "allreduce")
	if code != 0 || !strings.Contains(out, "1M         16") || !strings.Contains(out, "512K       native") {
		t.Errorf("show: %d\n%s", code, out)
	}
	if code, _, _ := run("table", "-in", in); code != 2 {
		t.Errorf("table without -out: exit %d, want 2", code)
	}
	if code, _, _ := run("nope"); code != 2 {
		t.Errorf("unknown subcommand: exit %d", code)
	}
}
