// Package fakesharp builds the EMULATED libsharp_coll.so that the tests
// (and `make fakesharp`) use in place of Mellanox/NVIDIA SHArP: a library
// with the public libsharp_coll entry points whose "switch" is a process
// per group reducing the members' contributions through shared memory
// (see csrc/fake_sharp_coll.c). Package sharp loads it through its
// production dlopen path, so that path runs end to end on one host.
//
// Everything measured on it is emulated: it says whether the engine's
// offload path is correct and fails cleanly, nothing about SHArP's speed.
package fakesharp

import (
	"bytes"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/dpmlgo/dpml/config"
	"github.com/dpmlgo/dpml/internal/testkit/mpitest"
)

// Source is the C source of the fake library.
//
//go:embed csrc/fake_sharp_coll.c
var Source []byte

// LibName is the file name Build writes.
const LibName = "libsharp_coll.so"

// Build compiles the fake library into dir and returns its path. The C
// compiler is $CC, or cc.
func Build(dir string) (string, error) {
	src := filepath.Join(dir, "fake_sharp_coll.c")
	if err := os.WriteFile(src, Source, 0o644); err != nil {
		return "", fmt.Errorf("fakesharp: %w", err)
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	out := filepath.Join(dir, LibName)
	cmd := exec.Command(cc, "-shared", "-fPIC", "-O2", "-Wall", "-o", out, src)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("fakesharp: %s: %v\n%s", cmd, err, b)
	}
	return out, nil
}

// ForTest builds the fake library for test t (in the go test process) and
// points DPML_SHARP_LIB at it for the rest of t, so the ranks that
// mpitest launches inherit it; inside a rank it returns that path.
func ForTest(t testing.TB) string {
	t.Helper()
	if mpitest.InRank() {
		p := os.Getenv(config.SharpLib)
		if p == "" {
			t.Fatalf("fakesharp: %s is not set in the rank", config.SharpLib)
		}
		return p
	}
	p, err := Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(config.SharpLib, p)
	return p
}

// Mappers lists the processes that map the file at path (from
// /proc/*/maps): after a job, a process mapping the fake library is an
// emulated switch that outlived its members.
func Mappers(path string) []int {
	maps, _ := filepath.Glob("/proc/[0-9]*/maps")
	var out []int
	for _, m := range maps {
		b, err := os.ReadFile(m)
		if err != nil || !bytes.Contains(b, []byte(path)) {
			continue
		}
		var pid int
		if _, err := fmt.Sscanf(m, "/proc/%d/maps", &pid); err == nil && pid != os.Getpid() {
			out = append(out, pid)
		}
	}
	return out
}

// CheckNoSwitch fails t unless, within a second, no process maps the
// fake library at path (the switches check on their members every 10 ms).
// Call it in the go test process after the job.
func CheckNoSwitch(t testing.TB, path string) {
	t.Helper()
	if mpitest.InRank() {
		return
	}
	var pids []int
	for range 20 {
		if pids = Mappers(path); len(pids) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("emulated switch processes outlived the job: pids %v map %s", pids, path)
}
