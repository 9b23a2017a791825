package launch

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParsePPN(t *testing.T) {
	for _, tc := range []struct {
		nodes int
		in    string
		want  []int
		err   bool
	}{
		{2, "2", []int{2, 2}, false},
		{4, "1", []int{1, 1, 1, 1}, false},
		{0, "3", []int{3}, false},
		{2, "3,2", []int{3, 2}, false},
		{0, "3,2", []int{3, 2}, false},
		{0, " 1, 2 ,1", []int{1, 2, 1}, false},
		{3, "3,2", nil, true},
		{2, "0", nil, true},
		{2, "x", nil, true},
		{2, "", nil, true},
		{2, "2,", nil, true},
		{-1, "2", nil, true},
	} {
		got, err := ParsePPN(tc.nodes, tc.in)
		if (err != nil) != tc.err || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParsePPN(%d, %q) = %v, %v; want %v, err=%v", tc.nodes, tc.in, got, err, tc.want, tc.err)
		}
	}
	if s := FormatPPN([]int{2, 2}); s != "2" {
		t.Errorf("FormatPPN even = %q", s)
	}
	if s := FormatPPN([]int{3, 2}); s != "3,2" {
		t.Errorf("FormatPPN uneven = %q", s)
	}
}

func TestCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		fmt  string
	}{
		{"0-1", []int{0, 1}, "0-1"},
		{"0", []int{0}, "0"},
		{"0-3,8,10-11", []int{0, 1, 2, 3, 8, 10, 11}, "0-3,8,10-11"},
		{"3,1,2,2", []int{1, 2, 3}, "1-3"},
	} {
		got, err := ParseCPUList(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v", tc.in, got, err)
		}
		if f := FormatCPUList(got); f != tc.fmt {
			t.Errorf("FormatCPUList(%v) = %q, want %q", got, f, tc.fmt)
		}
	}
	for _, bad := range []string{"", "a", "3-1", "-1", "1-"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("ParseCPUList(%q) accepted", bad)
		}
	}
	if f := FormatCPUList([]int{3, 0}); f != "3,0" {
		t.Errorf("FormatCPUList wrapped = %q", f)
	}
	if len(HostCPUs()) == 0 {
		t.Error("HostCPUs is empty")
	}
}

func TestAssignCPUs(t *testing.T) {
	seq := func(n int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = i
		}
		return s
	}
	for _, tc := range []struct {
		name  string
		host  []int
		ppn   []int
		cpn   int
		want  [][]int
		per   int
		over  bool
		isErr bool
	}{
		{"2x2 on 2 cores", seq(2), []int{2, 2}, 0, [][]int{{0}, {1}}, 1, true, false},
		{"2x1 on 2 cores", seq(2), []int{1, 1}, 0, [][]int{{0}, {1}}, 1, false, false},
		{"4x1 on 2 cores wraps", seq(2), []int{1, 1, 1, 1}, 0, [][]int{{0}, {1}, {0}, {1}}, 1, true, false},
		{"1x4 on 2 cores", seq(2), []int{4}, 0, [][]int{{0, 1}}, 2, true, false},
		{"2x4 on 32 cores", seq(32), []int{4, 4}, 0, [][]int{seq(16), seq(32)[16:]}, 16, false, false},
		{"4x8 on 32 cores", seq(32), []int{8, 8, 8, 8}, 0, [][]int{seq(8), seq(16)[8:], seq(24)[16:], seq(32)[24:]}, 8, false, false},
		{"3,2 on 2 cores", seq(2), []int{3, 2}, 0, [][]int{{0}, {1}}, 1, true, false},
		{"explicit 2 per node on 8", seq(8), []int{2, 2}, 2, [][]int{{0, 1}, {2, 3}}, 2, false, false},
		{"explicit more than host", seq(2), []int{1}, 4, [][]int{{0, 1}}, 2, true, false},
		{"allowed set 4-7", []int{4, 5, 6, 7}, []int{2, 2}, 0, [][]int{{4, 5}, {6, 7}}, 2, false, false},
		{"no cpus", nil, []int{1}, 0, nil, 0, false, true},
		{"negative", seq(2), []int{1}, -1, nil, 0, false, true},
	} {
		got, per, over, err := AssignCPUs(tc.host, tc.ppn, tc.cpn)
		if (err != nil) != tc.isErr {
			t.Errorf("%s: err = %v", tc.name, err)
			continue
		}
		if err != nil {
			continue
		}
		if !reflect.DeepEqual(got, tc.want) || per != tc.per || over != tc.over {
			t.Errorf("%s: got %v per %d over %v; want %v per %d over %v", tc.name, got, per, over, tc.want, tc.per, tc.over)
		}
	}
}

