package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dpmlgo/dpml/internal/tools/launch"
)

// The test binary doubles as dpmlrun (and as its launch agent): run it
// with launch.MainArg first.
func TestMain(m *testing.M) {
	// Few, small calls per communicator: set up at the first.
	if _, ok := os.LookupEnv("DPML_SETUP_AFTER"); !ok {
		os.Setenv("DPML_SETUP_AFTER", "0")
	}
	if _, ok := os.LookupEnv("DPML_PROFILE"); !ok {
		os.Setenv("DPML_PROFILE", "off") // no machine profile between tests
	}
	launch.Dispatch(os.Args)
	code := m.Run()
	if probeDir != "" {
		os.RemoveAll(probeDir)
	}
	os.Exit(code)
}

// flavor is the MPI under test: the one this test binary was built for
// (go test -tags mpich ./cmd/dpmlrun tests the MPICH launcher).
var flavor = launch.BuildFlavor

// dpmlrun runs dpmlrun with -mpi flavor and args.
func dpmlrun(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{launch.MainArg, "-mpi", string(flavor)}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// probe compiles testdata/probe.c with flavor's mpicc (once per test
// process).
func probe(t *testing.T) string {
	t.Helper()
	cc, _ := launch.Compilers(flavor)
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no %s (make deps)", cc)
	}
	check := launch.CheckMpirun
	if flavor == launch.MPICH {
		check = launch.CheckMpiexec
	}
	if _, err := check(); err != nil {
		t.Skip(err)
	}
	if err := launch.CheckNamespaces(); err != nil {
		t.Skip(err)
	}
	probeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "dpmlrun-test-")
		if err != nil {
			probeErr = err
			return
		}
		probeDir = dir
		out, err := exec.Command(cc, "-O1", "-o", filepath.Join(dir, "probe"), "testdata/probe.c").CombinedOutput()
		if err != nil {
			probeErr = fmt.Errorf("%s: %v\n%s", cc, err, out)
		}
	})
	if probeErr != nil {
		t.Fatal(probeErr)
	}
	return filepath.Join(probeDir, "probe")
}

var (
	probeOnce sync.Once
	probeDir  string
	probeErr  error
)

type rankInfo struct {
	rank, size, shared int
	host, allowed      string
	nodes, ppn, job    string
}

func parseProbe(t *testing.T, out string) map[int]rankInfo {
	t.Helper()
	ranks := map[int]rankInfo{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		kv := map[string]string{}
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			kv[k] = v
		}
		r, err := strconv.Atoi(kv["rank"])
		if err != nil {
			t.Fatalf("bad probe line %q", line)
		}
		size, _ := strconv.Atoi(kv["size"])
		shared, _ := strconv.Atoi(kv["shared"])
		ranks[r] = rankInfo{r, size, shared, kv["host"], kv["allowed"], kv["nodes"], kv["ppn"], kv["job"]}
	}
	return ranks
}

