package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/dpmlgo/dpml/internal/tools/launch"
)

// TestSameBitsGoAndC: the same plans give the same bits whichever path
// runs them. A C program through libdpml.so (testdata/samebits.c) and a Go
// program through the Go API (testdata/samebits: dpml.New, dpml.Allreduce)
// sum the same float32 and float64 inputs at six sizes, three calls each,
// under each forced plan (the tree, copies, cross-memory attach, the
// pipeline, the built-in table) on one node and on two; every rank of both
// writes a hash of every result, and the two runs' lines must be equal,
// and equal across ranks. The C layer runs the calls the engine cleared
// itself, the tree's and on two nodes its root's inter-node allreduce
// too, where the Go API goes through the engine for each. Mutation: the C
// layer's inter-node allreduce one element short (dropin.c
// cleared_inter) -> 2,2/tree and 2,2/static differ.
func TestSameBitsGoAndC(t *testing.T) {
	setup(t)
	if testing.Short() {
		t.Skip("builds and runs 20 jobs")
	}
	dir := t.TempDir()
	cprog := filepath.Join(dir, "samebits-c")
	cc, _ := launch.Compilers(flavor)
	if out, err := exec.Command(cc, "-O1", "-o", cprog, "testdata/samebits.c").CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	goprog := filepath.Join(dir, "samebits-go")
	args := []string{"build", "-o", goprog}
	if flavor == launch.MPICH {
		args = append(args, "-tags", "mpich")
	}
	if out, err := exec.Command(goTool(), append(args, "./testdata/samebits")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	plans := []struct {
		name string
		env  []string
	}{
		{"tree", []string{"DPML_INTRA=tree", "DPML_LEADERS=1"}},
		{"copies", []string{"DPML_INTRA=shm", "DPML_LEADERS=2"}},
		{"cma", []string{"DPML_INTRA=cma", "DPML_LEADERS=2"}},
		{"pipelined", []string{"DPML_INTRA=shm", "DPML_LEADERS=2", "DPML_PIPELINE=2"}},
		{"static", []string{"DPML_TUNER=static"}},
	}
	for _, ppn := range []string{"4", "2,2"} {
		for _, p := range plans {
			t.Run(ppn+"/"+p.name, func(t *testing.T) {
				var lines [2][]string
				for i, prog := range []string{cprog, goprog} {
					r := dpmlrunPPN(t, ppn, i == 0, p.env, prog, "-o", outDir)
					if r.code != 0 {
						t.Fatalf("%s: exit code %d\n%s\n%s", filepath.Base(prog), r.code, r.stdout, r.stderr)
					}
					lines[i] = sortedLines(r.out, "rank ")
				}
				if len(lines[0]) != 4*6*3*2 {
					t.Fatalf("the C program wrote %d lines, want %d", len(lines[0]), 4*6*3*2)
				}
				if !slices.Equal(lines[0], lines[1]) {
					t.Errorf("the C program through libdpml.so and the Go API differ:\n%s", firstDiff(lines[0], lines[1]))
				}
				// Every rank holds the same result.
				seen := map[string]string{}
				for _, l := range lines[0] {
					w := strings.Fields(l) // rank R TYPE COUNT call K HASH
					k := strings.Join(w[2:6], " ")
					if h, ok := seen[k]; ok && h != w[6] {
						t.Errorf("%s: ranks differ (%s and %s)", k, h, w[6])
					}
					seen[k] = w[6]
				}
			})
		}
	}
}

// goTool is the go command of the toolchain running the test.
func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); func() bool { _, err := os.Stat(p); return err == nil }() {
		return p
	}
	return "go"
}
