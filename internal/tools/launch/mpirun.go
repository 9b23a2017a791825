package launch

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dpmlgo/dpml/config"
)

// Environment variables dpmlrun sets.
const (
	// EnvNodes tells the ranks how many (fake) nodes the job has.
	EnvNodes = config.RunNodes
	// EnvPPN tells the ranks the ranks per node: "2", or "3,2" when uneven.
	EnvPPN = config.RunPPN
	// EnvJob is the job token (config.Job); the engine puts it in its
	// shared-memory segment names and dpmlrun removes dpml-<token>* after
	// the run.
	EnvJob = config.Job
	// EnvCPUMap carries the fake nodes' CPU lists from dpmlrun through
	// mpirun's environment to the agent. Internal.
	EnvCPUMap = config.RunCPUMap
)

// AgentArg is the hidden first argument that makes dpmlrun act as Open
// MPI's rsh launch agent. Open MPI splits the plm_rsh_agent value at spaces
// and searches the first word in PATH, so "<abs path of dpmlrun> AgentArg"
// runs dpmlrun in agent mode.
const AgentArg = "__dpmlrun_agent__"

// Options describe one launch. Either Hostfile is set (real cluster) or
// the job is emulated on PPN's fake nodes on this host.
type Options struct {
	// Flavor is the MPI whose launcher runs the job ("": Open MPI).
	Flavor Flavor
	// Mpirun is argv[0] of the command (default "mpirun", or
	// "mpiexec.hydra" for MPICH).
	Mpirun string
	// PPN is the ranks per node, one entry per node (emulation). In
	// hostfile mode it may be nil (Open MPI's default mapping) or hold
	// equal counts.
	PPN []int
	// Nodes is the node count in hostfile mode (0: unknown, let the
	// hostfile decide the rank count).
	Nodes int
	// CoresPerNode is the cores of each fake node (0: auto).
	CoresPerNode int
	// HostCPUs are the CPUs to distribute among fake nodes.
	HostCPUs []int
	// Hostfile switches to plain mpirun on a real cluster.
	Hostfile string
	// Preload is exported to the ranks as LD_PRELOAD.
	Preload string
	// Extra are extra mpirun arguments, put just before the program.
	Extra []string
	// Prog is the program and its arguments.
	Prog []string
	// Agent is the plm_rsh_agent value ("/abs/dpmlrun __dpmlrun_agent__").
	Agent string
	// AgentExec is Hydra's -launcher-exec: one executable file, the
	// script HydraAgentScript writes (MPICH).
	AgentExec string
	// YieldLib is the yield shim preloaded into the ranks of an
	// oversubscribed MPICH job (see YieldLib); "" for none.
	YieldLib string
	// Root adds --allow-run-as-root.
	Root bool
	// Job is the job token (DPML_JOB).
	Job string
	// TmpBase, when set, becomes Open MPI's session directory base
	// (orte_tmpdir_base) so dpmlrun can remove whatever a crash leaves.
	TmpBase string
	// VaderDir, when set, is where vader puts its shared-memory backing
	// files (btl_vader_backing_directory), for the same reason.
	VaderDir string
	// NodePrefix names the fake hosts (default "node": node1, node2, ...).
	NodePrefix string
	// ExportEnv are names of environment variables to pass to the ranks
	// with -x NAME (their values come from mpirun's environment).
	ExportEnv []string
}

// Plan is a built mpirun invocation.
type Plan struct {
	Argv []string // full command, Argv[0] is mpirun
	// Env holds NAME=value pairs to add to mpirun's environment (read by
	// the agent, not exported to the ranks).
	Env            []string
	Hosts          []string // fake host names (emulation)
	CPUs           [][]int  // each fake host's CPUs
	CoresPerNode   int
	Oversubscribed bool
	Ranks          int
}

