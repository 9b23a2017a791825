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
	common := []string{"-colls", "allreduce", "-min", "4K", "-max", "16M", "-step", "x2", "-reps", "3", "-warmup", "2", "-rep-us", "40"}
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
// with its overrides pointing the build at the fakes (the fake NCCL and
// CUDA as shared libraries, as the real ones, so that the preloaded plugin
// interposes NCCL's calls; the plugin's NVML at the fake one, naming the
// GPUs "NVIDIA H200"), and checks what it leaves: the passes, the fit, the
// preloaded runs with their channel floor, the comparisons and the tarball.
func TestDeviceScriptFake(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	for _, tool := range []string{"bash", "tar", "timeout", "awk"} {
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
	_, nvml, libs := buildFakes(t)
	fake, _ := filepath.Abs("testdata/fake")
	root, _ := filepath.Abs("../..")
	out := filepath.Join(dir, "out", "nccl2")
	cmd := exec.Command("bash", "bench/nccl/device.sh", out)
	cmd.Dir = root
	cmd.Env = append(cleanEnv(), "BIN="+bin, "NVCC=none", "CUDA_INC="+fake, "NCCL_INC="+fake,
		"SWEEP_LIBS=-L"+libs+" -Wl,-rpath,"+libs+" -lcudart -lnccl -ldl -lm",
		"SWEEP_MAX=4M", "CHANNELS=1 4 16 32", "LINK=nvlink", "DPML_NCCL_NVML="+nvml, "FAKE_NVML_NAME=NVIDIA H200",
		"REPS=3", "REP_US=200", "SMALL_MAX=64K", "SMALL_REPS=5", "SMALL_REP_US=200")
	log, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("device.sh: %v\n%s", err, log)
	}
	f, err := os.Open(out + ".tgz")
	if err != nil {
		t.Fatalf("no nccl2.tgz: %v\n%s", err, log)
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
	want := []string{"env.txt", "commands.txt", "build.log", "device.log", "channels.txt", "compare.md", "compare-paired.md",
		"fit/builtin.json", "fit/table.json", "fit/picks.md", "fit/atlas.png", "initcheck/rank/nccl.log", "initcheck/all/sweep.csv"}
	for k := 1; k <= 3; k++ {
		want = append(want, fmt.Sprintf("pass0/run%d/sweep.csv", k), fmt.Sprintf("pass0/run%d/sweep.txt", k), fmt.Sprintf("pass0/run%d/nccl.log", k))
		for _, l := range []string{"default", "builtin", "table", "comm32", "preload", "preload-table", "paired", "paired-table"} {
			want = append(want, fmt.Sprintf("pass2/%s-%d/sweep.csv", l, k))
		}
	}
	for _, name := range want {
		if _, ok := files["nccl2/"+name]; !ok {
			t.Errorf("nccl2.tgz has no %s", name)
		}
	}
	cmp := files["nccl2/compare.md"]
	for _, w := range []string{"table vs default: MEETS", "builtin vs default:", "comm32 vs default:", "preload vs default:",
		"preload-table vs default:", "| allgather | 4M |"} {
		if !strings.Contains(cmp, w) {
			t.Errorf("compare.md lacks %q:\n%s\nscript output:\n%s", w, cmp, log)
		}
	}
	for _, w := range []string{"## paired:", "paired vs default:", "## paired-table:", "paired-table vs default:", "paired: variants of one process"} {
		if !strings.Contains(files["nccl2/compare-paired.md"], w) {
			t.Errorf("compare-paired.md lacks %q:\n%s", w, files["nccl2/compare-paired.md"])
		}
	}
	// The preloaded processes created their communicators with the floor
	// of the built-in data, 32 channels, through every entry point; NCCL
	// alone, and NCCL alone in a preloaded process (policy off), with the
	// fake's 16.
	sections := map[string]string{}
	for _, sec := range strings.Split(files["nccl2/channels.txt"], "\n## ")[1:] {
		name, body, _ := strings.Cut(sec, "\n")
		sections[name] = body
	}
	for name, w := range map[string][]string{
		"pass2/default-1": {"16 coll channels"},
		"pass2/preload-1": {"32 coll channels", "libdpml-nccl-tuner: INFO ncclCommInitRankConfig, 2 ranks: minCTAs 32, maxCTAs 64 (built-in data"},
		"pass2/paired-1":  {"16 coll channels", "32 coll channels", "no channel floor (DPML_NCCL_POLICY=off"},
		"initcheck/rank":  {"32 coll channels", "INFO ncclCommInitRank, 2 ranks: minCTAs 32"},
		"initcheck/all":   {"32 coll channels", "INFO ncclCommInitAll, 2 ranks: minCTAs 32"},
		"pass2/comm32-1":  {"32 coll channels"},
		// The fake's table asks for few channels: its floor is small.
		"pass2/preload-table-1": {"INFO ncclCommInitRankConfig, 2 ranks: minCTAs", "(table "},
	} {
		for _, s := range w {
			if !strings.Contains(sections[name], s) {
				t.Errorf("channels.txt, %s: no %q:\n%s", name, s, sections[name])
			}
		}
	}
	if strings.Contains(sections["pass2/default-1"], "32 coll channels") || strings.Contains(sections["pass2/builtin-1"], "32 coll channels") {
		t.Errorf("a process without the preload has 32 channels:\n%s", files["nccl2/channels.txt"])
	}
	if p0 := files["nccl2/pass0/run1/sweep.csv"]; !strings.Contains(p0, "nccl@32") || strings.Contains(p0, "plugin_inits") {
		t.Error("pass 0 should run the forced-channel variants without the plugin")
	}
	// The built-in run found the seeded data through the fake NVML.
	sw, err := nccl.ReadSweep(strings.NewReader(files["nccl2/pass2/builtin-1/sweep.csv"]))
	if err != nil {
		t.Fatal(err)
	}
	h200 := builtinPolicy(t, 2)
	for _, r := range sw.Rows {
		c, _ := nccl.ParseColl(r.Coll)
		if want := h200.Decide(c, uint64(r.Bytes)).String(); r.TunerChoice != want {
			t.Errorf("builtin run: %s %d bytes: plugin answered %q, want %q", r.Coll, r.Bytes, r.TunerChoice, want)
		}
	}
	b, err := nccl.ReadBuiltin(strings.NewReader(files["nccl2/fit/builtin.json"]))
	if err != nil {
		t.Fatalf("fit/builtin.json: %v", err)
	}
	if b.Key.GPUs != 2 || b.Key.Link != "nvlink" || b.Key.GPU != "Fake GPU 0" {
		t.Errorf("fit/builtin.json key %+v", b.Key)
	}
	if !strings.Contains(files["nccl2/env.txt"], "link between the GPUs: nvlink") {
		t.Error("env.txt does not record the link")
	}
}

type testsRow struct {
	count             int64
	typ, redop, wrong string
	time, busbw       float64
}

// readTestsTable reads ncclsweep's sweep.txt (nccl-tests layout) into
// "COLL VARIANT BYTES" -> row.
func readTestsTable(t *testing.T, path string) map[string]testsRow {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]testsRow{}
	var coll, variant string
	for _, line := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(line, "# "); ok && strings.Contains(h, ", variant ") {
			coll, _, _ = strings.Cut(h, ",")
			_, v, _ := strings.Cut(h, "variant ")
			variant, _, _ = strings.Cut(v, ":")
			continue
		}
		f := strings.Fields(line)
		if len(f) != 8 || strings.HasPrefix(line, "#") {
			continue
		}
		var r testsRow
		var n int64
		var alg float64
		if _, err := fmt.Sscan(strings.Join(f, " "), &n, &r.count, &r.typ, &r.redop, &r.time, &alg, &r.busbw, &r.wrong); err != nil {
			t.Fatalf("%s: %q: %v", path, line, err)
		}
		out[fmt.Sprintf("%s %s %d", coll, variant, n)] = r
	}
	return out
}