func TestEmulatedLayouts(t *testing.T) {
	prog := probe(t)
	host := launch.HostCPUs()
	for _, tc := range []struct {
		args []string
		ppn  []int
	}{
		{[]string{"-nodes", "2", "-ppn", "2"}, []int{2, 2}},
		{[]string{"-nodes", "4", "-ppn", "1"}, []int{1, 1, 1, 1}},
		{[]string{"-nodes", "1", "-ppn", "4"}, []int{4}},
		{[]string{"-nodes", "2", "-ppn", "3,2"}, []int{3, 2}},
		{[]string{"-ppn", "1,2"}, []int{1, 2}},
	} {
		name := strings.Join(tc.args, " ")
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			stdout, stderr, code := dpmlrun(t, nil, append(tc.args, "--", prog)...)
			if code != 0 {
				t.Fatalf("exit code %d\n%s%s", code, stdout, stderr)
			}
			t.Logf("%v\n%s", time.Since(start), stdout)
			ranks := parseProbe(t, stdout)
			n := launch.Sum(tc.ppn)
			if len(ranks) != n {
				t.Fatalf("%d ranks answered, want %d", len(ranks), n)
			}
			cpus, _, _, err := launch.AssignCPUs(host, tc.ppn, 0)
			if err != nil {
				t.Fatal(err)
			}
			r := 0
			job := ranks[0].job
			for node, p := range tc.ppn {
				for i := 0; i < p; i, r = i+1, r+1 {
					ri := ranks[r]
					want := rankInfo{rank: r, size: n, shared: p, host: "node" + strconv.Itoa(node+1),
						allowed: joinInts(cpus[node]), nodes: strconv.Itoa(len(tc.ppn)), ppn: launch.FormatPPN(tc.ppn), job: job}
					if !reflect.DeepEqual(ri, want) {
						t.Errorf("rank %d: got %+v, want %+v", r, ri, want)
					}
				}
			}
			if len(job) != 12 {
				t.Errorf("job token %q", job)
			}
			checkNoLeftovers(t, job)
		})
	}
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func checkNoLeftovers(t *testing.T, job string) {
	t.Helper()
	for _, pat := range []string{"/dev/shm/dpml-" + job + "*", filepath.Join(os.TempDir(), "dpmlrun-"+job+"-*")} {
		if m, _ := filepath.Glob(pat); len(m) > 0 {
			t.Errorf("left behind: %v", m)
		}
	}
}

func TestExitCodeAndExtraArgs(t *testing.T) {
	probe(t)
	// A non-MPI program: mpirun returns its exit code.
	_, stderr, code := dpmlrun(t, nil, "-nodes", "1", "-ppn", "1", "-v", "--", "sh", "-c", "exit 3")
	if code != 3 {
		t.Errorf("exit code %d, want 3\n%s", code, stderr)
	}
	hostArg, tagged := "--host node1:1", "[1,1]<stdout>:job="
	if flavor == launch.MPICH {
		hostArg, tagged = "-hosts node1:1", "[1] job="
	}
	if !strings.Contains(stderr, "dpmlrun: ") || !strings.Contains(stderr, hostArg) {
		t.Errorf("-v did not print the command:\n%s", stderr)
	}
	// Extra mpirun arguments between two --, and the crash clean-up: the
	// program leaves a file named after the job in /dev/shm.
	args := append(append([]string{"-nodes", "2", "-ppn", "1", "--"}, launch.TagOutputArgs(flavor)...), "--",
		"sh", "-c", `touch /dev/shm/dpml-$DPML_JOB-leak; echo job=$DPML_JOB`)
	stdout, stderr, code := dpmlrun(t, nil, args...)
	if code != 0 {
		t.Fatalf("exit code %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, tagged) {
		t.Errorf("%s not applied:\n%s", launch.TagOutputArgs(flavor), stdout)
	}
	_, job, _ := strings.Cut(strings.TrimSpace(strings.Split(stdout, "\n")[0]), "job=")
	checkNoLeftovers(t, job)
}

// TestSignalForwarded: SIGINT to dpmlrun stops the job (forwarded to
// mpirun, which dpmlrun kills KillGrace later if it is still there) and
// dpmlrun exits as a shell reports SIGINT. The ranks would sleep for an
// hour, so only the signal can end the job in time; the test waits for
// the ranks to be up and for dpmlrun to exit, each for up to 2 minutes:
// no stop within that bound is a failure, whatever the machine's load
// (a 10 s bound from the signal, against ranks that slept 60 s, was
// close to what dpmlrun itself may take: KillGrace and the clean-up).
//
// Mutation check: with dpmlrun neither forwarding the signal nor killing
// mpirun after KillGrace (internal/tools/launch/run.go), the job runs on and
// the test fails at the 2-minute bound.
func TestSignalForwarded(t *testing.T) {
	probe(t)
	exe, _ := os.Executable()
	cmd := exec.Command(exe, launch.MainArg, "-mpi", string(flavor), "-nodes", "2", "-ppn", "1", "--", "sh", "-c", `echo job=$DPML_JOB; exec sleep 3600`)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	stop := func(format string, args ...any) {
		t.Helper()
		_ = cmd.Process.Kill() // its mpirun follows (Pdeathsig)
		<-waited
		t.Fatalf(format+"\n%s", append(args, out.String())...)
	}
	for deadline := time.Now().Add(2 * time.Minute); strings.Count(out.String(), "job=") < 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			stop("the ranks did not start within 2 minutes")
		}
	}
	_ = cmd.Process.Signal(os.Interrupt)
	var err error
	select {
	case err = <-waited:
	case <-time.After(2 * time.Minute):
		stop("dpmlrun had not stopped 2 minutes after SIGINT (it kills mpirun %v after forwarding it)", launch.KillGrace)
	}
	// Not mpirun's status 1: a shell reports 128 + 2 after SIGINT.
	if code := cmd.ProcessState.ExitCode(); err == nil || code != 130 {
		t.Errorf("exit status %d after SIGINT (%v), want 130\n%s", code, err, out.String())
	}
	_, job, _ := strings.Cut(out.String(), "job=")
	job, _, _ = strings.Cut(job, "\n")
	checkNoLeftovers(t, strings.TrimSpace(job))
}

