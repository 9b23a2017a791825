package userdocs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dpmlgo/dpml/internal/tools/launch"
)

// A program that includes dpmlx.h and calls one of its entry points
// directly, so it builds only with pkg-config's -I and links only with its
// -ldpml; it checks its own result.
const installProg = `#include <dpmlx.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double x[4096], y[4096];
    for (int i = 0; i < 4096; i++) x[i] = rank + i;
    MPI_Allreduce(x, y, 4096, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i < 4096; i++) bad += y[i] != size * (size - 1) / 2.0 + (double)size * i;
    char plan[DPMLX_MAX_SPEC] = "";
    int rc = DPMLX_Last_plan(MPI_COMM_WORLD, plan, sizeof plan);
    if (rank == 0) printf("wrong %d plan rc %d %s\n", bad, rc, plan);
    MPI_Finalize();
    return bad != 0;
}
`

// TestMakeInstall installs into a temporary prefix with make install,
// builds a C program against it with mpicc and pkg-config alone, runs it,
// runs the installed commands, and uninstalls.
func TestMakeInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the library and the commands with make")
	}
	if launch.BuildFlavor != launch.OpenMPI {
		t.Skip("tested with Open MPI")
	}
	if why := launch.MissingForTests(launch.OpenMPI); why != "" {
		t.Skip(why)
	}
	for _, tool := range []string{"make", "pkg-config", "install"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	tmp := t.TempDir()
	prefix := filepath.Join(tmp, "prefix")
	run := func(dir string, env []string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), mpiEnv...), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// BIN keeps the build out of the working tree's bin/.
	run(root, nil, "make", "install", "BIN="+filepath.Join(tmp, "build"), "PREFIX="+prefix)
	want := []string{"bin/dpmlrun", "bin/dpmlbench", "bin/dpmlbench-c", "bin/dpml-info",
		"lib/libdpml.so", "include/dpmlx.h", "lib/pkgconfig/dpml.pc"}
	for _, f := range want {
		if _, err := os.Stat(filepath.Join(prefix, f)); err != nil {
			t.Errorf("make install: %v", err)
		}
	}

	pcEnv := []string{"PKG_CONFIG_PATH=" + filepath.Join(prefix, "lib", "pkgconfig")}
	if flags := run(tmp, pcEnv, "pkg-config", "--cflags", "--libs", "dpml"); !strings.Contains(flags, "-ldpml") || !strings.Contains(flags, "-I"+prefix+"/include") {
		t.Errorf("pkg-config --cflags --libs dpml: %q", flags)
	}
	src := filepath.Join(tmp, "prog.c")
	if err := os.WriteFile(src, []byte(installProg), 0o644); err != nil {
		t.Fatal(err)
	}
	cc, _ := launch.Compilers(launch.OpenMPI)
	run(tmp, pcEnv, "sh", "-c", cc+` -O1 -o prog prog.c $(pkg-config --cflags --libs dpml)`)
	// libdpml.so comes before the MPI library, so its MPI_Allreduce wins.
	needed := run(tmp, nil, "sh", "-c", "readelf -d prog | grep NEEDED")
	if i, j := strings.Index(needed, "libdpml.so"), strings.Index(needed, "libmpi"); i < 0 || j < 0 || i > j {
		t.Errorf("prog's NEEDED entries: want libdpml.so before libmpi:\n%s", needed)
	}
	mpirun := "mpirun"
	if p, err := exec.LookPath("mpirun.openmpi"); err == nil {
		mpirun = p
	}
	out := run(tmp, []string{"DPML_VERBOSE=1", "DPML_SETUP_AFTER=0"}, mpirun, "-np", "2", "./prog") // set up at its one call
	if !regexp.MustCompile(`(?m)^wrong 0 plan rc 0 \S`).MatchString(out) {
		t.Errorf("the installed library's program printed no correct result and plan:\n%s", out)
	}
	if n := len(regexp.MustCompile(`(?m)^libdpml: rank \d+: routed 1 `).FindAllString(out, -1)); n != 2 {
		t.Errorf("%d ranks routed their call through the installed library, want 2:\n%s", n, out)
	}
	if v := run(tmp, nil, filepath.Join(prefix, "bin", "dpmlrun"), "-version"); !strings.HasPrefix(v, "dpmlrun ") {
		t.Errorf("installed dpmlrun -version: %q", v)
	}
	if v := run(tmp, nil, filepath.Join(prefix, "bin", "dpml-info"), "-short"); !strings.Contains(v, "DPML_LEADERS = ") {
		t.Errorf("installed dpml-info -short:\n%s", v)
	}

	run(root, nil, "make", "uninstall", "PREFIX="+prefix)
	for _, f := range want {
		if _, err := os.Stat(filepath.Join(prefix, f)); !os.IsNotExist(err) {
			t.Errorf("after make uninstall, %s: %v", f, err)
		}
	}
}