func buildFakeNVML(t *testing.T, dir string) string {
	t.Helper()
	return gccBuild(t, dir, "libfakenvml.so", "-shared", "-fPIC", "testdata/fake/fakenvml.c")
}

// TestFakeConfigRules: the fake NCCL refuses the ncclConfig_t values NCCL
// 2.28.3 refuses (testdata/configtest.c lists them), so a sweep that
// builds such a config fails in CI as it did on the GPU machine.
func TestFakeConfigRules(t *testing.T) {
	dir := t.TempDir()
	exe := gccBuild(t, dir, "configtest", "-Itestdata/fake", "testdata/configtest.c", "testdata/fake/fakecuda.c", "testdata/fake/fakenccl.c", "-ldl")
	out, err := exec.Command(exe).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS configtest") {
		t.Fatalf("configtest: %v\n%s", err, out)
	}
}

// TestSweepChannelConfigs: every communicator setting the sweep offers
// passes the fake's config checks (minN sets maxCTAs too), and a library
// or header older than ncclConfig_t's channel fields is refused before
// anything runs.
func TestSweepChannelConfigs(t *testing.T) {
	dir := t.TempDir()
	exe := buildFakeSweep(t, dir)
	args := []string{"-colls", "allreduce", "-max", "64K", "-reps", "1", "-variants", "nccl@dflt,nccl@1,nccl@32,nccl@64,nccl@min8,nccl@min32"}
	runSweep(t, exe, nil, append(args, "-out", filepath.Join(dir, "ok"))...)
	sw := readCSV(t, filepath.Join(dir, "ok", "sweep.csv"))
	if len(sw.Variants()) != 6 {
		t.Errorf("variants %v", sw.Variants())
	}
	// The fake's channels follow the config: nccl@1 times like 1 channel.
	r, _ := sw.Row("nccl@1", 65536)
	if math.Abs(r.Median-fakeTime(65536, 1)) > 1e-3*r.Median {
		t.Errorf("nccl@1 at 64K: %g us, want %g (1 channel)", r.Median, fakeTime(65536, 1))
	}
	for _, c := range []struct {
		name string
		env  []string
		exe  string
		want string
	}{
		{"library 2.16", []string{"FAKE_NCCL_VERSION=21605"}, exe, "library 21605"},
		{"header 2.16", nil, gccBuild(t, dir, "ncclsweep216", "-DFAKE_NCCL_MINOR=16", "-Itestdata/fake", "../../cmd/ncclsweep/ncclsweep.c",
			"testdata/fake/fakecuda.c", "testdata/fake/fakenccl.c", "-ldl", "-lm"), "header 21603"},
	} {
		cmd := exec.Command(c.exe, append(args, "-out", filepath.Join(dir, "old"))...)
		cmd.Env = append(cleanEnv(), c.env...)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "forces channels") || !strings.Contains(string(out), c.want) {
			t.Errorf("%s: %v\n%s", c.name, err, out)
		}
		cmd = exec.Command(c.exe, "-colls", "allreduce", "-max", "64K", "-reps", "1", "-variants", "nccl@dflt", "-out", filepath.Join(dir, "old"))
		cmd.Env = append(cleanEnv(), c.env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s, default communicator only: %v\n%s", c.name, err, out)
		}
	}
}

