package config

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Scope says on which set of processes a variable must have the same value.
type Scope int

const (
	// PerRank settings may differ from rank to rank.
	PerRank Scope = iota
	// PerNode settings must be equal on all ranks of a node.
	PerNode
	// AllRanks settings must be equal on all ranks of the job.
	AllRanks
)

func (s Scope) String() string {
	switch s {
	case PerRank:
		return "per rank"
	case PerNode:
		return "equal on all ranks of a node"
	case AllRanks:
		return "must be equal on all ranks"
	}
	return fmt.Sprintf("Scope(%d)", int(s))
}

// Kind is the value type of a variable.
type Kind int

const (
	KindString Kind = iota
	KindInt
	KindBool
	KindDuration
	KindBytes
)

func (k Kind) String() string {
	return [...]string{"string", "int", "bool", "duration", "bytes"}[k]
}

// Var describes one environment variable.
type Var struct {
	Name    string
	Kind    Kind
	Default string
	Scope   Scope
	Users   string // which parts of DPML-Go read it
	Doc     string
}

// Names of the variables, as constants so a typo is a compile error.
const (
	GoSched      = "DPML_GOSCHED"
	Intra        = "DPML_INTRA"
	Leaders      = "DPML_LEADERS"
	Pipeline     = "DPML_PIPELINE"
	SegmentBytes = "DPML_SEGMENT_BYTES"
	StreamBytes  = "DPML_STREAM_BYTES"
	Timeout      = "DPML_TIMEOUT"
	Spin         = "DPML_SPIN"
	Verbose      = "DPML_VERBOSE"
	TuningFile   = "DPML_TUNING_FILE"
	Tuner        = "DPML_TUNER"
	ShmDir       = "DPML_SHM_DIR"
	Job          = "DPML_JOB"
	Disable      = "DPML_DISABLE"
	DropinFrom   = "DPML_DROPIN_FROM_CALL"
	Demote       = "DPML_DEMOTE"
	MinBytes     = "DPML_MIN_BYTES"
	MPITest      = "DPML_MPITEST"
	NodeSplit    = "DPML_NODE_SPLIT"
	MPITestLimit = "DPML_MPITEST_TIMEOUT"
	RunCPUMap    = "DPML_RUN_CPUMAP"
	RunNodes     = "DPML_RUN_NODES"
	RunPPN       = "DPML_RUN_PPN"
	TreeBytes    = "DPML_TREE_BYTES"
	TreeRadix    = "DPML_TREE_RADIX"
)