func TestCPUMap(t *testing.T) {
	m := EncodeCPUMap([]string{"node1", "node2"}, [][]int{{0, 1}, {2, 5}})
	if m != "node1=0-1;node2=2,5" {
		t.Fatalf("EncodeCPUMap = %q", m)
	}
	if c, ok := LookupCPUMap(m, "node2"); !ok || c != "2,5" {
		t.Errorf("LookupCPUMap node2 = %q %v", c, ok)
	}
	if _, ok := LookupCPUMap(m, "node3"); ok {
		t.Error("LookupCPUMap found node3")
	}
}

const agent = "/opt/bin/dpmlrun " + AgentArg

func TestBuildEmulated(t *testing.T) {
	common := func(extra ...string) []string {
		return append([]string{"--map-by", "slot", "--bind-to", "none",
			"--mca", "plm", "rsh",
			"--mca", "plm_rsh_agent", agent,
			"--mca", "plm_rsh_no_tree_spawn", "1",
			"--mca", "btl", "self,vader,tcp",
			"--mca", "btl_tcp_if_include", "lo",
			"--mca", "oob_tcp_if_include", "lo"}, extra...)
	}
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
			name: "2x2 on 2 cores, root",
			o: Options{PPN: []int{2, 2}, HostCPUs: []int{0, 1}, Agent: agent, Root: true, Job: "abc",
				TmpBase: "/tmp/dpmlrun-abc-1", VaderDir: "/dev/shm/dpml-abc-ompi", Prog: []string{"./prog", "x"}},
			argv: cat([]string{"mpirun", "--allow-run-as-root", "-np", "4", "--host", "node1:2,node2:2"},
				common("--mca", "orte_tmpdir_base", "/tmp/dpmlrun-abc-1",
					"--mca", "btl_vader_backing_directory", "/dev/shm/dpml-abc-ompi",
					"--oversubscribe", "--mca", "mpi_yield_when_idle", "1",
					"-x", "DPML_RUN_NODES=2", "-x", "DPML_RUN_PPN=2", "-x", "DPML_JOB=abc", "./prog", "x")),
			env: []string{"DPML_RUN_CPUMAP=node1=0;node2=1"},
		},
		{
			name: "2x4 on 8 cores, not root, preload, extra",
			o: Options{PPN: []int{4, 4}, HostCPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}, Agent: agent, Job: "abc",
				Preload: "/l/libdpml.so", Extra: []string{"--tag-output"}, ExportEnv: []string{"FOO"}, Prog: []string{"./prog"}},
			argv: cat([]string{"mpirun", "-np", "8", "--host", "node1:4,node2:4"},
				common("-x", "DPML_RUN_NODES=2", "-x", "DPML_RUN_PPN=4", "-x", "DPML_JOB=abc",
					"-x", "LD_PRELOAD=/l/libdpml.so", "-x", "FOO", "--tag-output", "./prog")),
			env: []string{"DPML_RUN_CPUMAP=node1=0-3;node2=4-7"},
		},
		{
			name: "uneven 3,2 with prefix",
			o: Options{Mpirun: "/usr/bin/mpirun", PPN: []int{3, 2}, HostCPUs: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, Agent: agent,
				NodePrefix: "n", Prog: []string{"./prog"}},
			argv: cat([]string{"/usr/bin/mpirun", "-np", "5", "--host", "n1:3,n2:2"},
				common("-x", "DPML_RUN_NODES=2", "-x", "DPML_RUN_PPN=3,2", "./prog")),
			env: []string{"DPML_RUN_CPUMAP=n1=0-4;n2=5-9"},
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
}