// TestSweepCollectives checks the sweep's three collectives on 2, 3 and 4
// fake GPUs against independent arithmetic: the bus bandwidth from the
// row's own bytes and median with nccl-tests' factors, every result
// checked and right, and the nccl-tests table carrying the same numbers;
// then a fake NCCL that corrupts one element of every allgather must show
// up as #wrong there and nowhere else, and fail the run.
func TestSweepCollectives(t *testing.T) {
	dir := t.TempDir()
	exe := buildFakeSweep(t, dir)
	for _, gpus := range []int{2, 3, 4} {
		out := filepath.Join(dir, fmt.Sprint(gpus))
		runSweep(t, exe, []string{fmt.Sprintf("FAKE_CUDA_GPUS=%d", gpus)}, "-max", "32M", "-reps", "1", "-variants", "nccl@dflt,nccl@8", "-out", out)
		sw := readCSV(t, filepath.Join(out, "sweep.csv"))
		if got := strings.Join(sw.Colls(), ","); got != "allreduce,reducescatter,allgather" {
			t.Errorf("%d GPUs: collectives %s", gpus, got)
		}
		tab := readTestsTable(t, filepath.Join(out, "sweep.txt"))
		for _, r := range sw.Rows {
			f := float64(gpus-1) / float64(gpus)
			if r.Coll == "allreduce" {
				f *= 2
			}
			bus := float64(r.Bytes) / (r.Median * 1e-6) / 1e9 * f
			if r.Ranks != gpus || r.Bytes%int64(4*gpus) != 0 || math.Abs(r.BusBW-bus) > 1e-3*bus+1e-3 {
				t.Errorf("%d GPUs: %s %d bytes: ranks %d, busbw %g, want %g", gpus, r.Coll, r.Bytes, r.Ranks, r.BusBW, bus)
			}
			n := r.Bytes / 4
			if r.Coll == "reducescatter" {
				n /= int64(gpus)
			}
			wantChecked := n * int64(gpus) // every element up to 4 Mi per GPU
			if n > 4<<20 {
				wantChecked = 256 * 4096 * int64(gpus)
			}
			if r.Wrong != 0 || r.Check != "ok" || r.Checked != wantChecked {
				t.Errorf("%d GPUs: %s %d bytes: wrong %d, checked %d (want %d)", gpus, r.Coll, r.Bytes, r.Wrong, r.Checked, wantChecked)
			}
			redop := "sum"
			if r.Coll == "allgather" {
				redop = "none"
			}
			got, ok := tab[fmt.Sprintf("%s %s %d", r.Coll, r.Variant, r.Bytes)]
			if !ok || got.count != r.Bytes/4 || got.typ != "float" || got.redop != redop || got.wrong != "0" ||
				math.Abs(got.time-r.Median) > 0.006 || math.Abs(got.busbw-r.BusBW) > 0.006 {
				t.Errorf("%d GPUs: sweep.txt row of %s %s %d: %+v (found %v), the CSV row %+v", gpus, r.Coll, r.Variant, r.Bytes, got, ok, r)
			}
		}
	}
	cmd := exec.Command(exe, "-max", "16M", "-reps", "1", "-variants", "nccl@dflt", "-out", filepath.Join(dir, "bad"))
	cmd.Env = append(cleanEnv(), "FAKE_NCCL_CORRUPT=allgather")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "RESULTS WRONG") {
		t.Fatalf("corrupted allgather: %v\n%s", err, out)
	}
	sw := readCSV(t, filepath.Join(dir, "bad", "sweep.csv"))
	for _, r := range sw.Rows {
		want := int64(0)
		if r.Coll == "allgather" {
			want = 1
		}
		if r.Wrong != want || (want == 1) != (r.Check == "fail") {
			t.Errorf("corrupted allgather: %s %d bytes: wrong %d, check %s", r.Coll, r.Bytes, r.Wrong, r.Check)
		}
	}
}