// Vars is the table. Keep it sorted by name; TestTableSorted checks.
var Vars = []Var{
	{Name: Demote, Kind: KindBool, Default: "false", Scope: PerRank, Users: "engine",
		Doc: "Experimental: after writing its slot (copy-in) or its reduced partition, a rank issues CLDEMOTE for those cache lines, a hint that moves them towards the shared last-level cache where the cores that read them next find them without a snoop. A no-op on CPUs without CLDEMOTE; results are unchanged. Not measured yet: off by default."},
	{Name: Disable, Kind: KindBool, Default: "0", Scope: AllRanks, Users: "libdpml.so",
		Doc: "Pass every MPI_Allreduce of the drop-in library straight to the MPI library."},
	{Name: DropinFrom, Kind: KindInt, Default: "1", Scope: AllRanks, Users: "libdpml.so",
		Doc: "The drop-in library sets up DPML on a communicator at its n-th eligible MPI_Allreduce; the calls before pass through to the MPI library. Raise it when a program makes many short-lived communicators that each see only a few calls (setup is several collectives)."},
	{Name: GoSched, Kind: KindString, Default: "auto", Scope: PerRank, Users: "mpi (Go programs)",
		Doc: "How package mpi keeps the Go scheduler off a core-bound rank's core (package doc of mpi, \"The Go scheduler\"): `auto` (both measures), `pace` (MPI calls let the calling goroutine yield every few ms, so the runtime's monitor never finds it in an MPI call with a stale scheduling tick and takes its P away), `procs` (Init raises GOMAXPROCS from 1 to 2, so a short MPI call's P is left alone), `off` (neither: what Go programs did before). Applies only when mpi.Init initializes MPI, not in the drop-in library."},
	{Name: Intra, Kind: KindString, Default: "auto", Scope: AllRanks, Users: "engine",
		Doc: "Intra-node data path: `shm` (copies through the node segment), `cma` (leaders read and write the ranks' buffers with process_vm_readv/writev; falls back to shm where the kernel forbids it), `tree` (the small-message reduction tree, one leader; messages larger than a slot fall back to shm) or `auto` (the tuner picks per size; without the tuner, shm). Setting it takes calls out of the tuner's hands."},
	{Name: Job, Kind: KindString, Default: "x", Scope: PerNode, Users: "engine, dpmlrun",
		Doc: "Job token put in shared-memory segment names (`dpml-<job>-<random>`). dpmlrun sets it and removes any segment of its job after the run, so even a crashed run leaves nothing in /dev/shm."},
	{Name: Leaders, Kind: KindString, Default: "auto", Scope: AllRanks, Users: "engine",
		Doc: "Leaders per node `l` (1 .. smallest ppn), or `auto`. Forces the plan of every call that has no per-call override."},
	{Name: MinBytes, Kind: KindBytes, Default: "0", Scope: AllRanks, Users: "libdpml.so",
		Doc: "Calls of the drop-in library smaller than this many bytes pass through to the MPI library."},
	{Name: MPITest, Kind: KindString, Default: "", Scope: AllRanks, Users: "tests",
		Doc: "Internal: set by the multi-rank test harness in the ranks it launches. Never set it by hand."},
	{Name: MPITestLimit, Kind: KindDuration, Default: "120s", Scope: AllRanks, Users: "tests",
		Doc: "Bound of one multi-rank test run (internal/mpitest); the job is killed after it."},
	{Name: NodeSplit, Kind: KindString, Default: "shared", Scope: AllRanks, Users: "engine, dpmlbench, apps",
		Doc: "How ranks are grouped into nodes: `shared` (MPI_Comm_split_type SHARED) or `host` (by MPI_Get_processor_name). `host` sidesteps MPI libraries whose notion of locality is wrong for the emulated nodes."},
	{Name: Pipeline, Kind: KindString, Default: "auto", Scope: AllRanks, Users: "engine",
		Doc: "Sub-chunks `k` per leader in the inter-node phase (DPML-Pipelined), or `auto`."},
	{Name: RunCPUMap, Kind: KindString, Default: "", Scope: PerNode, Users: "dpmlrun",
		Doc: "Internal: the cores of each fake node (`node1=0-7;node2=8-15`), passed by dpmlrun to its launch agent."},
	{Name: RunNodes, Kind: KindInt, Default: "", Scope: AllRanks, Users: "dpmlrun, tests",
		Doc: "Set by dpmlrun in every rank: the number of fake nodes."},
	{Name: RunPPN, Kind: KindString, Default: "", Scope: AllRanks, Users: "dpmlrun, tests",
		Doc: "Set by dpmlrun in every rank: ranks per fake node (`2`, or `3,2` for uneven layouts)."},
	{Name: SegmentBytes, Kind: KindBytes, Default: "1M", Scope: AllRanks, Users: "engine",
		Doc: "Largest message slice (bytes) the engine moves through shared memory at once. Larger messages are cut into segments that are pipelined: the inter-node phase of one segment overlaps the intra-node phases of the next. The node segment holds two such slices per local rank plus two results."},
	{Name: ShmDir, Kind: KindString, Default: "/dev/shm", Scope: PerNode, Users: "engine",
		Doc: "Directory (a tmpfs) where node segments are created."},
	{Name: Spin, Kind: KindInt, Default: "4000", Scope: PerRank, Users: "engine",
		Doc: "Polls of a shared-memory flag before a waiting rank starts yielding its core."},
	{Name: StreamBytes, Kind: KindString, Default: "auto", Scope: AllRanks, Users: "engine",
		Doc: "Copy-out writes the receive buffer with non-temporal (streaming) stores once a call's bytes times the node's ranks reach this many bytes: results that cannot stay in the last-level cache are not first read in from memory. `auto`: the last-level cache size (32M when unknown); `off`: never."},
	{Name: Timeout, Kind: KindDuration, Default: "60s", Scope: PerRank, Users: "engine",
		Doc: "How long a rank waits for a peer on a shared-memory flag before the call fails with an error (a dead peer never hangs the job). Negative: wait forever."},
	{Name: TreeBytes, Kind: KindBytes, Default: "4K", Scope: AllRanks, Users: "engine",
		Doc: "Messages up to this many bytes (at most one shared-memory slot) take the small-message reduction tree when neither the caller nor the tuner chose a plan: each rank folds its tree children's partials into its own and hands it to its parent, the root runs the inter-node step and releases the node. Up to 56 bytes the data travels inside the flags' cache lines."},
	{Name: TreeRadix, Kind: KindInt, Default: "8", Scope: AllRanks, Users: "engine",
		Doc: "Children per parent inside a NUMA domain of the small-message reduction tree (1..64); domains and sockets are joined at their first ranks."},
	{Name: Tuner, Kind: KindString, Default: "auto", Scope: AllRanks, Users: "engine",
		Doc: "Plan selection: `auto` (cost model + online learner), `model` (cost model only), `static` (built-in table only)."},
	{Name: TuningFile, Kind: KindString, Default: "", Scope: AllRanks, Users: "engine, dpmlbench",
		Doc: "JSON tuning table to start from (and to save to at Close when writable)."},
	{Name: Verbose, Kind: KindInt, Default: "0", Scope: PerRank, Users: "all",
		Doc: "1: print the effective settings and each new plan choice on rank 0; 2: also per-call decisions."},
}