func TestBuildErrors(t *testing.T) {
	for name, o := range map[string]Options{
		"no prog":       {PPN: []int{1}, HostCPUs: []int{0}, Agent: agent},
		"no nodes":      {HostCPUs: []int{0}, Agent: agent, Prog: []string{"p"}},
		"no agent":      {PPN: []int{1}, HostCPUs: []int{0}, Prog: []string{"p"}},
		"colon in path": {PPN: []int{1}, HostCPUs: []int{0}, Agent: "/a:b/dpmlrun x", Prog: []string{"p"}},
		"uneven hosts":  {Hostfile: "h", PPN: []int{3, 2}, Prog: []string{"p"}},
	} {
		if _, err := Build(o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestBuildHostfile(t *testing.T) {
	p, err := Build(Options{Hostfile: "hosts", Nodes: 4, PPN: []int{28, 28, 28, 28}, Root: true, Job: "j",
		Extra: []string{"--mca", "btl", "^openib"}, Prog: []string{"./prog"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"mpirun", "--allow-run-as-root", "--hostfile", "hosts", "-np", "112", "--map-by", "ppr:28:node",
		"-x", "DPML_RUN_NODES=4", "-x", "DPML_RUN_PPN=28", "-x", "DPML_JOB=j", "--mca", "btl", "^openib", "./prog"}
	if !reflect.DeepEqual(p.Argv, want) {
		t.Errorf("got  %s\nwant %s", ShellQuote(p.Argv), ShellQuote(want))
	}
	p, err = Build(Options{Hostfile: "hosts", Prog: []string{"./prog"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"mpirun", "--hostfile", "hosts", "./prog"}; !reflect.DeepEqual(p.Argv, want) {
		t.Errorf("got %q", p.Argv)
	}
}

func TestSplitArgs(t *testing.T) {
	for _, tc := range []struct {
		in          []string
		extra, prog []string
	}{
		{[]string{"./prog", "a"}, nil, []string{"./prog", "a"}},
		{[]string{"--tag-output", "--", "./prog"}, []string{"--tag-output"}, []string{"./prog"}},
		{[]string{"--", "./prog"}, nil, []string{"./prog"}},
		{[]string{"./prog", "--", "x"}, nil, []string{"./prog", "--", "x"}},
		{[]string{"-x", "A", "--", "./prog", "--", "y"}, []string{"-x", "A"}, []string{"./prog", "--", "y"}},
		{nil, nil, nil},
	} {
		e, p := SplitArgs(tc.in)
		if !reflect.DeepEqual(e, tc.extra) || !reflect.DeepEqual(p, tc.prog) {
			t.Errorf("SplitArgs(%q) = %q, %q; want %q, %q", tc.in, e, p, tc.extra, tc.prog)
		}
	}
}

func TestParseAgentArgs(t *testing.T) {
	for _, tc := range []struct {
		in        []string
		host, cmd string
		err       bool
	}{
		{[]string{"node1", " orted", "--daemonize", "-mca", "ess", `"env"`}, "node1", `orted --daemonize -mca ess "env"`, false},
		{[]string{"-x", "node2", "orted"}, "node2", "orted", false},
		{[]string{"-o", "BatchMode=yes", "-p", "22", "-l", "me", "-xT", "node3", "a", "b"}, "node3", "a b", false},
		{[]string{"-oBatchMode=yes", "-p22", "-xTl", "me", "user@node4", "cmd"}, "node4", "cmd", false},
		{[]string{"-q", "--", "-weird", "cmd"}, "-weird", "cmd", false},
		{[]string{"-x"}, "", "", true},
		{[]string{"-p"}, "", "", true},
		{[]string{"node1"}, "", "", true},
		{[]string{"node1", "  "}, "", "", true},
		{nil, "", "", true},
	} {
		h, c, err := ParseAgentArgs(tc.in)
		if (err != nil) != tc.err || h != tc.host || c != tc.cmd {
			t.Errorf("ParseAgentArgs(%q) = %q, %q, %v; want %q, %q, err=%v", tc.in, h, c, err, tc.host, tc.cmd, tc.err)
		}
	}
}

func TestAgentArgv(t *testing.T) {
	a := AgentArgv("/usr/bin/unshare", "node2", "1", true, "orted -x")
	if want := []string{"/usr/bin/unshare", "--uts", "sh", "-c", agentScript, "node2", "1", "orted -x"}; !reflect.DeepEqual(a, want) {
		t.Errorf("root: %q", a)
	}
	a = AgentArgv("unshare", "node2", "", false, "c")
	if !reflect.DeepEqual(a[:4], []string{"unshare", "--user", "--map-root-user", "--uts"}) {
		t.Errorf("non-root: %q", a)
	}
}

// TestAgentScript runs the agent's shell script without the namespace
// (sh -c SCRIPT host cpus cmd with "hostname" shadowed) to check its
// quoting: the command must reach the inner shell intact.
func TestAgentScript(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "hostname")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"set-host $1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Skip("no taskset")
	}
	cmd := exec.Command("sh", "-c", agentScript, "nodeX", FormatCPUList(HostCPUs()), `echo "a  b" 'c'; echo $((1+2))`)
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got, want := string(out), "set-host nodeX\na  b c\n3\n"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

func TestShellQuote(t *testing.T) {
	got := ShellQuote([]string{"mpirun", "a b", "it's", "", "x=1,2"})
	if want := `mpirun 'a b' 'it'\''s' '' x=1,2`; got != want {
		t.Errorf("got %s", got)
	}
}

func TestSweepJob(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DPML_SHM_DIR", dir)
	for _, n := range []string{"dpml-tok123-a", "dpml-tok123-b", "dpml-other-a", "x"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "dpml-tok123-ompi"), 0o700); err != nil {
		t.Fatal(err)
	}
	removed := SweepJob("tok123")
	if len(removed) != 3 {
		t.Errorf("removed %v", removed)
	}
	left, _ := os.ReadDir(dir)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "dpml-other-a x" {
		t.Errorf("left %v", names)
	}
	if SweepJob("") != nil {
		t.Error("empty job swept")
	}
}

func TestUserMCAReplacesDefaults(t *testing.T) {
	tests := []struct {
		extra      []string
		want, lose string // a value that must appear, one that must not
	}{
		{[]string{"--mca", "btl", "self,tcp"}, "self,tcp", "self,vader,tcp"},
		{[]string{"-mca", "btl_tcp_if_include", "eth0"}, "eth0", "lo"},
		{nil, "self,vader,tcp", ""},
	}
	for _, tc := range tests {
		p, err := Build(Options{PPN: []int{2, 2}, HostCPUs: []int{0, 1}, Agent: "/bin/dpmlrun __a__", Extra: tc.extra, Prog: []string{"./p"}})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for i, a := range p.Argv {
			if a == tc.want {
				n++
			}
			if tc.lose != "" && a == tc.lose && i > 0 && p.Argv[i-1] != "oob_tcp_if_include" {
				t.Errorf("extra %v: default %q still present: %v", tc.extra, tc.lose, p.Argv)
			}
		}
		if n != 1 {
			t.Errorf("extra %v: %q appears %d times in %v", tc.extra, tc.want, n, p.Argv)
		}
	}
}

// TestLayoutBounds: layouts that would make dpmlrun allocate without end
// are errors (found by FuzzParsePPN).
func TestLayoutBounds(t *testing.T) {
	for _, tc := range []struct {
		nodes int
		ppn   string
	}{{1000000000, "1"}, {5000, "1"}, {2, "40000"}, {0, "70000"}, {0, "99999999999999999999"}, {-1, "2"}} {
		if got, err := ParsePPN(tc.nodes, tc.ppn); err == nil {
			t.Errorf("ParsePPN(%d, %q) = %d nodes: want an error", tc.nodes, tc.ppn, len(got))
		}
	}
	for _, s := range []string{"0-99999999", "70000", "1-0", "-1", "a", strings.Repeat("1,", 5000) + "1"} {
		if got, err := ParseCPUList(s); err == nil {
			t.Errorf("ParseCPUList(%q) = %d cpus: want an error", trim(s), len(got))
		}
	}
}

// FuzzParsePPN: the dpmlrun layout parser never panics, stays within its
// bounds, and FormatPPN round-trips what it accepts.
func FuzzParsePPN(f *testing.F) {
	for _, s := range []string{"2", "3,2", " 4 ", "0", "-1", "1,,2", "99999999999999999999", "65536", "2,2,2,2", "1x2"} {
		f.Add(2, s)
		f.Add(0, s)
	}
	f.Add(1000000000, "1")
	f.Fuzz(func(t *testing.T, nodes int, s string) {
		ppn, err := ParsePPN(nodes, s)
		if err != nil {
			return
		}
		if len(ppn) == 0 || len(ppn) > MaxNodes || Sum(ppn) > MaxRanks {
			t.Fatalf("ParsePPN(%d, %q) = %d nodes, %d ranks: out of bounds", nodes, s, len(ppn), Sum(ppn))
		}
		for _, p := range ppn {
			if p < 1 || p > MaxRanks {
				t.Fatalf("ParsePPN(%d, %q): ppn %d", nodes, s, p)
			}
		}
		back, err := ParsePPN(len(ppn), FormatPPN(ppn))
		if err != nil || !slices.Equal(back, ppn) {
			t.Fatalf("round trip %v -> %q -> %v, %v", ppn, FormatPPN(ppn), back, err)
		}
	})
}

// FuzzParseCPUList: sorted distinct CPUs within bounds; FormatCPUList
// round-trips.
func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0-3,8,10-11", "0", "3,1,2", "1-0", "0-99999999", "", " 5 ", "0-65535"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseCPUList(s)
		if err != nil {
			return
		}
		for i, c := range cpus {
			if c < 0 || c > MaxCPU || i > 0 && c <= cpus[i-1] {
				t.Fatalf("ParseCPUList(%q) = %v: not sorted, distinct and in range", s, cpus)
			}
		}
		back, err := ParseCPUList(FormatCPUList(cpus))
		if err != nil || !slices.Equal(back, cpus) {
			t.Fatalf("round trip %v -> %q -> %v, %v", cpus, FormatCPUList(cpus), back, err)
		}
	})
}

func TestMainVersion(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string // prefix
		stderr string // substring
	}{
		{[]string{"-version"}, 0, "dpmlrun ", ""},
		{[]string{"-version", "-nodes", "2", "-ppn", "2", "--", "./prog"}, 0, "dpmlrun ", ""},
		{[]string{"-nodes", "2", "-ppn", "2"}, 2, "", "dpmlrun: no program to run"},
		{[]string{"-h"}, 0, "", "dpmlrun -version"},
	} {
		var o, e bytes.Buffer
		code := Main(tc.args, &o, &e)
		if code != tc.code || !strings.HasPrefix(o.String(), tc.stdout) || !strings.Contains(e.String(), tc.stderr) {
			t.Errorf("dpmlrun %q: exit %d, stdout %q, stderr %q; want %d, stdout %q..., stderr with %q",
				tc.args, code, o.String(), e.String(), tc.code, tc.stdout, tc.stderr)
		}
		if tc.stdout != "" && (strings.Count(o.String(), "\n") != 1 || !strings.Contains(o.String(), "vector kernels")) {
			t.Errorf("dpmlrun %q: version line %q", tc.args, o.String())
		}
	}
}