// TestTunerABIVersions loads the plugin through the fake NCCL's loader as
// NCCLs knowing tuner versions 4 to 7 would (the newest symbol they know
// first) and checks that each version takes effect: the fixed answer 8
// reaches every collective.
func TestTunerABIVersions(t *testing.T) {
	_, lib := buildPlugin(t)
	dir := t.TempDir()
	exe := buildFakeSweep(t, dir)
	for v := 4; v <= 7; v++ {
		out := filepath.Join(dir, fmt.Sprint(v))
		cmd := exec.Command(exe, "-max", "64K", "-reps", "1", "-variants", "8@dflt", "-out", out)
		cmd.Env = append(cleanEnv(), "NCCL_TUNER_PLUGIN="+lib, fmt.Sprintf("FAKE_NCCL_TUNER_ABI=%d", v))
		b, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(b), fmt.Sprintf("Using dpml (v%d)", v)) {
			t.Fatalf("tuner ABI v%d: %v\n%s", v, err, b)
		}
		sw := readCSV(t, filepath.Join(out, "sweep.csv"))
		for _, r := range sw.Rows {
			if r.TunerChoice != "8" || r.TunerCalls <= 0 {
				t.Errorf("v%d: %s %d bytes: choice %q, %d calls", v, r.Coll, r.Bytes, r.TunerChoice, r.TunerCalls)
			}
		}
	}
}

// builtinPolicy is the plugin's policy from the built-in data for gpus
// NVIDIA H200 over NVLink on one node (what the fake NVML describes).
func builtinPolicy(t *testing.T, gpus int) *nccl.Policy {
	t.Helper()
	p, err := nccl.New(nccl.Settings{Mode: nccl.ModeAuto, GPU: "NVIDIA H200", Link: "nvlink"}, nccl.Layout{Ranks: gpus, Nodes: 1})
	if err != nil || !strings.Contains(p.Source, "built-in data") {
		t.Fatalf("built-in data for %d x H200: %v (%s)", gpus, err, p.Source)
	}
	return p
}