// Build makes the mpirun (Open MPI) or mpiexec (MPICH's Hydra) command
// line. It does no I/O.
func Build(o Options) (*Plan, error) {
	if len(o.Prog) == 0 {
		return nil, fmt.Errorf("no program to run (usage: dpmlrun -nodes H -ppn P -- prog args...)")
	}
	mpirun := o.Mpirun
	if o.Flavor == MPICH {
		if mpirun == "" {
			mpirun = "mpiexec.hydra"
		}
		if o.Hostfile != "" {
			return buildHydraHostfile(o, mpirun)
		}
		return buildHydraEmulated(o, mpirun)
	}
	if mpirun == "" {
		mpirun = "mpirun"
	}
	if o.Hostfile != "" {
		return buildHostfile(o, mpirun)
	}
	return buildEmulated(o, mpirun)
}

func buildEmulated(o Options, mpirun string) (*Plan, error) {
	if len(o.PPN) == 0 {
		return nil, fmt.Errorf("no nodes")
	}
	if o.Agent == "" {
		return nil, fmt.Errorf("no launch agent")
	}
	if strings.ContainsAny(o.Agent, ":\"'\\") {
		return nil, fmt.Errorf("launch agent %q: the path of dpmlrun must not contain ':' or quotes (Open MPI splits the agent at ':')", o.Agent)
	}
	f, err := layFakeNodes(o)
	if err != nil {
		return nil, err
	}
	hostArg, over, n := f.hostArg, f.over, f.ranks
	a := []string{mpirun}
	if o.Root {
		a = append(a, "--allow-run-as-root")
	}
	a = append(a,
		"-np", strconv.Itoa(n),
		"--host", strings.Join(hostArg, ","),
		"--map-by", "slot",
		"--bind-to", "none",
		"--mca", "plm", "rsh",
		"--mca", "plm_rsh_agent", o.Agent,
		"--mca", "plm_rsh_no_tree_spawn", "1",
	)
	// Defaults the user may replace with their own --mca NAME in the extra
	// arguments (Open MPI refuses a parameter given twice).
	user := userMCA(o.Extra)
	mca := func(name, value string) {
		if !user[name] {
			a = append(a, "--mca", name, value)
		}
	}
	mca("btl", "self,vader,tcp")
	mca("btl_tcp_if_include", "lo")
	mca("oob_tcp_if_include", "lo")
	if o.TmpBase != "" {
		mca("orte_tmpdir_base", o.TmpBase)
	}
	if o.VaderDir != "" {
		mca("btl_vader_backing_directory", o.VaderDir)
	}
	if over {
		a = append(a, "--oversubscribe")
		mca("mpi_yield_when_idle", "1")
	}
	a = appendEnv(a, o, len(o.PPN), FormatPPN(o.PPN))
	a = append(a, o.Extra...)
	a = append(a, o.Prog...)
	return f.plan(a), nil
}

func buildHostfile(o Options, mpirun string) (*Plan, error) {
	a := []string{mpirun}
	if o.Root {
		a = append(a, "--allow-run-as-root")
	}
	a = append(a, "--hostfile", o.Hostfile)
	ppn, ranks, err := hostfileRanks(o)
	if err != nil {
		return nil, err
	}
	if ppn != "" {
		if ranks > 0 {
			a = append(a, "-np", strconv.Itoa(ranks))
		}
		a = append(a, "--map-by", "ppr:"+ppn+":node")
	}
	a = appendEnv(a, o, o.Nodes, ppn)
	a = append(a, o.Extra...)
	a = append(a, o.Prog...)
	return &Plan{Argv: a, Ranks: ranks}, nil
}

// userMCA lists the MCA parameters set in extra mpirun arguments.
func userMCA(extra []string) map[string]bool {
	m := map[string]bool{}
	for i := 0; i+1 < len(extra); i++ {
		if extra[i] == "--mca" || extra[i] == "-mca" {
			m[extra[i+1]] = true
			i++
		}
	}
	return m
}

