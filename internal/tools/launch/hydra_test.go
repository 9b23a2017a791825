package launch

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestBuildHydraEmulated(t *testing.T) {
	const ag = "/tmp/dpmlrun-abc-1/hydra-agent"
	head := []string{"mpiexec.hydra", "-launcher", "ssh", "-launcher-exec", ag, "-iface", "lo", "-bind-to", "none"}
	cat := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		o    Options
		argv []string
		env  []string
	}{
		{
			// Oversubscribed: the yield shim goes first in LD_PRELOAD.
			name: "2x2 on 2 cores, preload",
			o: Options{Flavor: MPICH, PPN: []int{2, 2}, HostCPUs: []int{0, 1}, AgentExec: ag, Root: true, Job: "abc",
				YieldLib: "/c/yield.so", Preload: "/l/libdpml.so", Prog: []string{"./prog", "x"}},
			argv: cat(head, []string{"-hosts", "node1:2,node2:2", "-n", "4",
				"-genv", "DPML_RUN_NODES", "2", "-genv", "DPML_RUN_PPN", "2", "-genv", "DPML_JOB", "abc",
				"-genv", "LD_PRELOAD", "/c/yield.so:/l/libdpml.so", "./prog", "x"}),
			env: []string{"DPML_RUN_CPUMAP=node1=0;node2=1"},
		},
		{
			// Not oversubscribed: no shim even when one was given.
			name: "uneven 3,2 on 10 cores, user binding",
			o: Options{Flavor: MPICH, Mpirun: "/usr/bin/mpiexec.mpich", PPN: []int{3, 2}, HostCPUs: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9},
				AgentExec: ag, YieldLib: "/c/yield.so", Extra: []string{"--bind-to", "core", "-prepend-rank"}, Prog: []string{"./prog"}},
			argv: []string{"/usr/bin/mpiexec.mpich", "-launcher", "ssh", "-launcher-exec", ag, "-iface", "lo",
				"-hosts", "node1:3,node2:2", "-n", "5", "-genv", "DPML_RUN_NODES", "2", "-genv", "DPML_RUN_PPN", "3,2",
				"--bind-to", "core", "-prepend-rank", "./prog"},
			env: []string{"DPML_RUN_CPUMAP=node1=0-4;node2=5-9"},
		},
	} {
		p, err := Build(tc.o)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !reflect.DeepEqual(p.Argv, tc.argv) {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, ShellQuote(p.Argv), ShellQuote(tc.argv))
		}
		if !reflect.DeepEqual(p.Env, tc.env) {
			t.Errorf("%s: env %v, want %v", tc.name, p.Env, tc.env)
		}
	}
	if _, err := Build(Options{Flavor: MPICH, PPN: []int{1}, HostCPUs: []int{0}, Prog: []string{"p"}}); err == nil {
		t.Error("no agent: no error")
	}
}