// TestBuiltinByNVML: without a table the plugin answers from its built-in
// data when NVML (here the fake) names a machine it has data for, and
// leaves NCCL's default for any other machine.
func TestBuiltinByNVML(t *testing.T) {
	_, lib := buildPlugin(t)
	dir := t.TempDir()
	exe := buildFakeSweep(t, dir)
	nvml := buildFakeNVML(t, dir)
	for _, c := range []struct {
		name string
		env  []string
		has  bool
	}{
		{"2 x H200 NVLink", []string{"FAKE_NVML_NAME=NVIDIA H200"}, true},
		{"2 x H200 PCIe", []string{"FAKE_NVML_NAME=NVIDIA H200", "FAKE_NVML_NVLINK=0"}, false},
		{"2 x A100", []string{"FAKE_NVML_NAME=NVIDIA A100-SXM4-80GB"}, false},
		{"mixed models", []string{"FAKE_NVML_NAME=NVIDIA H200", "FAKE_NVML_NAME1=NVIDIA A100-SXM4-80GB"}, false},
		{"NVML fails", []string{"FAKE_NVML_NAME=NVIDIA H200", "FAKE_NVML_FAIL=1"}, false},
		{"overridden", []string{"FAKE_NVML_NAME=NVIDIA A100-SXM4-80GB", "DPML_NCCL_GPU=NVIDIA H200", "DPML_NCCL_LINK=nvlink"}, true},
	} {
		out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
		runSweep(t, exe, append([]string{"NCCL_TUNER_PLUGIN=" + lib, "DPML_NCCL_NVML=" + nvml}, c.env...),
			"-min", "1M", "-max", "4M", "-reps", "1", "-variants", "plugin@dflt", "-out", out)
		sw := readCSV(t, filepath.Join(out, "sweep.csv"))
		h200 := builtinPolicy(t, 2)
		for _, r := range sw.Rows {
			want := "native"
			if coll, _ := nccl.ParseColl(r.Coll); c.has {
				want = h200.Decide(coll, uint64(r.Bytes)).String()
			}
			if r.TunerChoice != want {
				t.Errorf("%s: %s %d bytes: plugin answered %q, want %q", c.name, r.Coll, r.Bytes, r.TunerChoice, want)
			}
		}
	}
}

// TestSweepSmallSizes: sizes up to -small-max take -small-reps samples of
// -small-rep-us (the CSV's reps column says how many), the others -reps;
// -init rank and -init all create the default communicators through
// ncclCommInitRank and ncclCommInitAll, and refuse variants that need a
// config.
func TestSweepSmallSizes(t *testing.T) {
	dir := t.TempDir()
	exe := buildFakeSweep(t, dir)
	runSweep(t, exe, nil, "-colls", "allreduce,allgather", "-max", "64K", "-reps", "3", "-small-max", "16K", "-small-reps", "9",
		"-small-rep-us", "300", "-variants", "nccl@dflt,nccl@8", "-out", filepath.Join(dir, "s"))
	sw := readCSV(t, filepath.Join(dir, "s", "sweep.csv"))
	for _, r := range sw.Rows {
		want := 3
		if r.Bytes <= 16<<10 {
			want = 9
		}
		if r.Reps != want {
			t.Errorf("%s %s %d bytes: %d samples, want %d", r.Coll, r.Variant, r.Bytes, r.Reps, want)
		}
	}
	if sw.Meta["small_max"] != "16384" || sw.Meta["small_reps"] != "9" || sw.Meta["small_rep_us"] != "300" || sw.Meta["init"] != "config" {
		t.Errorf("meta %v", sw.Meta)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "s", "sweep.txt")); !strings.Contains(string(b), "median of 3 samples (9 up to 16384 bytes)") {
		t.Errorf("sweep.txt header:\n%s", b)
	}
	for _, init := range []string{"rank", "all"} {
		out := filepath.Join(dir, init)
		runSweep(t, exe, nil, "-colls", "allreduce", "-max", "8K", "-reps", "1", "-init", init, "-variants", "nccl@dflt", "-out", out)
		if sw := readCSV(t, filepath.Join(out, "sweep.csv")); sw.Meta["init"] != init || len(sw.Rows) != 2 {
			t.Errorf("-init %s: meta %v, %d rows", init, sw.Meta, len(sw.Rows))
		}
		cmd := exec.Command(exe, "-colls", "allreduce", "-max", "8K", "-init", init, "-variants", "nccl@8", "-out", out)
		cmd.Env = cleanEnv()
		if b, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(b), "only -init config passes a config") {
			t.Errorf("-init %s with nccl@8: %v\n%s", init, err, b)
		}
	}
}