func appendEnv(a []string, o Options, nodes int, ppn string) []string {
	if nodes > 0 {
		a = append(a, "-x", EnvNodes+"="+strconv.Itoa(nodes))
	}
	if ppn != "" {
		a = append(a, "-x", EnvPPN+"="+ppn)
	}
	if o.Job != "" {
		a = append(a, "-x", EnvJob+"="+o.Job)
	}
	if o.Preload != "" {
		a = append(a, "-x", "LD_PRELOAD="+o.Preload)
	}
	for _, name := range o.ExportEnv {
		a = append(a, "-x", name)
	}
	return a
}

// SplitArgs splits what follows dpmlrun's flags (the "--" that ended flag
// parsing is already consumed) into extra mpirun arguments and the
// program. "extra... -- prog args..." is recognised when the first word
// starts with '-' (a program name never does) and a "--" follows; a
// leading "--" means no extra arguments. Otherwise everything is the
// program, so a program may take "--" among its own arguments.
func SplitArgs(rest []string) (extra, prog []string) {
	if len(rest) == 0 {
		return nil, nil
	}
	if rest[0] == "--" {
		return nil, rest[1:]
	}
	if strings.HasPrefix(rest[0], "-") {
		for i, w := range rest {
			if w == "--" {
				return rest[:i], rest[i+1:]
			}
		}
	}
	return nil, rest
}

// ShellQuote renders argv as a command a POSIX shell would run unchanged.
func ShellQuote(argv []string) string {
	out := make([]string, len(argv))
	for i, w := range argv {
		out[i] = quoteWord(w)
	}
	return strings.Join(out, " ")
}

func quoteWord(w string) string {
	if w == "" {
		return "''"
	}
	safe := true
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,+@%^", r)) {
			safe = false
			break
		}
	}
	if safe {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// fakeNodes is what both launchers' emulation starts from: the fake host
// names, the "host:ranks" list both launchers take, and the CPUs each
// rank is given.
type fakeNodes struct {
	hosts, hostArg []string
	cpus           [][]int
	perNode        int
	over           bool // oversubscribed
	ranks          int
}

// layFakeNodes names o's fake nodes (NodePrefix, "node" by default) and
// assigns their CPUs.
func layFakeNodes(o Options) (fakeNodes, error) {
	prefix := o.NodePrefix
	if prefix == "" {
		prefix = "node"
	}
	var f fakeNodes
	var err error
	f.cpus, f.perNode, f.over, err = AssignCPUs(o.HostCPUs, o.PPN, o.CoresPerNode)
	if err != nil {
		return f, err
	}
	f.hosts = NodeNames(prefix, len(o.PPN))
	f.hostArg = make([]string, len(f.hosts))
	for i, h := range f.hosts {
		f.hostArg[i] = h + ":" + strconv.Itoa(o.PPN[i])
	}
	f.ranks = Sum(o.PPN)
	return f, nil
}

// hostfileRanks is -hostfile mode's layout for both launchers: the ranks
// per node ("" when -ppn is not given) and the rank count (0 unless -nodes
// is given too). -ppn must be the same on every node.
func hostfileRanks(o Options) (ppn string, ranks int, err error) {
	if len(o.PPN) == 0 {
		return "", 0, nil
	}
	for _, p := range o.PPN {
		if p != o.PPN[0] {
			return "", 0, fmt.Errorf("-hostfile mode needs the same -ppn on every node (got %s)", FormatPPN(o.PPN))
		}
	}
	if o.Nodes > 0 {
		ranks = o.Nodes * o.PPN[0]
	}
	return strconv.Itoa(o.PPN[0]), ranks, nil
}

// plan is the launch plan of argv on these fake nodes: the CPU map the
// agent reads, and the layout the launcher reports.
func (f fakeNodes) plan(argv []string) *Plan {
	return &Plan{
		Argv:           argv,
		Env:            []string{EnvCPUMap + "=" + EncodeCPUMap(f.hosts, f.cpus)},
		Hosts:          f.hosts,
		CPUs:           f.cpus,
		CoresPerNode:   f.perNode,
		Oversubscribed: f.over,
		Ranks:          f.ranks,
	}
}