func TestBuildHydraHostfile(t *testing.T) {
	p, err := Build(Options{Flavor: MPICH, Hostfile: "hosts", Nodes: 4, PPN: []int{28, 28, 28, 28}, Job: "j",
		Extra: []string{"-bind-to", "core"}, Prog: []string{"./prog"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"mpiexec.hydra", "-f", "hosts", "-n", "112", "-ppn", "28",
		"-genv", "DPML_RUN_NODES", "4", "-genv", "DPML_RUN_PPN", "28", "-genv", "DPML_JOB", "j", "-bind-to", "core", "./prog"}
	if !reflect.DeepEqual(p.Argv, want) {
		t.Errorf("got  %s\nwant %s", ShellQuote(p.Argv), ShellQuote(want))
	}
	if _, err := Build(Options{Flavor: MPICH, Hostfile: "h", PPN: []int{3, 2}, Prog: []string{"p"}}); err == nil {
		t.Error("uneven -ppn with a hostfile: no error")
	}
}

// TestCountHosts: Open MPI's "host slots=N" and Hydra's "host:N" lines.
func TestCountHosts(t *testing.T) {
	f := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(f, []byte("a slots=2\nb:4 # two\n\n# c\nb:4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := countHosts(f); err != nil || n != 2 {
		t.Errorf("countHosts = %d, %v; want 2", n, err)
	}
}

func TestParseFlavor(t *testing.T) {
	for in, want := range map[string]Flavor{"": "", "auto": "", "openmpi": OpenMPI, "OMPI": OpenMPI, "mpich": MPICH, "hydra": MPICH} {
		if got, err := ParseFlavor(in); err != nil || got != want {
			t.Errorf("ParseFlavor(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseFlavor("lam"); err == nil {
		t.Error("ParseFlavor(lam): no error")
	}
}

// elfNeeding writes a shared library that needs the named libraries
// (DT_NEEDED), linked by the C compiler; it skips without one.
func elfNeeding(t *testing.T, needed ...string) string {
	t.Helper()
	dir := t.TempDir()
	cc := "cc"
	if _, err := exec.LookPath(cc); err != nil {
		t.Skip("no C compiler")
	}
	args := []string{"-shared", "-o", filepath.Join(dir, "prog.so"), "-x", "c", "-", "-L" + dir, "-Wl,--no-as-needed"}
	for _, n := range needed {
		// A stub with the needed library's soname.
		stub := filepath.Join(dir, n)
		if out, err := exec.Command(cc, "-shared", "-o", stub, "-Wl,-soname,"+n, "-x", "c", "/dev/null").CombinedOutput(); err != nil {
			t.Fatalf("stub %s: %v\n%s", n, err, out)
		}
		args = append(args, "-l:"+n)
	}
	cmd := exec.Command(cc, args...)
	cmd.Stdin = strings.NewReader("int f(void) { return 0; }\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", cc, args, err, out)
	}
	return filepath.Join(dir, "prog.so")
}

func TestResolveFlavor(t *testing.T) {
	ompi := elfNeeding(t, "libmpi.so.40")
	mpich := elfNeeding(t, "libmpich.so.12")
	impi := elfNeeding(t, "libmpi.so.12") // the MPICH ABI name (Intel MPI, MVAPICH2)
	plain := elfNeeding(t, "libm.so.6")
	script := filepath.Join(t.TempDir(), "run.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	def, _ := ParseFlavor(DefaultMPI)
	for _, tc := range []struct {
		name     string
		explicit Flavor
		prog     string
		preload  string
		want     Flavor
		err      string
	}{
		{"open mpi program", "", ompi, "", OpenMPI, ""},
		{"mpich program", "", mpich, "", MPICH, ""},
		{"mpich abi program", "", impi, "", MPICH, ""},
		{"mpich preload, script", "", script, mpich, MPICH, ""},
		{"explicit agrees", MPICH, mpich, mpich, MPICH, ""},
		{"explicit, no evidence", MPICH, plain, "", MPICH, ""},
		{"no evidence: default", "", script, "", def, ""},
		{"explicit disagrees", OpenMPI, mpich, "", "", "-mpi openmpi, but"},
		{"program and preload disagree", "", ompi, "/x.so:" + mpich, "", "needs openmpi (libmpi.so.40) but -preload"},
	} {
		got, err := ResolveFlavor(tc.explicit, []string{tc.prog}, tc.preload)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: got %q, %v; want an error with %q", tc.name, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// TestYieldLib builds the shim and checks that it defines
// ucp_worker_progress (what MPICH's UCX netmod calls) and is reused.
func TestYieldLib(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler")
	}
	dir := t.TempDir()
	p, err := YieldLib(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("nm", "-D", "--defined-only", p).CombinedOutput()
	if err != nil {
		t.Skipf("nm: %v", err)
	}
	if !strings.Contains(string(out), " T ucp_worker_progress") {
		t.Errorf("%s does not define ucp_worker_progress:\n%s", p, out)
	}
	st, _ := os.Stat(p)
	p2, err := YieldLib(dir)
	if err != nil || p2 != p {
		t.Fatalf("second call: %q, %v", p2, err)
	}
	if st2, _ := os.Stat(p2); !st2.ModTime().Equal(st.ModTime()) {
		t.Error("the shim was rebuilt")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d entries in the cache directory, want the shim only", len(ents))
	}
}

func TestHydraAgentScript(t *testing.T) {
	s := HydraAgentScript("/a b/dpmlrun")
	if want := "#!/bin/sh\nexec '/a b/dpmlrun' " + AgentArg + " \"$@\"\n"; s != want {
		t.Errorf("got %q, want %q", s, want)
	}
	// Hydra's words reach the agent parser unchanged.
	dir := t.TempDir()
	fake := filepath.Join(dir, "fake")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nfor a; do printf '%s\\n' \"$a\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "agent")
	if err := os.WriteFile(script, []byte(HydraAgentScript(fake)), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(script, "-x", "node2", `"/usr/bin/hydra_pmi_proxy"`, "--control-port", "127.0.0.1:4000").Output()
	if err != nil {
		t.Fatal(err)
	}
	words := strings.Split(strings.TrimSpace(string(out)), "\n")
	host, cmd, err := ParseAgentArgs(words[1:])
	if words[0] != AgentArg || err != nil || host != "node2" || cmd != `"/usr/bin/hydra_pmi_proxy" --control-port 127.0.0.1:4000` {
		t.Errorf("words %q: host %q, command %q, %v", words, host, cmd, err)
	}
}

func TestTagAndExportArgs(t *testing.T) {
	if a := TagOutputArgs(MPICH); !reflect.DeepEqual(a, []string{"-prepend-rank"}) {
		t.Errorf("MPICH tag args %q", a)
	}
	if a := TagOutputArgs(OpenMPI); !reflect.DeepEqual(a, []string{"--tag-output"}) {
		t.Errorf("Open MPI tag args %q", a)
	}
	if a := ExportArgs(OpenMPI, "A", "B"); !reflect.DeepEqual(a, []string{"-x", "A", "-x", "B"}) {
		t.Errorf("Open MPI export args %q", a)
	}
	if a := ExportArgs(MPICH, "A"); len(a) != 0 {
		t.Errorf("MPICH export args %q (Hydra passes the whole environment)", a)
	}
}
