package main

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpmlgo/dpml/nccl"
)

// The fake NCCL's synthetic time and channel choice (testdata/fake/fakenccl.c).
func fakeTime(n int64, c int) float64 {
	return 8 + 0.3*float64(c) + float64(n)/(float64(min(c, 17))*20000)
}

func fakeDefault(n int64, comm int) int { return int(max(1, min(n/8192, int64(comm)))) }

func buildFakeSweep(t *testing.T, dir string) string {
	t.Helper()
	return gccBuild(t, dir, "ncclsweep", "-Itestdata/fake", "../../cmd/ncclsweep/ncclsweep.c",
		"testdata/fake/fakecuda.c", "testdata/fake/fakenccl.c", "-ldl", "-lm")
}

func runSweep(t *testing.T, exe string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(cleanEnv(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ncclsweep %v: %v\n%s", args, err, out)
	}
}

func readCSV(t *testing.T, path string) *nccl.Sweep {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sw, err := nccl.ReadSweep(f)
	if err != nil {
		t.Fatal(err)
	}
	return sw
}

// TestSweepFake runs the chain of the device script on fakes: the sweep
// tool built against fake CUDA and NCCL (which load the plugin as NCCL
// 2.28.3 does), a first sweep with fixed per-call answers, the table
// BuildTable makes of it, and a second sweep with the plugin reading that
// table. The fake's time is analytic, so the table must hold its optimum
// and the plugin must match or beat NCCL's default at every size.
func TestSweepFake(t *testing.T) {
	_, lib := buildPlugin(t)
	dir := t.TempDir()
	exe := buildFakeSweep(t, dir)
	chans := []int{1, 2, 4, 8, 16, 24, 32}
	vars := []string{"nccl@dflt", "nccl@min32"}
	for _, c := range chans {
		vars = append(vars, fmt.Sprintf("%d@min32", c))
	}
	vars = append(vars, "8/ring/simple@min32", "model@min32", "nccl@8")
	common := []string{"-min", "4K", "-max", "16M", "-step", "x2", "-reps", "3", "-warmup", "2", "-rep-us", "40", "-check"}
	runSweep(t, exe, []string{"NCCL_TUNER_PLUGIN=" + lib}, append(common, "-variants", strings.Join(vars, ","), "-out", filepath.Join(dir, "p1"))...)
	sw := readCSV(t, filepath.Join(dir, "p1", "sweep.csv"))
	if want := fmt.Sprint(2 * len(vars)); sw.Meta["plugin_inits"] != want || sw.Meta["plugin_failed_inits"] != "0" {
		t.Errorf("plugin inits %q (want %s: one per variant and GPU), failed %q", sw.Meta["plugin_inits"], want, sw.Meta["plugin_failed_inits"])
	}
	for _, r := range sw.Rows {
		if r.Check != "ok" || r.TunerCalls <= 0 {
			t.Fatalf("row %+v: check %s, %d tuner calls", r, r.Check, r.TunerCalls)
		}
		d, fixed := r.Fixed()
		switch {
		case fixed && r.TunerChoice != d.String():
			t.Errorf("%s at %d: the plugin answered %q", r.Variant, r.Bytes, r.TunerChoice)
		case r.Policy == "nccl" && r.TunerChoice != "native":
			t.Errorf("%s at %d: the plugin answered %q, want nothing", r.Variant, r.Bytes, r.TunerChoice)
		}
		// The fake's clock: the row's median is the analytic time.
		c := fakeDefault(r.Bytes, 16)
		switch {
		case fixed:
			c = d.Channels
		case r.Comm == "min32":
			c = fakeDefault(r.Bytes, 32)
		case r.Comm == "8":
			c = fakeDefault(r.Bytes, 8)
		}
		if r.Policy != "model" && math.Abs(r.Median-fakeTime(r.Bytes, c)) > 1e-3*r.Median {
			t.Errorf("%s at %d: median %g us, the fake's time for %d channels is %g", r.Variant, r.Bytes, r.Median, c, fakeTime(r.Bytes, c))
		}
	}

	tb, picks, err := nccl.BuildTable(sw, nccl.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(picks) != 13 {
		t.Fatalf("%d picks, want one per size", len(picks))
	}
	for _, p := range picks {
		n := p.Sizes[0]
		native := fakeTime(n, fakeDefault(n, 32))
		best, bt := 0, math.Inf(1)
		for _, c := range chans {
			if tc := fakeTime(n, c); tc < bt {
				best, bt = c, tc
			}
		}
		want := nccl.Native
		if bt < native*0.97 || (bt < native && native > fakeTime(n, fakeDefault(n, 16))) {
			want = nccl.Decision{Channels: best, Algo: -1, Proto: -1}
		}
		// 8/ring/simple times like 8 in the fake: it wins only where 8 is best, as the first measured.
		if p.Choice != want && !(p.Choice == nccl.Decision{Channels: 8, Algo: nccl.AlgoRing, Proto: nccl.ProtoSimple} && want.Channels == 8) {
			t.Errorf("%d bytes: table %v, the fake's optimum is %v (native %g us, best %d channels %g us)", n, p.Choice, want, native, best, bt)
		}
	}
	tablePath := filepath.Join(dir, "table.json")
	writeTable(t, tablePath, tb)

	runSweep(t, exe, []string{"NCCL_TUNER_PLUGIN=" + lib, "DPML_NCCL_TABLE=" + tablePath},
		append(common, "-variants", "nccl@dflt,plugin@min32,plugin@dflt", "-out", filepath.Join(dir, "p2"))...)
	sw2 := readCSV(t, filepath.Join(dir, "p2", "sweep.csv"))
	gain := false
	for _, n := range sw2.Sizes() {
		for _, v := range []string{"plugin@min32", "plugin@dflt"} {
			s, ok := sw2.Speedup(v, nccl.DefaultVariant, n)
			if !ok || s < 0.98 {
				t.Errorf("%s at %d bytes: %.3f x NCCL's default, want >= 0.98", v, n, s)
			}
			gain = gain || s > 1.05
		}
		r, _ := sw2.Row("plugin@min32", n)
		var want nccl.Decision
		for _, p := range picks {
			if p.Log2 == nccl.Bucket(uint64(n)) {
				want = p.Choice
			}
		}
		if r.TunerChoice != want.String() {
			t.Errorf("plugin@min32 at %d bytes answered %q, the table says %v", n, r.TunerChoice, want)
		}
	}
	if !gain {
		t.Error("the plugin with the table is nowhere 5% faster than NCCL's default, where the fake has headroom")
	}
}

// TestDeviceScriptFake runs bench/nccl/device.sh as on the GPU machine,
// with its overrides pointing the build at the fakes, and checks the
// tarball it leaves.
func TestDeviceScriptFake(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	for _, tool := range []string{"bash", "tar", "timeout"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	_, lib := buildPlugin(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	if b, err := os.ReadFile(lib); err != nil || os.WriteFile(filepath.Join(bin, "libdpml-nccl-tuner.so"), b, 0o755) != nil {
		t.Fatal("copying the plugin:", err)
	}
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "dpmlnccl"), "../../cmd/dpmlnccl").CombinedOutput(); err != nil {
		t.Fatalf("building dpmlnccl: %v\n%s", err, out)
	}
	fake, _ := filepath.Abs("testdata/fake")
	root, _ := filepath.Abs("../..")
	out := filepath.Join(dir, "out")
	cmd := exec.Command("bash", "bench/nccl/device.sh", bin)
	cmd.Dir = root
	cmd.Env = append(cleanEnv(), "OUT="+out, "NVCC=none", "CUDA_INC="+fake, "NCCL_INC="+fake,
		"SWEEP_EXTRA_SRCS="+fake+"/fakecuda.c "+fake+"/fakenccl.c", "SWEEP_LIBS=-ldl -lm",
		"SWEEP_MAX=4M", "SWEEP_REPS=3", "SWEEP_CHANNELS=1 4 16 32")
	log, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("device.sh: %v\n%s", err, log)
	}
	f, err := os.Open(filepath.Join(out, "nccl.tgz"))
	if err != nil {
		t.Fatalf("no nccl.tgz: %v\n%s", err, log)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name] = string(b)
	}
	for _, name := range []string{"nccl/env.txt", "nccl/build.log", "nccl/pass0/sweep.csv", "nccl/pass1/sweep.csv", "nccl/pass2/sweep.csv",
		"nccl/table.json", "nccl/picks.md", "nccl/atlas.png", "nccl/report-pass2.md", "nccl/busbw-pass2.png", "nccl/device.log"} {
		if _, ok := files[name]; !ok {
			t.Errorf("nccl.tgz has no %s", name)
		}
	}
	if r := files["nccl/report-pass2.md"]; !strings.Contains(r, "plugin@min32 vs nccl@dflt: meets") || !strings.Contains(r, "plugin@dflt vs nccl@dflt: meets") {
		t.Errorf("pass-2 report:\n%s\nscript output:\n%s", r, log)
	}
	if !strings.Contains(files["nccl/pass0/sweep.csv"], "nccl@32") || strings.Contains(files["nccl/pass0/sweep.csv"], "plugin_inits") {
		t.Error("pass 0 should run the forced-channel variants without the plugin")
	}
}
