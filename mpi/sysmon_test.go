package mpi_test

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// A process bound to one CPU gets GOMAXPROCS 2 from the mpi package (see
// sysmon.go), unless GOMAXPROCS is set in the environment. The test
// re-runs its own binary under taskset(1) (util-linux, installed by
// make deps) and reads the value the child prints.
func TestGOMAXPROCSOnOneCore(t *testing.T) {
	if os.Getenv("DPML_TEST_PRINT_GOMAXPROCS") != "" {
		fmt.Printf("gomaxprocs=%d\n", runtime.GOMAXPROCS(0))
		return
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Skip("taskset not installed")
	}
	for _, tc := range []struct {
		env  string
		want string
	}{{"", "gomaxprocs=2"}, {"GOMAXPROCS=1", "gomaxprocs=1"}, {"GOMAXPROCS=3", "gomaxprocs=3"}} {
		cmd := exec.Command(taskset, "-c", "0", os.Args[0], "-test.run", "^TestGOMAXPROCSOnOneCore$")
		cmd.Env = append(os.Environ(), "DPML_TEST_PRINT_GOMAXPROCS=1")
		cmd.Env = slicesWithout(cmd.Env, "GOMAXPROCS=")
		if tc.env != "" {
			cmd.Env = append(cmd.Env, tc.env)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.env, err, out)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("env %q, bound to one CPU: want %s, got\n%s", tc.env, tc.want, out)
		}
	}
}

func slicesWithout(env []string, prefix string) []string {
	out := env[:0:0]
	for _, e := range env {
		if !strings.HasPrefix(e, prefix) {
			out = append(out, e)
		}
	}
	return out
}
