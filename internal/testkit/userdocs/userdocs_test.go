package userdocs

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpmlgo/dpml/internal/tools/launch"
)

// The test binary doubles as dpmlrun (bin/dpmlrun runs it with
// launch.MainArg), as in cmd/dpmlrun's tests.
func TestMain(m *testing.M) {
	launch.Dispatch(os.Args)
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// root is the repository's root, from this package's directory.
const root = "../../.."

// block is a fenced block of a markdown file that a readme-test comment
// marks.
type block struct {
	kind string // "file" or "run"
	name string // the file's name (kind "file")
	lang string // the fence's language
	text string
	line int // of the fence, 1-based
}

var (
	markRE  = regexp.MustCompile(`^<!-- readme-test: (file (\S+)|run) -->$`)
	fenceRE = regexp.MustCompile("^```(\\w*)$")
)

// blocks returns the marked blocks of a markdown text. A mark must be
// followed by a fenced block on the next line.
func blocks(md string) ([]block, error) {
	lines := strings.Split(md, "\n")
	var out []block
	for i := 0; i < len(lines); i++ {
		m := markRE.FindStringSubmatch(lines[i])
		if m == nil {
			if strings.Contains(lines[i], "readme-test") {
				return nil, fmt.Errorf("line %d: malformed mark %q", i+1, lines[i])
			}
			continue
		}
		b := block{kind: "run", line: i + 2}
		if m[2] != "" {
			b.kind, b.name = "file", m[2]
		}
		if i+1 >= len(lines) {
			return nil, fmt.Errorf("line %d: a mark with no block after it", i+1)
		}
		f := fenceRE.FindStringSubmatch(lines[i+1])
		if f == nil {
			return nil, fmt.Errorf("line %d: a mark must be followed by a fence, found %q", i+1, lines[i+1])
		}
		b.lang = f[1]
		end := -1
		for j := i + 2; j < len(lines); j++ {
			if lines[j] == "```" {
				end = j
				break
			}
		}
		if end < 0 {
			return nil, fmt.Errorf("line %d: unclosed fence", i+2)
		}
		b.text = strings.Join(lines[i+2:end], "\n") + "\n"
		out = append(out, b)
		i = end
	}
	return out, nil
}

func TestBlocks(t *testing.T) {
	md := "intro\n<!-- readme-test: file a.c -->\n```c\nint x;\n```\ntext\n<!-- readme-test: run -->\n```sh\necho hi\necho there\n```\n```go\nnot marked\n```\n"
	got, err := blocks(md)
	if err != nil {
		t.Fatal(err)
	}
	want := []block{
		{kind: "file", name: "a.c", lang: "c", text: "int x;\n", line: 3},
		{kind: "run", lang: "sh", text: "echo hi\necho there\n", line: 8},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("blocks:\n got %+v\nwant %+v", got, want)
	}
	for _, bad := range []string{
		"<!-- readme-test: file a.c -->\ntext\n",        // no fence
		"<!-- readme-test: run -->\n```sh\necho\n",      // unclosed
		"<!-- readme-test: fil a.c -->\n```c\nx\n```\n", // malformed
		"<!-- readme-test: run -->",                     // at the end
	} {
		if _, err := blocks(bad); err == nil {
			t.Errorf("blocks(%q): no error", bad)
		}
	}
}

// readme returns the README's marked blocks: its files by name and its
// run blocks in order.
func readme(t *testing.T) (files map[string]string, runs []block) {
	t.Helper()
	md, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	bs, err := blocks(string(md))
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	files = map[string]string{}
	for _, b := range bs {
		if b.kind == "file" {
			files[b.name] = b.text
		} else {
			runs = append(runs, b)
		}
	}
	return files, runs
}

// built holds what the tests build once: bin/ with libdpml.so, dpmlx.h,
// dpml-info and a dpmlrun that runs this test binary as dpmlrun.
var built struct {
	once sync.Once
	dir  string // bin/ is dir/bin
	err  error
	skip string
}

func buildBin(t *testing.T) string {
	t.Helper()
	if launch.BuildFlavor != launch.OpenMPI {
		t.Skip("the README's commands are Open MPI's (mpicc, mpirun)")
	}
	built.once.Do(func() {
		if built.skip = launch.MissingForTests(launch.OpenMPI); built.skip != "" {
			return
		}
		dir, err := os.MkdirTemp("", "dpml-userdocs-")
		if err != nil {
			built.err = err
			return
		}
		built.dir = dir
		bin := filepath.Join(dir, "bin")
		if built.err = os.Mkdir(bin, 0o755); built.err != nil {
			return
		}
		start := time.Now()
		cmd := exec.Command(goBin(), "build", "-buildmode=c-shared", "-o", filepath.Join(bin, "libdpml.so"), "./dropin")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build -buildmode=c-shared ./dropin: %v\n%s", err, out)
			return
		}
		fmt.Fprintf(os.Stderr, "userdocs: built libdpml.so in %v\n", time.Since(start).Round(time.Millisecond))
		os.Remove(filepath.Join(bin, "libdpml.h"))
		h, err := os.ReadFile(filepath.Join(root, "dropin", "dpmlx.h"))
		if err == nil {
			err = os.WriteFile(filepath.Join(bin, "dpmlx.h"), h, 0o644)
		}
		if err != nil {
			built.err = err
			return
		}
		cmd = exec.Command(goBin(), "build", "-o", filepath.Join(bin, "dpml-info"), "./cmd/dpml-info")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build ./cmd/dpml-info: %v\n%s", err, out)
			return
		}
		// The README says mpicc and mpirun; where Debian's alternatives
		// could point them at MPICH, the commands get Open MPI's.
		shim := filepath.Join(dir, "shim")
		if built.err = os.Mkdir(shim, 0o755); built.err != nil {
			return
		}
		for name, flavored := range map[string]string{"mpicc": "mpicc.openmpi", "mpirun": "mpirun.openmpi"} {
			if path, err := exec.LookPath(flavored); err == nil {
				if built.err = os.Symlink(path, filepath.Join(shim, name)); built.err != nil {
					return
				}
			}
		}
		exe, err := os.Executable()
		if err != nil {
			built.err = err
			return
		}
		script := fmt.Sprintf("#!/bin/sh\nexec %q %s \"$@\"\n", exe, launch.MainArg)
		built.err = os.WriteFile(filepath.Join(bin, "dpmlrun"), []byte(script), 0o755)
	})
	if built.skip != "" {
		t.Skip(built.skip)
	}
	if built.err != nil {
		t.Fatal(built.err)
	}
	return filepath.Join(built.dir, "bin")
}

