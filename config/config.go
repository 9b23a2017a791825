package config

import (
	"fmt"
	"math"
	"os"
	"sort"
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
	// KindEnum: one of Var.Values, nothing else.
	KindEnum
)

func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return kindNames[k]
}

var kindNames = [...]string{"string", "int", "bool", "duration", "bytes", "enum"}

// Agreement says where the library compares a variable's value across
// ranks (settings whose Scope is AllRanks and that shape the collective).
// A difference is an error on every rank that names the variable and the
// values seen.
type Agreement int

const (
	// NotCompared: the library does not compare the value.
	NotCompared Agreement = iota
	// AtNew: dpml.New compares it over the communicator.
	AtNew
	// AtDropin: libdpml.so compares it at the first MPI_Allreduce of
	// each communicator.
	AtDropin
)

func (a Agreement) String() string {
	switch a {
	case AtNew:
		return "dpml.New"
	case AtDropin:
		return "libdpml.so, first call per communicator"
	}
	return "-"
}

// Var describes one environment variable.
type Var struct {
	Name    string
	Kind    Kind
	Default string
	Scope   Scope
	Users   string // which parts of DPML-Go read it
	Doc     string
	// Values are the keywords the variable takes (any case): all of its
	// values for KindEnum, words taken besides a number for KindInt and
	// KindBytes ("auto", "off"). Doc says what each means.
	Values []string
	// Min and Max bound a KindInt, KindBytes or KindDuration value (in
	// nanoseconds for durations); both zero: no bound but the type's.
	// Out-of-range values are errors.
	Min, Max int64
	// Agreed says where the library compares the value across ranks.
	Agreed Agreement
	// Class says whom the variable is for: users (the zero value), DPML's
	// own tools, or the tests only. Listings show the last two apart.
	Class Class
}

// Class says whom a variable is for.
type Class int

const (
	// User settings are for users: listed and documented first.
	User Class = iota
	// Internal variables are set by DPML's own tools (dpmlrun, the test
	// harness) in the processes they start; users read them at most.
	Internal
	// TestOnly variables are read only by the tests or by the emulated
	// SHArP switch the tests build.
	TestOnly
)