// TestKilledLauncherSweptAtNextStart: SIGKILL gives
// dpmlrun no chance to clean up: its job's /tmp/dpmlrun-<job>-* session
// directory and /dev/shm/dpml-<job>-ompi stay behind (documented). The next
// dpmlrun start removes them: their lock is no longer held.
func TestKilledLauncherSweptAtNextStart(t *testing.T) {
	probe(t)
	exe, _ := os.Executable()
	// A private TMPDIR: every dpmlrun start sweeps the stale session
	// directories of its TMPDIR, and go test runs other packages' tests
	// (cmd/dpmlbench's start dpmlrun) beside this one, which swept the
	// killed launcher's directory before this test could see it.
	tmp := t.TempDir()
	cmd := exec.Command(exe, launch.MainArg, "-mpi", string(flavor), "-nodes", "2", "-ppn", "1", "--", "sh", "-c", `echo job=$DPML_JOB; exec sleep 60`)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 60 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(out.String(), "job=") < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	// The token from the ranks' first line; the MPI library may print
	// warnings of its own before it (Open MPI's setpgid warning on a
	// loaded machine).
	var job string
	for _, l := range strings.Split(out.String(), "\n") {
		if _, j, ok := strings.Cut(l, "job="); ok {
			job = strings.TrimSpace(j)
			break
		}
	}
	if len(job) != 12 {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		// Whatever the killed launcher left, a start in its TMPDIR
		// sweeps (no later run of another TMPDIR could).
		dpmlrun(t, []string{"TMPDIR=" + tmp}, "-nodes", "1", "-ppn", "1", "--", "true")
		t.Fatalf("no job token:\n%s", out.String())
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait() // returns once mpirun (told by Pdeathsig) and the ranks closed the output
	left, _ := filepath.Glob(filepath.Join(tmp, "dpmlrun-"+job+"-*"))
	shm, _ := filepath.Glob("/dev/shm/dpml-" + job + "*")
	t.Logf("left behind by the killed dpmlrun: %v %v", left, shm)
	if len(left) == 0 {
		t.Errorf("no session directory left: the documented behaviour changed (update docs/RELIABILITY.md)")
	}
	// The next start sweeps them.
	if _, stderr, code := dpmlrun(t, []string{"TMPDIR=" + tmp}, "-nodes", "1", "-ppn", "1", "--", "true"); code != 0 {
		t.Fatalf("next run: exit %d\n%s", code, stderr)
	}
	checkNoLeftovers(t, job)
	if m, _ := filepath.Glob(filepath.Join(tmp, "dpmlrun-"+job+"-*")); len(m) > 0 {
		t.Errorf("left behind: %v", m)
	}
}

func TestPrintLayout(t *testing.T) {
	for _, tc := range []struct {
		mpi  string
		want []string
	}{
		{"openmpi", []string{"--host node1:3,node2:2", "-x DPML_RUN_PPN=3,2"}},
		// MPICH: Hydra with the agent script; 5 ranks on 2 cores: the yield shim.
		{"mpich", []string{"-launcher-exec /tmp/dpmlrun-", "/hydra-agent", "-hosts node1:3,node2:2", "-n 5",
			"-genv DPML_RUN_PPN 3,2", "-genv LD_PRELOAD ", "libdpmlrun-yield-"}},
	} {
		exe, _ := os.Executable()
		out, err := exec.Command(exe, launch.MainArg, "-mpi", tc.mpi, "-print-layout", "-nodes", "2", "-ppn", "3,2",
			"-cores-per-node", "1", "--", "./prog").CombinedOutput()
		if err != nil {
			t.Fatalf("-mpi %s: %v: %s", tc.mpi, err, out)
		}
		for _, want := range append(tc.want, "node1    ranks 0-2", "node2    ranks 3-4", " ./prog") {
			if !strings.Contains(string(out), want) {
				t.Errorf("-mpi %s: missing %q in\n%s", tc.mpi, want, out)
			}
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"-nodes", "2"}, "usage:"},
		{nil, []string{"-nodes", "2", "--", "./prog"}, "-ppn is required"},
		{nil, []string{"-nodes", "3", "-ppn", "3,2", "--", "./prog"}, "lists 2 nodes but -nodes is 3"},
		{[]string{"PATH=/nonexistent"}, []string{"-mpi", "openmpi", "-nodes", "1", "-ppn", "1", "--", "./prog"}, "install Open MPI"},
		{[]string{"PATH=" + fakeMpirun(t)}, []string{"-mpi", "openmpi", "-nodes", "1", "-ppn", "1", "--", "./prog"}, "is not Open MPI's mpirun"},
		{[]string{"PATH=/nonexistent"}, []string{"-mpi", "mpich", "-nodes", "1", "-ppn", "1", "--", "./prog"}, "no MPICH Hydra launcher"},
		{nil, []string{"-mpi", "lam", "-nodes", "1", "-ppn", "1", "--", "./prog"}, `-mpi "lam": want openmpi, mpich or auto`},
		// -nodes 0 must not run one node (-1 is refused), and a missing
		// -preload library must not run the program without it, status 0.
		{nil, []string{"-nodes", "0", "-ppn", "2", "--", "./prog"}, "-nodes 0: must be at least 1"},
		{nil, []string{"-nodes", "-1", "-ppn", "2", "--", "./prog"}, "-nodes -1: must be at least 1"},
		{nil, []string{"-nodes", "2", "-ppn", "1", "-preload", "/nonexistent.so", "--", "./prog"}, "-preload /nonexistent.so: open /nonexistent.so: no such file or directory"},
		{nil, []string{"-nodes", "2", "-ppn", "1", "-preload", "/tmp", "--", "./prog"}, "-preload /tmp: not a regular file"},
		{nil, []string{"-nodes", "2", "-ppn", "1", "-preload", "main_test.go", "--", "./prog"}, "not an ELF shared library"},
		{nil, []string{"-nodes", "5000", "-ppn", "1", "--", "./prog"}, "must be 1 to 4096"},
	} {
		_, stderr, code := dpmlrun(t, tc.env, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("dpmlrun %q: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// fakeMpirun makes a directory holding an MPICH-like mpirun.
func fakeMpirun(t *testing.T) string {
	dir := t.TempDir()
	script := "#!/bin/sh\necho 'HYDRA build details:'\necho '    Version:                                 4.0.2'\n"
	if err := os.WriteFile(filepath.Join(dir, "mpirun"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