func goBin() string {
	g := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(g); err == nil {
		return g
	}
	return "go"
}

// mpiEnv lets Open MPI run as root and with more ranks than cores (the
// 2-core machines the tests run on), yielding while it waits.
var mpiEnv = []string{
	"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
	"OMPI_MCA_rmaps_base_oversubscribe=1", "OMPI_MCA_mpi_yield_when_idle=1",
}

// cleanEnv is the environment without DPML_* variables: the README's
// commands run as a new user's would, whatever the developer has set.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DPML_") {
			env = append(env, kv)
		}
	}
	return env
}

// workDir makes a directory holding files and a link bin -> the built bin/.
func workDir(t *testing.T, bin string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(bin, filepath.Join(dir, "bin")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runBlock runs a README run block with bash -e in dir and returns its
// stdout and stderr.
func runBlock(t *testing.T, dir string, b block, env ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command("bash", "-e", "-x", "-c", b.text)
	cmd.Dir = dir
	cmd.Env = append(append(cleanEnv(), mpiEnv...), env...)
	cmd.Env = append(cmd.Env, "PATH="+filepath.Join(built.dir, "shim")+string(os.PathListSeparator)+os.Getenv("PATH"))
	// A user's cache (machine profiles) of the test's own.
	cmd.Env = append(cmd.Env, "XDG_CACHE_HOME="+filepath.Join(dir, ".cache"))
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("README.md line %d: %v\nstdout:\n%s\nstderr:\n%s", b.line, err, o.String(), e.String())
		}
	case <-time.After(4 * time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("README.md line %d: still running after 4 minutes\nstdout:\n%s\nstderr:\n%s", b.line, o.String(), e.String())
	}
	return o.String(), e.String()
}

var sumRE = regexp.MustCompile(`(?m)^sum (\S+) \(want (\d+)\)`)

// checkSums checks that out has n "sum X (want Y)" lines, each with X = Y
// and Y the sum 1 + ... + ranks.
func checkSums(t *testing.T, out string, n, ranks int) {
	t.Helper()
	ms := sumRE.FindAllStringSubmatch(out, -1)
	if len(ms) != n {
		t.Errorf("%d result lines, want %d:\n%s", len(ms), n, out)
	}
	want := fmt.Sprint(ranks * (ranks + 1) / 2)
	for _, m := range ms {
		if m[1] != want || m[2] != want {
			t.Errorf("result line %q: want sum %s", m[0], want)
		}
	}
}

// TestReadmeC builds the README's C program and runs its commands as
// written: preloaded into the binary under mpirun, the same on dpmlrun's
// emulated nodes, and linked with -ldpml. Each run's ranks must have
// routed their call through the library (DPML_VERBOSE=1 counts).
func TestReadmeC(t *testing.T) {
	files, runs := readme(t)
	if _, ok := files["sum.c"]; !ok {
		t.Fatal("README.md has no block marked as sum.c")
	}
	var cRun *block
	for i := range runs {
		if strings.Contains(runs[i].text, "sum.c") {
			cRun = &runs[i]
		}
	}
	if cRun == nil {
		t.Fatal("README.md has no run block that builds sum.c")
	}
	bin := buildBin(t)
	dir := workDir(t, bin, map[string]string{"sum.c": files["sum.c"]})
	// sum.c's one call is on MPI_COMM_WORLD, which libdpml.so sets up
	// inside MPI_Init: the call runs the engine with the defaults.
	stdout, stderr := runBlock(t, dir, *cRun, "DPML_VERBOSE=1")
	runsOfSum := strings.Count(cRun.text, "./sum")
	if runsOfSum < 3 {
		t.Fatalf("the C run block runs the program %d times, want the preloaded, emulated and linked runs", runsOfSum)
	}
	checkSums(t, stdout, runsOfSum, 4)
	// Every rank of every run sets up DPML and routes its one call.
	if n := regexp.MustCompile(`(?m)^libdpml: rank \d+: routed 1 `).FindAllStringIndex(stderr, -1); len(n) != 4*runsOfSum {
		t.Errorf("%d ranks routed their call through libdpml.so, want %d:\n%s", len(n), 4*runsOfSum, stderr)
	}
}

// TestReadmeGo builds the README's Go program in a module of its own that
// requires this one (a replace directive to the working tree) and runs
// the README's commands for it on the emulated cluster.
func TestReadmeGo(t *testing.T) {
	files, runs := readme(t)
	prog, ok := files["main.go"]
	if !ok {
		t.Fatal("README.md has no block marked as main.go")
	}
	var goRun *block
	for i := range runs {
		if strings.Contains(runs[i].text, "go build") {
			goRun = &runs[i]
		}
	}
	if goRun == nil {
		t.Fatal("README.md has no run block that builds the Go program")
	}
	bin := buildBin(t)
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	// This module's requirements, so the build needs no network.
	gomod := regexp.MustCompile(`(?m)^module .*$`).ReplaceAllString(string(mod), "module hello") +
		"\nrequire github.com/dpmlgo/dpml v0.0.0\n\nreplace github.com/dpmlgo/dpml => " + abs + "\n"
	dir := workDir(t, bin, map[string]string{"main.go": prog, "go.mod": gomod, "go.sum": string(sum)})
	stdout, _ := runBlock(t, dir, *goRun, "GOPROXY=off", "GOFLAGS=-mod=mod -buildvcs=false", "CGO_ENABLED=1")
	ranks := 4
	if !strings.Contains(goRun.text, "-nodes 2 -ppn 2") {
		t.Fatalf("the Go run block does not run on 2 nodes of 2 ranks:\n%s", goRun.text)
	}
	checkSums(t, stdout, 1, ranks)
}

// TestReadmeSettings runs the README's dpml-info command: the setting it
// sets shows as coming from the environment, the others from their
// defaults.
func TestReadmeSettings(t *testing.T) {
	_, runs := readme(t)
	var info *block
	for i := range runs {
		if strings.Contains(runs[i].text, "dpml-info") {
			info = &runs[i]
		}
	}
	if info == nil {
		t.Fatal("README.md has no run block with dpml-info")
	}
	bin := buildBin(t)
	stdout, _ := runBlock(t, workDir(t, bin, nil), *info)
	for _, want := range []string{
		"\nDPML_LEADERS = 4 (environment; must be equal on all ranks)\n",
		"\nDPML_TIMEOUT = 60s (default; per rank)\n",
		"\nInternal and test-only variables",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("dpml-info printed no %q:\n%s", strings.TrimSpace(want), stdout)
		}
	}
}