func (c Class) String() string {
	switch c {
	case User:
		return "user"
	case Internal:
		return "internal"
	case TestOnly:
		return "test only"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// Names of the variables, as constants so a typo is a compile error.
const (
	GoSched      = "DPML_GOSCHED"
	CPUProfile   = "DPML_CPUPROFILE"
	Trace        = "DPML_TRACE"
	Check        = "DPML_CHECK"
	Fused        = "DPML_FUSED"
	Intra        = "DPML_INTRA"
	Leaders      = "DPML_LEADERS"
	Pipeline     = "DPML_PIPELINE"
	SegmentBytes = "DPML_SEGMENT_BYTES"
	SegmentPool  = "DPML_SEGMENT_POOL"
	StreamBytes  = "DPML_STREAM_BYTES"
	Timeout      = "DPML_TIMEOUT"
	Spin         = "DPML_SPIN"
	Verbose      = "DPML_VERBOSE"
	TuningFile   = "DPML_TUNING_FILE"
	Tuner        = "DPML_TUNER"
	TunerStat    = "DPML_TUNER_STAT"
	TunerCost    = "DPML_TUNER_COST"
	TunerSamples = "DPML_TUNER_SAMPLES"
	TunerConfirm = "DPML_TUNER_CONFIRM"
	TunerBudget  = "DPML_TUNER_BUDGET"
	TunerRing    = "DPML_TUNER_RING"
	TunerLag     = "DPML_TUNER_LAG"
	ShmDir       = "DPML_SHM_DIR"
	Job          = "DPML_JOB"
	Disable      = "DPML_DISABLE"
	DropinFrom   = "DPML_DROPIN_FROM_CALL"
	SetupAfter   = "DPML_SETUP_AFTER"
	SetupWorld   = "DPML_SETUP_WORLD"
	Profile      = "DPML_PROFILE"
	ProfileDir   = "DPML_PROFILE_DIR"
	Demote       = "DPML_DEMOTE"
	MinBytes     = "DPML_MIN_BYTES"
	MPITest      = "DPML_MPITEST"
	NodeSplit    = "DPML_NODE_SPLIT"
	MPITestLimit = "DPML_MPITEST_TIMEOUT"
	NCCLFloor    = "DPML_NCCL_FLOOR"
	NCCLPolicy   = "DPML_NCCL_POLICY"
	NCCLTable    = "DPML_NCCL_TABLE"
	RunCPUMap    = "DPML_RUN_CPUMAP"
	RunNodes     = "DPML_RUN_NODES"
	RunPPN       = "DPML_RUN_PPN"
	TreeBytes    = "DPML_TREE_BYTES"
	TreeRadix    = "DPML_TREE_RADIX"
	Offload      = "DPML_OFFLOAD"
	OffloadBytes = "DPML_OFFLOAD_BYTES"
	OffloadLead  = "DPML_OFFLOAD_LEADERS"
	SharpLib     = "DPML_SHARP_LIB"
	FakePayload  = "DPML_FAKESHARP_PAYLOAD"
	FakeOSTs     = "DPML_FAKESHARP_OSTS"
	FakeKill     = "DPML_FAKESHARP_KILL_AFTER"
)

// Bounds of the numeric settings.
const (
	MaxLeaders      = 1 << 16 // DPML_LEADERS (New then clamps to the smallest ppn, with a warning)
	MaxPipeline     = 64      // DPML_PIPELINE
	MinSegmentBytes = 4 << 10 // DPML_SEGMENT_BYTES
	MaxSegmentBytes = 256 << 20
	MaxOffloadBytes = 1 << 20 // DPML_OFFLOAD_BYTES
)

// Vars is the table. Keep it sorted by name; TestTableSorted checks.
var Vars = []Var{
	{Name: Check, Kind: KindBool, Default: "false", Scope: AllRanks, Users: "engine", Agreed: AtNew,
		Doc: "Debug check: every allreduce first compares its element count, type, op, in-place use and forced plan across the ranks (one small extra allreduce per call) and fails with the same error on every rank when they differ, instead of computing garbage or hanging. Calls that libdpml.so passes through to the MPI library are not checked."},
	{Name: CPUProfile, Kind: KindString, Default: "", Scope: PerRank, Users: "libdpml.so",
		Doc: "Diagnostics: write a Go CPU profile (runtime/pprof) of the library's Go code in each process to this path, `%r` replaced by the rank in MPI_COMM_WORLD, from the library's start to MPI_Finalize. Samples outside Go (the application, the MPI library) show as one external-code entry. Empty: none."},
	{Name: Demote, Kind: KindBool, Default: "false", Scope: PerRank, Users: "engine",
		Doc: "Experimental: after writing its slot (copy-in) or its reduced partition, a rank issues CLDEMOTE for those cache lines, a hint that moves them towards the shared last-level cache where the cores that read them next find them without a snoop. A no-op on CPUs without CLDEMOTE; results are unchanged. Not measured yet: off by default."},
	{Name: Disable, Kind: KindBool, Default: "false", Scope: AllRanks, Users: "libdpml.so", Agreed: AtDropin,
		Doc: "Pass every MPI_Allreduce of the drop-in library straight to the MPI library (after one small allreduce per communicator that checks the ranks agree)."},
	{Name: DropinFrom, Kind: KindInt, Default: "1", Scope: AllRanks, Users: "libdpml.so", Min: 1, Max: 1<<31 - 1, Agreed: AtDropin,
		Doc: "The drop-in library sets up DPML on a communicator at its n-th eligible MPI_Allreduce; the calls before pass through to the MPI library. Raise it when a program makes many short-lived communicators that each see only a few calls (setup is several collectives)."},
	{Name: FakeKill, Kind: KindInt, Default: "0", Scope: AllRanks, Users: "tests (emulated libsharp_coll)", Min: 0, Max: 1<<31 - 1, Class: TestOnly,
		Doc: "EMULATION ONLY (the fake libsharp_coll.so that the tests build, internal/testkit/fakesharp): after completing this many operations of a group, the emulated switch process kills itself with SIGKILL as soon as the next operation has arrived from every member (0: never). That operation never completes and later ones are refused: a switch that dies mid-run."},
	{Name: FakeOSTs, Kind: KindInt, Default: "4", Scope: AllRanks, Users: "tests (emulated libsharp_coll)", Min: 1, Max: 64, Class: TestOnly,
		Doc: "EMULATION ONLY: outstanding operations per group that the fake libsharp_coll.so reports (caps osts_per_group) and enforces: one more is refused with an error."},
	{Name: FakePayload, Kind: KindBytes, Default: "1K", Scope: AllRanks, Users: "tests (emulated libsharp_coll)", Min: 8, Max: 64 << 10, Class: TestOnly,
		Doc: "EMULATION ONLY: payload per operation that the fake libsharp_coll.so reports (caps user_data_per_ost) and enforces: a larger operation is refused with an error (the real library would split it; the emulation refuses, to prove the caller splits)."},
	{Name: Fused, Kind: KindBool, Default: "true", Scope: AllRanks, Users: "engine, libdpml.so", Agreed: AtNew,
		Doc: "Small-message calls whose plan is one reduction tree over the node (one segment, at most 1 KiB) run the tree's protocol as one C routine: a Go program makes one cgo call per call, and libdpml.so runs the calls of a fixed or settled plan without entering Go at all. `false` runs them as the Go executor's steps instead (Go waits, the same C fold called step by step), the other call path the tests compare the C routine with; the results are the same bits either way."},
	{Name: GoSched, Kind: KindString, Default: "auto", Scope: PerRank, Users: "engine (Go programs), libdpml.so",
		Doc: "How the engine keeps the Go scheduler off a core-bound rank's core (package internal/runtime/gosched): `auto` (both measures; libdpml.so stops pacing once it has moved the Go runtime's own threads to SCHED_IDLE, since a callback's yield costs two thread switches), `pace` (MPI calls let the calling goroutine yield every few ms, so the runtime's monitor never finds it in an MPI call with a stale scheduling tick and takes its P away; in libdpml.so the Go runtime's own threads also move to SCHED_IDLE), `procs` (GOMAXPROCS 1 becomes 2, so a short MPI call's P is left alone), `off` (neither). Applied once per process, at the first dpml.New, and in the drop-in library (a C program's MPI: its calls into Go look to the runtime like one long system call; DPML_VERBOSE=1 prints what was applied)."},
	{Name: Intra, Kind: KindEnum, Default: "auto", Scope: AllRanks, Users: "engine", Values: []string{"auto", "shm", "cma", "tree"}, Agreed: AtNew,
		Doc: "Intra-node data path: `shm` (copies through the node segment), `cma` (leaders read and write the ranks' buffers with process_vm_readv/writev; falls back to shm where the kernel forbids it), `tree` (the tree transport, where the engine has it) or `auto` (the tuner picks per size; without the tuner, shm). Setting it takes calls out of the tuner's hands."},
	{Name: Job, Kind: KindString, Default: "x", Scope: PerNode, Users: "engine, dpmlrun",
		Doc: "Job token put in shared-memory segment names (`dpml-<job>-<random>`). dpmlrun sets it and removes any segment of its job after the run, so even a crashed run leaves nothing in /dev/shm."},
	{Name: Leaders, Kind: KindInt, Default: "auto", Scope: AllRanks, Users: "engine", Values: []string{"auto"}, Min: 1, Max: MaxLeaders, Agreed: AtNew,
		Doc: "Leaders per node `l`, or `auto`. Forces the plan of every call that has no per-call override. More than the smallest node's ranks is clamped to that number, with a warning on rank 0."},
	{Name: MinBytes, Kind: KindBytes, Default: "0", Scope: AllRanks, Users: "libdpml.so", Agreed: AtDropin,
		Doc: "Calls of the drop-in library smaller than this many bytes pass through to the MPI library."},
	{Name: MPITest, Kind: KindString, Default: "", Scope: AllRanks, Users: "tests", Class: Internal,
		Doc: "Internal: set by the multi-rank test harness in the ranks it launches. Never set it by hand."},
	{Name: MPITestLimit, Kind: KindDuration, Default: "120s", Scope: AllRanks, Users: "tests", Min: int64(time.Second), Max: int64(MaxDuration), Class: TestOnly,
		Doc: "Bound of one multi-rank test run (internal/testkit/mpitest); the job is killed after it."},
	{Name: NCCLFloor, Kind: KindInt, Default: "auto", Scope: AllRanks, Users: "libdpml-nccl-tuner.so (preloaded)", Values: []string{"auto", "off"}, Min: 1, Max: 64,
		Doc: "Channel floor of the NCCL communicators created while libdpml-nccl-tuner.so is preloaded (`LD_PRELOAD`, next to `NCCL_TUNER_PLUGIN`). NCCL fixes a communicator's channels when it creates it, before it loads the tuner plugin, and caps every call at them; the plugin's per-call channel answers above NCCL's own count take effect only on a communicator created with more. The preloaded library therefore calls NCCL's ncclCommInitRank, ncclCommInitRankConfig, ncclCommInitRankScalable and ncclCommInitAll with a copy of the caller's config whose minCTAs is the floor (maxCTAs 64). `auto`: the floor of the plugin's data for this machine (the built-in data for the GPU count, model and link; with `DPML_NCCL_TABLE`, the table's largest channel answer for the layout), only under `DPML_NCCL_POLICY=auto` and only for communicators of no more ranks than the GPUs NVML lists on the host (taken to be one node); `off`: none; a number N: minCTAs N for every communicator. The caller's choice always wins: a config whose minCTAs or maxCTAs is set, and NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS, NCCL_MIN_CTAS or NCCL_MAX_CTAS in the environment or NCCL's configuration files, leave the communicator as NCCL makes it. Read at each communicator's creation; every rank of a communicator must see the same value. A value that does not parse applies no floor, with a warning."},
	{Name: NCCLPolicy, Kind: KindString, Default: "auto", Scope: AllRanks, Users: "libdpml-nccl-tuner.so",
		Doc: "What the NCCL tuner plugin (package nccl) answers, read at each communicator's init: `auto` (the table of `DPML_NCCL_TABLE` where it covers the call, else the channel model; the model alone when no table is named), `model` (the channel model; the table is ignored), `off` (NCCL's own choice for every call), or a fixed answer `C[/ALGO/PROTO]` for every call (C channels, 0 = NCCL's count; e.g. `8` or `16/ring/simple`; for sweeps). A value that does not parse makes the plugin answer NCCL's default, with a warning. Every rank of a communicator must see the same value (and table): NCCL ranks must agree on channels, algorithm and protocol."},
	{Name: NCCLTable, Kind: KindString, Default: "", Scope: AllRanks, Users: "libdpml-nccl-tuner.so, dpmlnccl",
		Doc: "JSON tuning table (the costmodel format with coll/algo/proto entries, written by `dpmlnccl table`) the NCCL tuner plugin reads at each communicator's init; its entries for the communicator's layout (nodes, ranks per node) give the channel count (and optionally algorithm and protocol) per size bucket. A table that does not read makes the plugin answer NCCL's default for every call of that communicator, with a warning."},
	{Name: NodeSplit, Kind: KindEnum, Default: "shared", Scope: AllRanks, Users: "engine, dpmlbench, apps", Values: []string{"shared", "host"}, Agreed: AtNew,
		Doc: "How ranks are grouped into nodes: `shared` (MPI_Comm_split_type SHARED) or `host` (by MPI_Get_processor_name). `host` sidesteps MPI libraries whose notion of locality is wrong for the emulated nodes."},
	{Name: Offload, Kind: KindEnum, Default: "off", Scope: AllRanks, Users: "engine", Values: []string{"off", "auto", "libsharp", "mpi"}, Agreed: AtNew,
		Doc: "In-network reduction offload of the inter-node step of small allreduces (package sharp): `libsharp` (Mellanox/NVIDIA SHArP through libsharp_coll, loaded at run time from `DPML_SHARP_LIB`), `mpi` (the leader communicators' own MPI_Allreduce, for MPI libraries that offload it to SHArP themselves through HCOLL or UCC), `auto` (libsharp when it loads and attaches, else off) or `off`. When the library is missing or attaching fails, the engine warns (except with `auto`) and keeps the host path. Plan specs force it per call (`offload=sharp` or `offload=host`)."},
	{Name: OffloadBytes, Kind: KindBytes, Default: "4K", Scope: AllRanks, Users: "engine", Min: 64, Max: MaxOffloadBytes, Agreed: AtNew,
		Doc: "Calls up to this many bytes whose type and op the offload supports take the offload when the plan is the engine's choice (the paper's crossover: no gain past about 4 KiB). Also the most a leader hands to the offload in one call when a plan forces it (a larger partition takes the host path)."},
	{Name: OffloadLead, Kind: KindInt, Default: "auto", Scope: AllRanks, Users: "engine", Values: []string{"auto", "node", "socket"}, Min: 1, Max: 64, Agreed: AtNew,
		Doc: "Which leaders offload: `node` (one leader per node, the node-level variant), `socket` (one leader per socket, each offloading its partition over its own group: the socket-level variant), `auto` (socket-level when every node has several sockets and at least 4 ranks, else node-level), or a number N of leaders per node (a stand-in for N sockets, for tests and experiments)."},
	{Name: Pipeline, Kind: KindInt, Default: "auto", Scope: AllRanks, Users: "engine", Values: []string{"auto"}, Min: 1, Max: MaxPipeline, Agreed: AtNew,
		Doc: "Sub-chunks `k` per leader in the inter-node phase (DPML-Pipelined), or `auto`."},
	{Name: Profile, Kind: KindEnum, Default: "auto", Scope: AllRanks, Users: "engine", Values: []string{"auto", "read", "off"}, Agreed: AtNew,
		Doc: "The machine profile, a tuning table the engine keeps per user and machine (see DPML_PROFILE_DIR) when DPML_TUNING_FILE is unset: `auto` starts from the profile that matches this machine and layout and saves into it what the learner measured (at Close, rank 0), `read` only starts from it, `off` ignores profiles."},
	{Name: ProfileDir, Kind: KindString, Default: "", Scope: PerRank, Users: "engine",
		Doc: "Directory of the machine profiles (default $XDG_CACHE_HOME/dpml, else ~/.cache/dpml). A profile's file name is a hash of the CPU model, online CPUs, sockets, NUMA nodes, nodes, ranks per node and MPI library; its provenance names them, and a profile made for another machine is ignored. Saved as tuning files are (never through a symbolic link, atomically)."},
	{Name: RunCPUMap, Kind: KindString, Default: "", Scope: PerNode, Users: "dpmlrun", Class: Internal,
		Doc: "Internal: the cores of each fake node (`node1=0-7;node2=8-15`), passed by dpmlrun to its launch agent."},
	{Name: RunNodes, Kind: KindInt, Default: "", Scope: AllRanks, Users: "dpmlrun, tests", Class: Internal,
		Doc: "Set by dpmlrun in every rank: the number of fake nodes."},
	{Name: RunPPN, Kind: KindString, Default: "", Scope: AllRanks, Users: "dpmlrun, tests", Class: Internal,
		Doc: "Set by dpmlrun in every rank: ranks per fake node (`2`, or `3,2` for uneven layouts)."},
	{Name: SegmentBytes, Kind: KindBytes, Default: "1M", Scope: AllRanks, Users: "engine", Min: MinSegmentBytes, Max: MaxSegmentBytes, Agreed: AtNew,
		Doc: "Largest message slice (bytes) the engine moves through shared memory at once. Larger messages are cut into segments that are pipelined: the inter-node phase of one segment overlaps the intra-node phases of the next. The node segment holds two such slices per local rank plus two results."},
	{Name: SegmentPool, Kind: KindInt, Default: "2", Scope: PerRank, Users: "engine", Min: 0, Max: 16,
		Doc: "Node segments of closed communicators each process keeps mapped, for a later communicator of the same node ranks to set up on without a new segment and with its pages already mapped. They keep their memory until taken or until the process ends. 0: none (a closed communicator's segment is unmapped at once)."},
	{Name: SetupAfter, Kind: KindDuration, Default: "100ms", Scope: AllRanks, Users: "libdpml.so, dpml.New with Deferred", Agreed: AtDropin,
		Doc: "The drop-in library sets up DPML on a communicator only once the communicator's eligible calls would have taken about this long in the MPI library (priced 5 us plus 1 ns per byte each, the same on every rank); the calls before pass through. Setup costs milliseconds, and a communicator that makes a few small calls never pays it. 0: set up at the DPML_DROPIN_FROM_CALL-th eligible call. A Go program's dpml.New with the Deferred option follows the same rule (config.SetupPrice) from its first call."},
	{Name: SetupWorld, Kind: KindEnum, Default: "warm", Scope: AllRanks, Users: "libdpml.so", Values: []string{"warm", "init", "defer"}, Agreed: AtDropin,
		Doc: "`warm`: libdpml.so sets up DPML on MPI_COMM_WORLD inside MPI_Init and readies it for the program's first calls: every rank maps the node segment and the library's own code and read-only data into its page tables (no code path's first run then takes page faults, which a node's ranks would take at the same moment and queue on) and each message size class up to 4 MiB runs once, on scratch buffers, the plan the tuner starts it on (milliseconds added to MPI_Init), so the program's first MPI_Allreduce of each size runs at speed. `init`: set up only. `defer`: MPI_COMM_WORLD waits for DPML_SETUP_AFTER like every other communicator. Communicators with the ranks of MPI_COMM_WORLD in its order (its duplicates) run on its engine unless the program is MPI_THREAD_MULTIPLE. A program whose MPI_Init does not pass through libdpml.so, or with DPML_DROPIN_FROM_CALL above 1 or DPML_DISABLE set, defers."},
	{Name: SharpLib, Kind: KindString, Default: "libsharp_coll.so", Scope: PerRank, Users: "engine, dpmlbench info",
		Doc: "The libsharp_coll shared library that `DPML_OFFLOAD=libsharp` (or `auto`) loads with dlopen: a file name searched the usual way, or a path. The ranks agree on whether it loaded, so a rank without it turns the offload off everywhere."},
	{Name: ShmDir, Kind: KindString, Default: "/dev/shm", Scope: PerNode, Users: "engine",
		Doc: "Directory (a tmpfs) where node segments are created."},
	{Name: Spin, Kind: KindInt, Default: "4000", Scope: PerRank, Users: "engine", Min: 0, Max: 1 << 30,
		Doc: "Polls of a shared-memory flag before a waiting rank starts yielding its core. Unset, libdpml.so uses 100000 on a communicator of one node whose ranks own their CPUs, once it has moved the Go runtime's own threads to SCHED_IDLE (DPML_GOSCHED `auto` or `pace`): a rank that yields sooner gives those threads its core in the middle of a collective."},
	{Name: StreamBytes, Kind: KindBytes, Default: "auto", Scope: AllRanks, Users: "engine", Values: []string{"auto", "off"}, Min: 1, Max: math.MaxInt64, Agreed: AtNew,
		Doc: "Copy-out writes the receive buffer with non-temporal (streaming) stores once a call's bytes times the node's ranks reach this many bytes: results that cannot stay in the last-level cache are not first read in from memory. `auto`: the last-level cache size (32M when unknown); `off`: never."},
	{Name: Timeout, Kind: KindDuration, Default: "60s", Scope: PerRank, Users: "engine",
		Doc: "How long a rank waits for a peer on a shared-memory flag before the call fails with an error (a dead peer never hangs the job); a blocking MPI step of the engine (the native plan's allreduce, the leaders' inter-node allreduce, the tuner's exchange) that lasts longer makes a watchdog print the step and abort the job with MPI_Abort (a stopped peer never hangs it either). Negative: wait forever; 0: the default, 60s. A bare number is seconds; values beyond about 11 days, non-finite values and positive values under 1ms (too short for a peer that lost its core for a moment) are errors."},
	{Name: Trace, Kind: KindString, Default: "", Scope: PerRank, Users: "engine (builds with -tags dpmltrace)",
		Doc: "Diagnostics, in a build made with `-tags dpmltrace` only (ignored otherwise): write the time stamp counter at each step of the last 8192 calls of each communicator (entered, plan chosen, children seen, input published, result published, result seen, returning) to this path, `%r` replaced by the rank in the communicator, when the communicator closes. bench/diag/trace.py splits the back-to-back period into these steps. Empty: none."},
	{Name: TreeBytes, Kind: KindBytes, Default: "4K", Scope: AllRanks, Users: "engine", Agreed: AtNew,
		Doc: "Messages up to this many bytes (at most one shared-memory slot) take the small-message reduction tree when neither the caller nor the tuner chose a plan: each rank folds its tree children's partials into its own and hands it to its parent, the root runs the inter-node step and releases the node. Up to 56 bytes the data travels inside the flags' cache lines."},
	{Name: TreeRadix, Kind: KindInt, Default: "8", Scope: AllRanks, Users: "engine", Agreed: AtNew,
		Doc: "Children per parent inside a NUMA domain of the small-message reduction tree (1..64); domains and sockets are joined at their first ranks."},

	{Name: Tuner, Kind: KindEnum, Default: "auto", Scope: AllRanks, Users: "engine", Values: []string{"auto", "model", "static"}, Agreed: AtNew,
		Doc: "Plan selection: `auto` (cost model + online learner), `model` (cost model only), `static` (built-in table only)."},
	{Name: TunerBudget, Kind: KindInt, Default: "2", Scope: AllRanks, Users: "engine", Min: -1, Max: 100, Agreed: AtNew,
		Doc: "What learning may cost a call size, in percent of the time its calls have taken so far: the candidates' time beyond the incumbent's and the tuner's bookkeeping. Every size starts on the cost model's plan and tries another only when its own calls have paid for the trial, so a size called 10 or 100 times runs the model's plan. 0: never leave the model's plan (measurements still watch for drift); -1: no budget, every size explores its neighbourhood from its first call."},
	{Name: TunerConfirm, Kind: KindInt, Default: "8192", Scope: AllRanks, Users: "engine", Min: -1, Max: 1 << 30, Agreed: AtNew,
		Doc: "Calls a key makes after it first settles before the online learner's one scheduled confirmation, which samples every arm again in blocks of back-to-back calls and keeps the settled plan unless another is clearly faster (-1: never). The first exploration runs in a process's first, noisiest calls."},
	{Name: TunerCost, Kind: KindEnum, Default: "second", Scope: AllRanks, Users: "engine", Values: []string{"second", "last", "mean", "slowest", "penult"}, Agreed: AtNew,
		Doc: "What the online learner counts as a call's cost, on a clock common to the ranks: `second` (the second-to-last rank's exit after the last rank's entry: when the call is over for the program, without the one rank a shared machine stalls now and then), `last` (the last rank's exit), `mean` (the ranks' mean exit after the last entry: favours plans whose ranks leave at different times, such as trees), `slowest` (the longest time of a rank from its own entry: arrival skew included), `penult` (the second-to-last rank's exit after the second-to-last rank's entry: back to back, the program's time per call, without one stalled rank). Kept selectable to compare rules on a machine."},
	{Name: TunerLag, Kind: KindInt, Default: "8", Scope: AllRanks, Users: "engine", Min: 0, Max: 1 << 20, Agreed: AtNew,
		Doc: "The learner's exchange of its samples between the ranks (a few words per sample) starts at one call and is committed this many calls through the engine later, the same call on every rank, so that no call waits for the ranks that arrive last at it. From 5: through the node's shared memory, where one rank per node folds the others' samples two calls after they are written, and point-to-point messages among those ranks across nodes; no other rank makes an MPI call for it, and each rank does its part while it waits for its peers. 1-4: two non-blocking allreduces over all ranks. 0: two blocking allreduces at the call that needs them."},
	{Name: TunerRing, Kind: KindBytes, Default: "off", Scope: AllRanks, Users: "engine", Values: []string{"off"}, Min: 1, Max: math.MaxInt64, Agreed: AtNew,
		Doc: "On three nodes or more, the message size from which the learner's arms include the ring reduce-scatter and allgather among the node leaders as the inter-node step, beside the MPI library's allreduce. `off`: the MPI library's step only (a plan that asks for the ring, `inter=ring`, still runs it)."},
	{Name: TunerSamples, Kind: KindInt, Default: "5", Scope: AllRanks, Users: "engine", Min: 1, Max: 8, Agreed: AtNew,
		Doc: "Samples the online learner takes of an arm before comparing it with others (1..8): more samples resist noise and cost more exploration calls."},
	{Name: TunerStat, Kind: KindEnum, Default: "min", Scope: AllRanks, Users: "engine", Values: []string{"min", "median", "trimmed"}, Agreed: AtNew,
		Doc: "How the online learner summarises an arm's samples: `min` (the fastest), `median`, `trimmed` (the mean without the slowest quarter: what a program calling back to back pays, minus the machine's rare stalls)."},
	{Name: TuningFile, Kind: KindString, Default: "", Scope: AllRanks, Users: "engine, dpmlbench", Agreed: AtNew,
		Doc: "JSON tuning table to start from and to save to at Close. Its directory must exist and be writable and the name must not be a symbolic link (checked at dpml.New, on rank 0); an existing file must be a regular file holding exactly one JSON table. The save writes a new file beside it and renames it over the name (a link planted there meanwhile is replaced, never written through), keeps the entries of the table there that the run did not learn (other layouts', another tool's), and keeps the file's permission bits (and its owner where permitted)."},
	{Name: Verbose, Kind: KindInt, Default: "0", Scope: PerRank, Users: "all", Min: 0, Max: 2,
		Doc: "1: on rank 0, the settings changed from the defaults, what each step of setup cost, one line per new plan, and at Close one line per size class called (its plan, calls, time per call and the MPI library's, where the learner measured them), then the learner's overhead per recorded call; the drop-in's counters on every rank at MPI_Finalize. 2: also the learner's table per key, every setting with its source, the plans' diagrams and every call's decision."},
}

// Lookup returns the declaration of name.
func Lookup(name string) (Var, error) {
	v, ok := find(name)
	if !ok {
		return Var{}, fmt.Errorf("%w: %s", ErrUndeclared, name)
	}
	return v, nil
}

// Get returns the variable's value, or its default when unset or empty.
// It returns an error for a name missing from the table: reading an
// undeclared variable is a bug.
func Get(name string) (string, error) {
	v, err := Lookup(name)
	if err != nil {
		return "", err
	}
	if s := strings.TrimSpace(os.Getenv(name)); s != "" {
		return s, nil
	}
	return v.Default, nil
}

// IsSet reports whether the variable is set to a non-empty value.
func IsSet(name string) bool { return strings.TrimSpace(os.Getenv(name)) != "" }

// GetValue parses the variable's value (or its default) with Var.Parse.
func GetValue(name string) (Value, error) {
	v, err := Lookup(name)
	if err != nil {
		return Value{}, err
	}
	s, _ := Get(name)
	if s == "" {
		return Value{}, nil // declared without a default and unset
	}
	return v.Parse(s)
}

// Int parses an int variable (within its range; a keyword is an error).
func Int(name string) (int, error) {
	n, kw, err := IntOr(name)
	if err == nil && kw != "" {
		err = fmt.Errorf("%w: %s=%s: want a number", ErrInvalid, name, kw)
	}
	return n, err
}

// IntOr parses an int variable that may also hold a keyword: it returns
// the number, or the keyword (lower case) with n = 0.
func IntOr(name string) (n int, keyword string, err error) {
	val, err := GetValue(name)
	if err != nil {
		return 0, "", err
	}
	if val.Int > math.MaxInt || val.Int < math.MinInt {
		return 0, "", fmt.Errorf("%w: %s=%d: out of the int range", ErrInvalid, name, val.Int)
	}
	return int(val.Int), val.Keyword, nil
}

// IntOrAuto parses a variable that holds a positive int or "auto" (returned as 0).
func IntOrAuto(name string) (int, error) {
	n, _, err := IntOr(name)
	return n, err
}

// Bool parses a bool variable (1/0, true/false, yes/no, on/off).
func Bool(name string) (bool, error) {
	val, err := GetValue(name)
	return val.Bool, err
}

// Duration parses a duration variable ("60s", "500ms"; a bare number is seconds).
func Duration(name string) (time.Duration, error) {
	val, err := GetValue(name)
	return val.Dur, err
}

// Bytes parses a byte-count variable (a keyword is an error).
func Bytes(name string) (int64, error) {
	n, kw, err := BytesOr(name)
	if err == nil && kw != "" {
		err = fmt.Errorf("%w: %s=%s: want a byte count", ErrInvalid, name, kw)
	}
	return n, err
}

// BytesOr parses a byte-count variable that may also hold a keyword.
func BytesOr(name string) (n int64, keyword string, err error) {
	val, err := GetValue(name)
	return val.Int, val.Keyword, err
}

// Enum parses an enumerated variable: one of its Values, lower case.
func Enum(name string) (string, error) {
	val, err := GetValue(name)
	return val.Keyword, err
}

// Canonical returns the variable's value as Var.Canonical writes it, for
// comparing across ranks. A value that does not parse is returned as
// written, with the parse error.
func Canonical(name string) (string, error) {
	v, err := Lookup(name)
	if err != nil {
		return "", err
	}
	s, _ := Get(name)
	if s == "" {
		return "", nil
	}
	val, err := v.Parse(s)
	if err != nil {
		return s, err
	}
	return v.Canonical(val), nil
}

// Compared lists, in table order, the variables compared across ranks at
// stage a.
func Compared(a Agreement) []string {
	var out []string
	for _, v := range Vars {
		if v.Agreed == a {
			out = append(out, v.Name)
		}
	}
	return out
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

// Changed is the settings set in the environment, "NAME=value ..." on one
// line ("none" when every setting has its default): what DPML_VERBOSE=1
// prints; Effective's full list is for DPML_VERBOSE=2.
func Changed() string {
	var parts []string
	for _, v := range Vars {
		if IsSet(v.Name) {
			val, _ := Get(v.Name)
			parts = append(parts, v.Name+"="+val)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

func find(name string) (Var, bool) {
	i := sort.Search(len(Vars), func(i int) bool { return Vars[i].Name >= name })
	if i < len(Vars) && Vars[i].Name == name {
		return Vars[i], true
	}
	return Var{}, false
}

// TypeString is the "type" column of the documentation: the kind, its
// range and its keywords ("int in [1, 64], or `auto`", "`shared` | `host`").
func (v Var) TypeString() string {
	if v.Kind == KindEnum {
		q := make([]string, len(v.Values))
		for i, w := range v.Values {
			q[i] = "`" + w + "`"
		}
		return strings.Join(q, " \\| ")
	}
	s := v.Kind.String()
	if r := v.RangeString(); r != "" && v.Max != math.MaxInt64 {
		s += " in " + r
	}
	if len(v.Values) > 0 {
		q := make([]string, len(v.Values))
		for i, w := range v.Values {
			q[i] = "`" + w + "`"
		}
		s += ", or " + strings.Join(q, ", ")
	}
	return s
}

// Markdown renders the table as the documentation page.
func Markdown() string {
	var b strings.Builder
	b.WriteString("# Environment variables\n\n")
	b.WriteString("Generated from `config.Vars` by `go generate ./config`; do not edit.\n")
	b.WriteString("Scope says where a value must agree: a setting that shapes the collective must be equal on all ranks.\n")
	b.WriteString("Compared says where the library checks that it does: a difference between ranks is an error on every rank that names the variable and the values seen.\n")
	b.WriteString("Keywords are taken in any case; a value that does not parse or lies outside its range is an error (on every rank of the communicator: the ranks agree on the outcome of setup).\n\n")
	b.WriteString("`dpml-info` lists them with their current values; it also names any `DPML_*` variable of the environment that is not below, with the nearest one that is.\n\n")
	table := func(keep func(Var) bool) {
		b.WriteString("| variable | type | default | scope | compared | read by | meaning |\n")
		b.WriteString("| --- | --- | --- | --- | --- | --- | --- |\n")
		for _, v := range Vars {
			if !keep(v) {
				continue
			}
			def := v.Default
			if def == "" {
				def = "(unset)"
			}
			fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s | %s | %s | %s |\n", v.Name, v.TypeString(), def, v.Scope, v.Agreed, v.Users, v.Doc)
		}
	}
	table(func(v Var) bool { return v.Class == User })
	b.WriteString("\n## Internal and test-only variables\n\n")
	b.WriteString("Set by DPML's own tools in the processes they start (internal), or read only by the tests and the emulated SHArP switch they build (test only). Names with a word `TEST` (`DPML_TEST_*`) are reserved for the test suites.\n\n")
	table(func(v Var) bool { return v.Class != User })
	return b.String()
}
