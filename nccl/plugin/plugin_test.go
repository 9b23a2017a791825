package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/dpmlgo/dpml/costmodel"
)

// The plugin is built once per test binary with `go build -buildmode=c-shared`
// (what make build does), so the tests exercise the library NCCL would load.
var built struct {
	once      sync.Once
	dir, lib  string
	err       error
	buildTime string
}

func buildPlugin(t *testing.T) (dir, lib string) {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc")
	}
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "dpml-nccl-plugin-")
		if built.err != nil {
			return
		}
		built.lib = filepath.Join(built.dir, "libdpml-nccl-tuner.so")
		cmd := exec.Command(gobin, "build", "-buildmode=c-shared", "-o", built.lib, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = &buildError{err, string(out)}
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir, built.lib
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "building the plugin: " + e.err.Error() + "\n" + e.out }

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// gccBuild compiles C sources into dir/name and returns its path.
func gccBuild(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	cmd := exec.Command("gcc", append([]string{"-O2", "-Wall", "-std=gnu11", "-pthread", "-o", out}, args...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", name, err, b)
	} else if len(bytes.TrimSpace(b)) > 0 {
		t.Errorf("gcc %s warns:\n%s", name, b)
	}
	return out
}

func ncclEntry(coll string, log2, nodes, ppn int, channels int, algo, proto string) costmodel.Entry {
	en := costmodel.Entry{Elem: "float32", Op: "arith", Log2Bytes: log2, Nodes: nodes, PPN: ppn,
		Variant: "dpml", Leaders: channels, Pipeline: 1, State: "frozen", Coll: coll, Algo: algo, Proto: proto}
	if channels == 0 {
		en.Variant, en.Leaders = "native", 1
	}
	return en
}

func writeTable(t *testing.T, path string, tb *costmodel.Table) {
	t.Helper()
	var b bytes.Buffer
	if err := tb.Write(&b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// testTables writes the tables tunertest.c expects (its comments say
// which answers they hold) and returns their paths: good, with a model,
// conflicting, malformed.
func testTables(t *testing.T, dir string) []string {
	prov := costmodel.Provenance{Host: "test", Layout: "1x2", MPI: "NCCL (fake)", Date: "2026-11-23T00:00:00Z", Command: "plugin_test.go"}
	good := &costmodel.Table{Schema: costmodel.SchemaVersion, Provenance: prov, Entries: []costmodel.Entry{
		ncclEntry("allreduce", 12, 1, 2, 0, "", ""),
		ncclEntry("allreduce", 13, 1, 2, 2, "", ""),
		ncclEntry("allreduce", 16, 1, 2, 4, "", ""),
		ncclEntry("allreduce", 20, 1, 2, 16, "ring", "ll128"),
		ncclEntry("allreduce", 24, 1, 2, 32, "", ""),
		ncclEntry("allgather", 20, 1, 2, 2, "", ""),
		ncclEntry("allreduce", 20, 1, 4, 8, "", ""),
		// A DPML entry (no coll) of the same layout: ignored by the plugin.
		{Elem: "float32", Op: "arith", Log2Bytes: 10, Nodes: 1, PPN: 2, Variant: "dpml", Leaders: 2, Pipeline: 1, State: "frozen"},
	}}
	m := costmodel.Model{A: 1e-6, Ap: 1, B: 1e-10} // each channel costs a second: 1 channel
	withModel := &costmodel.Table{Schema: costmodel.SchemaVersion, Provenance: prov, Model: &m, Entries: []costmodel.Entry{
		ncclEntry("allreduce", 20, 1, 2, 16, "", ""),
	}}
	conflict := &costmodel.Table{Schema: costmodel.SchemaVersion, Provenance: prov, Entries: []costmodel.Entry{
		ncclEntry("allreduce", 20, 1, 2, 16, "", ""),
		ncclEntry("allreduce", 20, 1, 2, 8, "", ""),
	}}
	paths := []string{"good.json", "model.json", "conflict.json", "bad.json"}
	for i := range paths {
		paths[i] = filepath.Join(dir, paths[i])
	}
	writeTable(t, paths[0], good)
	writeTable(t, paths[1], withModel)
	writeTable(t, paths[2], conflict)
	if err := os.WriteFile(paths[3], []byte(`{"schema": 1, "entries": [ {"coll": "allreduce", `), 0o644); err != nil {
		t.Fatal(err)
	}
	return paths
}

// TestPluginC loads the plugin with dlopen from C and checks both ABI
// versions (testdata/tunertest.c).
func TestPluginC(t *testing.T) {
	_, lib := buildPlugin(t)
	dir := t.TempDir()
	exe := gccBuild(t, dir, "tunertest", "testdata/tunertest.c", "-ldl")
	tables := testTables(t, dir)
	cmd := exec.Command(exe, append([]string{lib}, tables...)...)
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS tunertest") {
		t.Fatalf("tunertest: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// TestPluginBench states the plugin's costs (logged; run with -v): the
// dlopen of the Go runtime, init with a table and with the model, and one
// getCollInfo. Not a pass/fail test beyond sanity bounds.
func TestPluginBench(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	_, lib := buildPlugin(t)
	dir := t.TempDir()
	exe := gccBuild(t, dir, "tunertest", "testdata/tunertest.c", "-ldl")
	tables := testTables(t, dir)
	cmd := exec.Command(exe, lib, tables[0], "bench")
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "BENCH ") {
		t.Fatalf("tunertest bench: %v\n%s", err, out)
	}
	t.Logf("%s (GOMAXPROCS %d, %s)", bytes.TrimSpace(out), runtime.GOMAXPROCS(0), runtime.Version())
}

// cleanEnv is the environment without the plugin's settings (the C
// programs set them per communicator).
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "DPML_NCCL_") || strings.HasPrefix(kv, "DPML_VERBOSE=") || strings.HasPrefix(kv, "NCCL_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// TestPluginDeps: the plugin links the policy and the table reader, not
// the offline tools or their numerics (gonum), and not MPI.
func TestPluginDeps(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "gonum.org/") || dep == "github.com/dpmlgo/dpml/costmodel/offline" || dep == "github.com/dpmlgo/dpml/mpi" {
			t.Errorf("the plugin depends on %s", dep)
		}
	}
}