// TestDocLinks: every relative link of the README and docs/*.md leads to
// a file or directory of the repository.
func TestDocLinks(t *testing.T) {
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	docs = append(docs, filepath.Join(root, "README.md"), filepath.Join(root, "bench", "results", "README.md"))
	linkRE := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, doc := range docs {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range linkRE.FindAllStringSubmatch(string(text), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(doc), target)); err != nil {
				t.Errorf("%s: link %s: %v", doc, m[1], err)
			}
		}
	}
}

// TestReproduceTables runs what the README's "Reproduce the tables"
// section points to, bench/cold/device.sh and bench/cold/summary.py, as a
// new user would on a small machine: the cold pattern (N = 10) on one
// node of 4 ranks and on 2 emulated nodes of 2, the defaults against
// DPML_TUNER=model, and on the first layout the fixed plans' cold pattern
// twice (FIXED), then the tables. Every run must end well (results
// checked by the client, which exits non-zero on a wrong element), and the
// summary must hold a table per layout with a ratio for every size and
// build, the best fixed plan per size, and the headline rows. Mutations: device.sh's emulated-node
// branch without -preload, or its library path made relative to the
// working directory again -> "libdpml.so not loaded".
func TestReproduceTables(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 (bench/cold/summary.py)")
	}
	bin := clientBin(t)
	out, cmds := deviceScript(t, []string{bin}, "LAYOUTS=1x4 2x2", "PATTERNS=cold10", "LAUNCHES=1", "WARM=0", "PROFILE=0", "PROBE=0",
		"DPMLRUN_ARGS=", "SIZES10=4:64K:x16", "SIZES100=4:64K:x16")
	if ends := regexp.MustCompile(`(?m)^rc=0 at `).FindAllIndex(cmds, -1); len(ends) != 6 {
		t.Fatalf("%d of 6 runs ended with status 0:\n%s", len(ends), cmds)
	}
	logs, _ := filepath.Glob(filepath.Join(out, "r", "*.log"))
	for _, l := range logs {
		// The client names the library it found: a wrong preload path
		// would time the MPI library against itself.
		if b, err := os.ReadFile(l); err != nil || !regexp.MustCompile(`(?m)^# libdpml: \S+ \(DPML-Go `).Match(b) {
			t.Errorf("%s: libdpml.so not loaded:\n%s", filepath.Base(l), b)
		}
	}
	sum := exec.Command("python3", filepath.Join(root, "bench/cold/summary.py"), filepath.Join(out, "r"), "headline")
	table, err := sum.CombinedOutput()
	if err != nil {
		t.Fatalf("summary.py: %v\n%s", err, table)
	}
	for _, lay := range []string{"1x4", "2x2"} {
		i := strings.Index(string(table), lay+", cold, back to back, N = 10:")
		if i < 0 {
			t.Fatalf("no %s table:\n%s", lay, table)
		}
		for _, size := range []string{"4", "64", "1K", "16K"} {
			row := regexp.MustCompile(`(?m)^\| ` + size + ` \| \d+\.\d\d \[\d+\.\d\d\] \| \d+\.\d\d \[\d+\.\d\d\] \|$`)
			if !row.Match(table[i:]) {
				t.Errorf("%s table: no row for %s bytes with the ratios of auto and model:\n%s", lay, size, table)
			}
		}
		if !strings.Contains(string(table), "**"+lay+"**") || !strings.Contains(string(table), "| cold b2b, N=10 | 4 | ") {
			t.Errorf("no headline rows for %s:\n%s", lay, table)
		}
	}
	i := strings.Index(string(table), "1x4, cold, back to back, N = 100: the best fixed plan")
	if i < 0 {
		t.Fatalf("no best-fixed table:\n%s", table)
	}
	for _, size := range []string{"4", "64", "1K", "16K"} {
		row := regexp.MustCompile(`(?m)^\| ` + size + ` \| (dpml|pipelined):\S+ \| \d+\.\d\d \|`)
		if !row.Match(table[i:]) {
			t.Errorf("best-fixed table: no row for %s bytes:\n%s", size, table[i:])
		}
	}
}

