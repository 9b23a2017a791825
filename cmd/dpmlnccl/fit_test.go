package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpmlgo/dpml/nccl"
)

const runHead = `# nccl_version=22803
# gpus=2
# gpu0=NVIDIA H200
# host=gpuhost
# date=2026-11-27T00:00:00Z
# dtype=float32
# op=sum
coll,bytes,variant,policy,comm,ranks,nodes,reps,batch,median_us,min_us,max_us,algbw_gbs,busbw_gbs,wrong,checked,check,tuner_calls,tuner_choice
`

func runCSV(t *testing.T, dir, name string, rows ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(runHead)
	for _, r := range rows {
		f := strings.Fields(r) // coll bytes variant median
		pol, comm, _ := strings.Cut(f[2], "@")
		fmt.Fprintf(&b, "%s,%s,%s,%s,%s,2,1,3,1,%s,%s,%s,1,1,0,10,ok,-1,-\n", f[0], f[1], f[2], pol, comm, f[3], f[3], f[3])
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFitCommand(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i, d := range []string{"110", "108", "106"} {
		files = append(files, runCSV(t, dir, fmt.Sprintf("r%d.csv", i),
			"allreduce 2097152 nccl@dflt "+d, "allreduce 2097152 nccl@32 100", "allreduce 4194304 nccl@dflt "+d, "allreduce 4194304 nccl@32 100",
			"allreduce 4096 nccl@dflt 10", "allreduce 4096 nccl@32 12"))
	}
	tablePath, md, atlas := filepath.Join(dir, "t.json"), filepath.Join(dir, "p.md"), filepath.Join(dir, "a.png")
	code, out, errs := run(append([]string{"fit", "-link", "nvlink", "-table", tablePath, "-md", md, "-atlas", atlas}, files...)...)
	if code != 0 {
		t.Fatalf("fit: %d %s", code, errs)
	}
	b, err := nccl.ReadBuiltin(strings.NewReader(out))
	if err != nil {
		t.Fatalf("fit output: %v\n%s", err, out)
	}
	if b.Key != (nccl.Machine{GPUs: 2, Nodes: 1, GPU: "NVIDIA H200", Link: "nvlink"}) || len(b.Ranges) != 1 ||
		b.Ranges[0] != (nccl.BuiltinRange{Coll: "allreduce", MinLog2: 21, MaxLog2: 22, Channels: 32, Evidence: b.Ranges[0].Evidence}) ||
		b.Provenance.NCCL != "2.28.3" || !strings.Contains(b.Provenance.Source, "r2.csv") {
		t.Errorf("built-in %+v", b)
	}
	for _, f := range []string{tablePath, md, atlas} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	if p, _ := os.ReadFile(md); !strings.Contains(string(p), "| allreduce | 2^21 | 108.00 | 32 | 100.00 | 1.080 | 1.060 | 3 | 32 |") {
		t.Errorf("picks:\n%s", p)
	}
	if code, _, _ := run("fit", files[0]); code != 2 {
		t.Errorf("fit without -link: exit %d, want 2", code)
	}
	other := runCSV(t, dir, "other.csv", "allreduce 4096 nccl@dflt 10", "allreduce 4096 nccl@32 12")
	os.WriteFile(other, []byte(strings.Replace(mustRead(t, other), "NVIDIA H200", "NVIDIA H100", 1)), 0o644)
	if code, _, errs := run("fit", "-link", "nvlink", files[0], other); code != 1 || !strings.Contains(errs, "one machine") {
		t.Errorf("mixed machines: %d %s", code, errs)
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCompareCommand(t *testing.T) {
	dir := t.TempDir()
	list := func(label string, rows ...[]string) string {
		var fs []string
		for i, r := range rows {
			fs = append(fs, runCSV(t, dir, fmt.Sprintf("%s%d.csv", label, i), r...))
		}
		return label + "=" + strings.Join(fs, ",")
	}
	dflt := list("default", []string{"allreduce 4096 nccl@dflt 10", "allreduce 2097152 nccl@dflt 110"},
		[]string{"allreduce 4096 nccl@dflt 10", "allreduce 2097152 nccl@dflt 100"},
		[]string{"allreduce 4096 nccl@dflt 10", "allreduce 2097152 nccl@dflt 105"})
	// good: 2 MiB median 100 -> ratio 105/100 = 1.05 (2097152 B / 100 us = 21.0 GB/s, x 2(n-1)/n = 1); 4 KiB 10.1 -> 0.990.
	good := list("good", []string{"allreduce 4096 plugin@dflt 10.1", "allreduce 2097152 plugin@dflt 100"},
		[]string{"allreduce 4096 plugin@dflt 10.1", "allreduce 2097152 plugin@dflt 101"},
		[]string{"allreduce 4096 plugin@dflt 10.1", "allreduce 2097152 plugin@dflt 99"})
	// bad: 4 KiB 10.5 -> 0.952; 2 MiB 104 -> 1.010 where the headroom is 1.08.
	bad := list("bad", []string{"allreduce 4096 plugin@dflt 10.5", "allreduce 2097152 plugin@dflt 104"},
		[]string{"allreduce 4096 plugin@dflt 10.5", "allreduce 2097152 plugin@dflt 104"},
		[]string{"allreduce 4096 plugin@dflt 10.5", "allreduce 2097152 plugin@dflt 104"})
	forced := runCSV(t, dir, "p0.csv", "allreduce 2097152 nccl@dflt 108", "allreduce 2097152 nccl@32 100", "allreduce 4096 nccl@dflt 10", "allreduce 4096 nccl@32 11")
	code, out, errs := run("compare", "-run", dflt, "-run", good, "-run", bad, "-forced", forced, "-md", filepath.Join(dir, "c.md"))
	if code != 0 {
		t.Fatalf("compare: %d %s", code, errs)
	}
	for _, w := range []string{
		"| allreduce | 2M | 1.080 | 20.0 | 21.0 (1.050) | 20.2 (1.010) |",
		"good vs default: MEETS",
		"bad vs default: MISSES", "below 0.98 at allreduce 4K (0.952)", "headroom not taken at allreduce 2M (1.010)",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("compare lacks %q:\n%s", w, out)
		}
	}
	if code, _, _ := run("compare", "-run", dflt); code != 2 {
		t.Errorf("one -run: exit %d, want 2", code)
	}
	two := runCSV(t, dir, "two.csv", "allreduce 4096 nccl@dflt 10", "allreduce 4096 plugin@dflt 10")
	if code, _, errs := run("compare", "-run", dflt, "-run", "x="+two); code != 1 || !strings.Contains(errs, "one per run file") {
		t.Errorf("two variants in a run file: %d %s", code, errs)
	}
}

// TestFitFloorCommand: fit writes the channel floor into the built-in
// data when the largest sizes show it, with its evidence in the picks, and
// says why not otherwise; -source and -machine go into the provenance,
// quoted in its command.
func TestFitFloorCommand(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i, d := range []string{"110", "108", "106"} {
		var rows []string
		for _, n := range []string{"67108864", "134217728", "268435456"} {
			rows = append(rows, "allreduce "+n+" nccl@dflt "+d, "allreduce "+n+" nccl@32 100", "allreduce "+n+" nccl@16 "+d)
		}
		files = append(files, runCSV(t, dir, fmt.Sprintf("r%d.csv", i), rows...))
	}
	md := filepath.Join(dir, "p.md")
	code, out, errs := run(append([]string{"fit", "-link", "nvlink", "-md", md, "-machine", "test box", "-source", "x.tgz: r*.csv"}, files...)...)
	if code != 0 {
		t.Fatalf("fit: %d %s", code, errs)
	}
	b, err := nccl.ReadBuiltin(strings.NewReader(out))
	if err != nil {
		t.Fatalf("fit output: %v\n%s", err, out)
	}
	if b.Floor == nil || b.Floor.Channels != 32 || b.Provenance.Machine != "test box" || b.Provenance.Source != "x.tgz: r*.csv" ||
		!strings.Contains(b.Provenance.Command, "-machine 'test box' -source 'x.tgz: r*.csv'") || !strings.Contains(b.Provenance.Measured, "channel floor 32") {
		t.Errorf("built-in %+v, floor %+v", b.Provenance, b.Floor)
	}
	if p := mustRead(t, md); !strings.Contains(p, "channel floor (minCTAs at communicator creation): 32 channels: median speedup over NCCL's default 1.080 to 1.080 (geometric mean 1.080) in the largest 3 buckets of allreduce (2^26..2^28)") {
		t.Errorf("picks:\n%s", p)
	}
	// The sweep of TestFitCommand: 32 channels lose at 4 KiB, one of the
	// three largest buckets there: no floor, and the reason.
	small := runCSV(t, dir, "s.csv", "allreduce 2097152 nccl@dflt 110", "allreduce 2097152 nccl@32 100", "allreduce 4194304 nccl@dflt 110",
		"allreduce 4194304 nccl@32 100", "allreduce 4096 nccl@dflt 10", "allreduce 4096 nccl@32 12")
	code, out, errs = run("fit", "-link", "nvlink", small)
	if b, err := nccl.ReadBuiltin(strings.NewReader(out)); code != 0 || err != nil || b.Floor != nil ||
		!strings.Contains(b.Provenance.Measured, "no channel floor: no forced count was at least 1 in every bucket") {
		t.Errorf("no floor: %d %s %v %+v", code, errs, err, b)
	}
}

// TestComparePaired: with -paired the ratio is the median of the per-run
// ratios of the variants of one process (FILE#VARIANT), which a slow
// process as a whole does not move.
func TestComparePaired(t *testing.T) {
	dir := t.TempDir()
	// Three processes, each timing both variants; the first is slow as a
	// whole. Per run the plugin is 1.053, 1.100 and 1.045 x faster (median
	// 1.053); the medians over runs, 11.5 and 11, give 1.045.
	var runs []string
	for i, t2 := range [][2]float64{{20, 19}, {11, 10}, {11.5, 11}} {
		runs = append(runs, runCSV(t, dir, fmt.Sprintf("p%d.csv", i),
			fmt.Sprintf("allreduce 4096 nccl@dflt %g", t2[0]), fmt.Sprintf("allreduce 4096 plugin@dflt %g", t2[1])))
	}
	spec := func(v string) string {
		var s []string
		for _, r := range runs {
			s = append(s, r+"#"+v)
		}
		return strings.Join(s, ",")
	}
	code, out, errs := run("compare", "-paired", "-run", "default="+spec("nccl@dflt"), "-run", "preload="+spec("plugin@dflt"))
	if code != 0 || !strings.Contains(out, "(1.053) |") || !strings.Contains(out, "paired") || !strings.Contains(out, "preload vs default: MEETS") {
		t.Errorf("paired: %d %s\n%s", code, errs, out)
	}
	// Unpaired, the same files give the ratio of the medians; a missing
	// variant and unequal run counts are errors.
	if code, out, _ := run("compare", "-run", "default="+spec("nccl@dflt"), "-run", "preload="+spec("plugin@dflt")); code != 0 || !strings.Contains(out, "(1.045)") {
		t.Errorf("unpaired: %d\n%s", code, out)
	}
	if code, _, errs := run("compare", "-run", "default="+runs[0]+"#nccl@8", "-run", "x="+runs[1]+"#plugin@dflt"); code != 1 || !strings.Contains(errs, "no variant nccl@8") {
		t.Errorf("missing variant: %d %s", code, errs)
	}
	if code, _, _ := run("compare", "-paired", "-run", "default="+spec("nccl@dflt"), "-run", "x="+runs[1]+"#plugin@dflt"); code != 2 {
		t.Errorf("-paired with 3 and 1 files: exit %d, want 2", code)
	}
}