// Get returns the variable's value, or its default when unset or empty.
// It returns an error for a name missing from the table: reading an
// undeclared variable is a bug.
func Get(name string) (string, error) {
	v, ok := find(name)
	if !ok {
		return "", fmt.Errorf("config: %s is not declared in config.Vars", name)
	}
	if s := strings.TrimSpace(os.Getenv(name)); s != "" {
		return s, nil
	}
	return v.Default, nil
}

// IsSet reports whether the variable is set to a non-empty value.
func IsSet(name string) bool { return strings.TrimSpace(os.Getenv(name)) != "" }

// Int parses an int variable.
func Int(name string) (int, error) {
	s, err := Get(name)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("config: %s=%q: not an integer", name, s)
	}
	return n, nil
}

// Bool parses a bool variable (1/0, true/false, yes/no, on/off).
func Bool(name string) (bool, error) {
	s, err := Get(name)
	if err != nil {
		return false, err
	}
	switch strings.ToLower(s) {
	case "1", "true", "yes", "on":
		return true, nil
	case "0", "false", "no", "off", "":
		return false, nil
	}
	return false, fmt.Errorf("config: %s=%q: not a boolean", name, s)
}

// Duration parses a duration variable ("60s", "500ms"; a bare number is seconds).
func Duration(name string) (time.Duration, error) {
	s, err := Get(name)
	if err != nil {
		return 0, err
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("config: %s=%q: not a duration", name, s)
	}
	return d, nil
}

// Bytes parses a byte-count variable.
func Bytes(name string) (int64, error) {
	s, err := Get(name)
	if err != nil {
		return 0, err
	}
	n, err := ParseBytes(s)
	if err != nil {
		return 0, fmt.Errorf("config: %s: %w", name, err)
	}
	return n, nil
}

// IntOrAuto parses a variable that holds a positive int or "auto" (returned as 0).
func IntOrAuto(name string) (int, error) {
	s, err := Get(name)
	if err != nil {
		return 0, err
	}
	if strings.EqualFold(s, "auto") {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("config: %s=%q: want a positive integer or auto", name, s)
	}
	return n, nil
}

// ParseBytes parses "4096", "64K", "4M", "1G" (binary units, optional "iB"/"B").
func ParseBytes(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "IB"), "B")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult, t = 1<<10, t[:n-1]
		case 'M':
			mult, t = 1<<20, t[:n-1]
		case 'G':
			mult, t = 1<<30, t[:n-1]
		}
	}
	v, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a byte count", s)
	}
	return v * mult, nil
}

// Effective lists every variable with its effective value, for DPML_VERBOSE.
func Effective() string {
	var b strings.Builder
	for _, v := range Vars {
		val, _ := Get(v.Name)
		src := "default"
		if IsSet(v.Name) {
			src = "env"
		}
		fmt.Fprintf(&b, "%s=%s (%s)\n", v.Name, val, src)
	}
	return b.String()
}

func find(name string) (Var, bool) {
	i := sort.Search(len(Vars), func(i int) bool { return Vars[i].Name >= name })
	if i < len(Vars) && Vars[i].Name == name {
		return Vars[i], true
	}
	return Var{}, false
}

// Markdown renders the table as the documentation page.
func Markdown() string {
	var b strings.Builder
	b.WriteString("# Environment variables\n\n")
	b.WriteString("Generated from `config.Vars` by `go generate ./config`; do not edit.\n")
	b.WriteString("Scope says where a value must agree: a setting that shapes the collective must be equal on all ranks.\n\n")
	b.WriteString("| variable | type | default | scope | read by | meaning |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
	for _, v := range Vars {
		def := v.Default
		if def == "" {
			def = "(unset)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s | %s | %s |\n", v.Name, v.Kind, def, v.Scope, v.Users, v.Doc)
	}
	return b.String()
}