// clientBin is buildBin with the C client, dpmlbench-c, built beside the
// library: what bench/cold/device.sh takes as a build.
func clientBin(t *testing.T) string {
	t.Helper()
	bin := buildBin(t)
	cc := exec.Command("mpicc", "-O2", "-Wall", "-I", filepath.Join(root, "dropin"), "-o", filepath.Join(bin, "dpmlbench-c"),
		filepath.Join(root, "cmd/dpmlbench-c/dpmlbench-c.c"), "-ldl", "-lm")
	cc.Env = append(os.Environ(), "PATH="+filepath.Join(built.dir, "shim")+string(os.PathListSeparator)+os.Getenv("PATH"))
	if out, err := cc.CombinedOutput(); err != nil {
		t.Fatalf("mpicc dpmlbench-c.c: %v\n%s", err, out)
	}
	return bin
}

// TestDeviceABOrder: bench/cold/device.sh with an old build runs the old
// build last in odd launches and first in even ones, so that an A/B's
// medians over launches do not carry a run's place in the sequence.
// Mutation check: the old build always last fails it.
func TestDeviceABOrder(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 (bench/cold/summary.py)")
	}
	bin := clientBin(t)
	_, cmds := deviceScript(t, []string{bin, bin}, "LAYOUTS=1x4", "PATTERNS=cold10", "LAUNCHES=2", "WARM=0", "PROFILE=0", "PROBE=0", "FIXED=0",
		"SIZES10=4:64K:x64")
	var order []string
	for _, m := range regexp.MustCompile(`(?m)^rc=0 at \d+ s \((\S+)\)$`).FindAllSubmatch(cmds, -1) {
		order = append(order, string(m[1]))
	}
	want := []string{"1x4-cold10-auto-1", "1x4-cold10-model-1", "1x4-cold10-old-1", "1x4-cold10-old-2", "1x4-cold10-auto-2", "1x4-cold10-model-2"}
	if !slices.Equal(order, want) {
		t.Errorf("runs in the order %v, want %v:\n%s", order, want, cmds)
	}
}

// deviceScript runs bench/cold/device.sh on builds (NEW, and OLD if
// given) with the settings env, oversubscribed, unpacks its archive and
// returns the folder and the script's commands.txt.
func deviceScript(t *testing.T, builds []string, env ...string) (out string, cmds []byte) {
	t.Helper()
	out = t.TempDir()
	run := exec.Command("bash", append([]string{"bench/cold/device.sh", out}, builds...)...)
	run.Dir = root
	run.Env = append(append(cleanEnv(), "PATH="+filepath.Join(built.dir, "shim")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"MPIRUN_ARGS=--oversubscribe --bind-to none", "BUDGET=300"), env...)
	if b, err := run.CombinedOutput(); err != nil {
		t.Fatalf("device.sh: %v\n%s", err, b)
	}
	if b, err := exec.Command("tar", "xJf", filepath.Join(out, "cold.tar.xz"), "-C", out).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, b)
	}
	cmds, err := os.ReadFile(filepath.Join(out, "r", "commands.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return out, cmds
}
