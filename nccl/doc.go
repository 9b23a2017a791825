// Package nccl maps DPML's leader-count logic onto NCCL's channel count:
// an NCCL tuner plugin (libdpml-nccl-tuner.so, built from nccl/plugin)
// that chooses nChannels per call, and where a table says so NCCL's
// algorithm and protocol, from the project's tuning tables (package
// costmodel's JSON format) or, without a table, from a channel model. A
// channel is NCCL's unit of parallelism inside one collective (one thread
// block and one ring or tree per channel), as a leader is DPML's: too few
// leave bandwidth unused, too many cut small messages into parts that only
// pay startups.
//
// # Pieces
//
//	nccl/            the policy (New, Decide), the channel model (Predict),
//	                 sweep CSV reading (ReadSweep), table building
//	                 (BuildTable, FitForced, ForcedTable), the built-in
//	                 data (builtin_*.json, embedded) and the channel floor
//	                 (FitFloor, DecideFloor); pure Go, no cgo, no gonum
//	nccl/plugin      package main of libdpml-nccl-tuner.so (make build puts it in bin/):
//	                 the tuner (plugin.c) and, preloaded, the floor (floor.c)
//	cmd/ncclsweep    the GPU sweep tool (C on the CUDA runtime and NCCL; built on the GPU machine)
//	cmd/dpmlnccl     offline: sweep CSV -> table + channel atlas, built-in data (fit),
//	                 reports, comparisons of alternated runs, the policy's answers
//	bench/nccl/device.sh  the device run: build the sweep, forced-channel sweep,
//	                 fit, the plugin against NCCL's default
//
// # Using the plugin
//
//	make build     # bin/libdpml-nccl-tuner.so
//	LD_PRELOAD=$PWD/bin/libdpml-nccl-tuner.so \
//	NCCL_TUNER_PLUGIN=$PWD/bin/libdpml-nccl-tuner.so ./app      # floor + per-call answers
//	NCCL_TUNER_PLUGIN=$PWD/bin/libdpml-nccl-tuner.so ./app      # per-call answers only
//	... DPML_NCCL_TABLE=table.json ./app                        # a measured table instead of the built-in data
//
// The two variables name the same file: NCCL opens it as its tuner, and
// the dynamic loader preloads it, which lets it set the channels NCCL
// creates each communicator with (the channel floor, below). Without the
// preload the per-call answers are capped at the channels NCCL chose.
//
// NCCL (2.24 and later) loads the library named by NCCL_TUNER_PLUGIN once
// per process and calls init for every communicator, getCollInfo for every
// collective it schedules, and finalize (destroy) when a communicator goes.
// At each init the plugin reads (with the C library's getenv, so a program
// may change them between communicators):
//
//	DPML_NCCL_POLICY  auto (default) | model | off | C[/ALGO/PROTO]
//	DPML_NCCL_TABLE   path of a tuning table (JSON)
//	DPML_NCCL_FLOOR   auto (default) | off | N: the channel floor (preloaded)
//	DPML_VERBOSE      1: one line per communicator the preloaded library
//	                  creates (its floor, or why none); 2: also every
//	                  answer through NCCL's logger (TRACE)
//
// auto answers from the table where it has entries for the communicator's
// layout (nodes and ranks per node) and collective, and otherwise from the
// table's model, or NCCL's own choice when the table has none; without a
// table, from the built-in data for the machine (below), and where there
// is none, NCCL's own choice for every call. model answers from the
// channel model (DefaultModel, not fitted to any machine), ignoring the
// table; off
// answers NCCL's default for every call, and C[/ALGO/PROTO] gives every
// call C channels (0 = NCCL's count) and optionally an algorithm and a
// protocol (ring/simple, tree/ll128, ...): that is how cmd/ncclsweep
// measures fixed answers. The init line goes to NCCL's logger (NCCL_DEBUG=INFO
// and NCCL_DEBUG_SUBSYS=TUNING show it).
//
// NCCL caps the plugin's count at the communicator's channels, which NCCL
// sets up at init from its topology search (and NCCL_MIN_NCHANNELS,
// NCCL_MAX_NCHANNELS, or ncclConfig_t minCTAs/maxCTAs), before it loads
// the tuner; the tuner cannot raise it. The preloaded library can (the
// channel floor, below). A table belongs to communicators set up like the
// ones it was measured on: its provenance says which (ncclsweep's minN
// is minCTAs=N), and answers above the channels a communicator has are
// cut down by NCCL.
//
// # The channel floor (LD_PRELOAD)
//
// Why: NCCL fixes a communicator's channels while it creates it (in NCCL
// 2.28, initTransportsRank: ncclTopoPostset sets them from the graph
// search, NCCL_MIN/MAX_NCHANNELS and the config's minCTAs/maxCTAs) and
// only then loads the tuner plugin and calls its init; a call's channel
// answer is capped at the communicator's. Measured on 2 H200 (NVLink,
// NCCL 2.28.3), communicators made with minCTAs 32 reached 1.02-1.10 x
// NCCL's default bus bandwidth from 2 MiB to 1 GiB with the plugin's
// answers, while the same answers on default communicators stayed at
// 0.98-1.01: the headroom needs more channels at creation.
//
// What: preloaded, the library defines ncclCommInitRank,
// ncclCommInitRankConfig, ncclCommInitRankScalable and ncclCommInitAll
// (nccl/plugin/floor.c) and calls NCCL's own (found with dlsym RTLD_NEXT)
// with a copy of the caller's config whose minCTAs is the floor and
// maxCTAs 64 (NCCL's maximum; NCCL 2.28 refuses a set minCTAs with maxCTAs
// unset). ncclCommInitAll creates its communicators through internal
// functions that cannot be interposed, so with a floor the library does
// what it does: one ncclGetUniqueId, then in a group one
// ncclCommInitRankConfig per device, selected with cudaSetDevice (from the
// process's CUDA runtime, else libcudart opened with dlopen: the library
// links no CUDA), and the current device restored. Errors of NCCL's
// functions are returned as they are.
//
// Which floor (DecideFloor, every time a communicator is created):
// DPML_NCCL_FLOOR=N sets N; off none; auto (the default) takes the floor
// of the plugin's data under DPML_NCCL_POLICY=auto: the built-in data's
// Floor for the GPU count, model and link (FitFloor: the forced channel
// count that does best at the largest sizes of every collective, never
// slower than NCCL's default there), or with DPML_NCCL_TABLE the table's
// largest channel answer for the layout (TableFloor). The floor must be
// the same on every rank of a communicator, so it depends only on what the
// ranks see alike: the rank count, the settings and the machine. NCCL
// learns the communicator's nodes only while it creates it, so a
// communicator counts as one node when its ranks are no more than the
// GPUs NVML lists on this host, and a larger one gets no floor.
//
// Rules: the caller's choice wins. A config whose minCTAs or maxCTAs is
// set, and NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS (or NCCL_MIN/MAX_NRINGS),
// NCCL_MIN_CTAS or NCCL_MAX_CTAS in the environment or in NCCL's
// configuration files (NCCL_CONF_FILE or ~/.nccl.conf, /etc/nccl.conf;
// read by the library too, since the creation may be NCCL's first call)
// leave the call unchanged. So do a config NCCL will refuse (its own error
// follows), an NCCL older than 2.17 (no minCTAs), a machine or layout
// without a floor, and DPML_NCCL_FLOOR=off. The caller's config is never
// written: it is copied, up to its size, so fields of later NCCL releases
// pass through; a config of 2.14 to 2.16 (which ends at blocking) becomes
// one of 2.17 with the caller's blocking. DPML_VERBOSE=1 prints one line
// per creation call on stderr; a setting that does not parse warns once
// and applies no floor.
//
// Limits: ncclCommSplit and ncclCommShrink are not interposed: a child
// made with a NULL config takes its parent's config in NCCL, floor
// included; a child made with a config of its own gets none, because the
// floor depends on the child's rank count, known only once the split is
// made. A program that links NCCL statically, or opens it with dlopen and
// calls it through the handle, is not reached by the preload. A
// communicator spanning several nodes whose rank count does not exceed
// one host's GPUs (2 nodes x 2 ranks on 4-GPU hosts) is floored like a
// single-node one: set DPML_NCCL_FLOOR=off for such jobs. More channels
// cost NCCL connection buffers on every GPU and a little creation time.
// Preload the library into the NCCL program only (LD_PRELOAD in that
// command's environment): every process it is preloaded into starts a Go
// runtime. The per-call answers are unchanged by the floor: at small sizes
// they may still ask for fewer channels than the communicator has.
//
// Every rank of a communicator must see the same settings and table:
// NCCL's ranks must agree on channels, algorithm and protocol. The answer
// depends only on what every rank sees alike (collective, bytes, ranks,
// nodes); numPipeOps and regBuff, which may differ, are ignored.
//
// # Go library with a C hot path (the design choice)
//
// The plugin is a Go c-shared library: the table format, its checks, the
// table lookup rules and the channel model exist once, in this package,
// shared with the offline tools that build the tables (cmd/dpmlnccl) and
// tested by table-driven Go tests. The alternative, a small C plugin
// reading a table that Go generates, would need the model in C too (the
// plugin learns the layout only at init, so no table can be generated for
// every layout in advance) or a second reader of the JSON format: the
// policy twice.
//
// What a Go runtime costs inside NCCL's process is kept to init: init
// hands the layout and settings to Go once (dpmlNcclFill), which computes
// the answer for every collective and every size bucket (floor(log2
// bytes), costmodel's buckets: 5 x 64 answers of 4 bytes) into the
// communicator's context, allocated in C. getCollInfo is then plain C in
// plugin.c: a bucket from the leading zeros of nBytes, one array load, and
// the answer applied to the cost table and nChannels. It never enters the
// Go runtime, so no cgo transition, no goroutine scheduling and no garbage
// collector can touch NCCL's launch path. Measured on the 2-core
// development VM under load (TestPluginBench, tunertest.c's timing mode):
// getCollInfo 15 ns per call; the first init waits for the Go runtime to
// start (dlopen 2-14 ms plus about 20 ms of runtime start under load,
// once per process); each later init 0.1 ms with a table (read once per
// process and file version) and about 1 ms with the model; the library is
// 3.4 MB. A communicator's init in NCCL takes hundreds of milliseconds,
// and a collective's launch microseconds, so neither is visible.
//
// Limits of a Go library in a host process: a process holds one Go
// runtime per Go library, and two (this plugin and libdpml.so preloaded
// into the same MPI+NCCL program) are not supported by Go; the library
// uses initial-exec TLS (FLAGS STATIC_TLS), so a process that has used up
// glibc's static TLS surplus fails to dlopen it: NCCL then logs the
// failure and runs without the plugin. The library is marked NODELETE by
// Go's linker, so NCCL's dlclose after its last communicator and a later
// dlopen are harmless (tunertest.c checks it).
//
// # Built-in data
//
// Without DPML_NCCL_TABLE the plugin answers from nccl/builtin_*.json
// (embedded), one file per machine kind, keyed by the communicator's GPU
// count and nodes, the GPU model and the link (nvlink or pcie), each with
// its provenance: where it was measured, which NCCL, what was and was not
// measured. The plugin learns the model and link once per process from
// NVML (libnvidia-ml.so.1, opened with dlopen: the model every GPU
// shares, nvlink when every GPU has an active NVLink); DPML_NCCL_GPU and
// DPML_NCCL_LINK override it. A machine without a file, or one NVML cannot
// describe, gets NCCL's default for every call. `dpmlnccl fit -link nvlink
// pass0/run*/sweep.csv > nccl/builtin_NAME.json` regenerates a file from
// forced-channel sweeps (bench/nccl/device.sh writes one as
// fit/builtin.json): per collective and size bucket the communicator-wide
// channel count whose median speedup over NCCL's default, paired run by
// run, is at least 3% and that lost in no run, and the machine's channel
// floor (FitFloor; schema 2). The count is a per-call answer, and NCCL
// cuts it down to the channels it set up for the communicator: where the
// default communicator has fewer, only communicators made with more (the
// floor, with the library preloaded) see the gain. On a communicator made
// with the floor, a call NCCL chooses for itself gets the floor's count
// from about 1 MiB up, where a default communicator's gets the default
// count; so from 2 MiB up (DefaultAnswerMinLog2) a bucket the picks leave
// to NCCL, where the floor's count ran slower than the default in the
// sweep, answers the default communicator's count (AnswerDefault; fit
// -default-channels, which device.sh reads from NCCL's log). Files: 2 and
// 4 H200 and 2 and 4 H100 (80GB HBM3) over NVLink, one node.
//
// # The ABI (NCCL's headers; dpml_nccl_tuner.h)
//
// The plugin exports ncclTunerPlugin_v7 and ncclTunerPlugin_v6 (the
// newest headers: v6 adds getChunkSize, which this plugin leaves at NCCL's
// value; v7 sizes the tuning constants for 5 compute capabilities),
// ncclTunerPlugin_v5 (NCCL 2.28: init(ctx, commId, nRanks, nNodes,
// logFunction, nvlDomainInfo, constants), getCollInfo, finalize) and
// ncclTunerPlugin_v4 (NCCL 2.24 to 2.27: init(nRanks, nNodes,
// logFunction, ctx), getCollInfo, destroy); NCCL takes the newest it
// knows. And dpml_nccl_tuner_stats (counters, for the tests and the sweep
// tool). The declarations in nccl/plugin/dpml_nccl_tuner.h follow release 2.28.3
// (commit f1308997: src/include/plugin/tuner/tuner_v5.h, tuner_v4.h,
// nccl_tuner.h, nccl_common.h) and tuner_v6.h and tuner_v7.h of later
// NCCL sources; static assertions pin the layouts. The
// tuning constants (v5 and later) are left as NCCL set them.
//
// getCollInfo receives the cost table as float** but it is a contiguous
// float[numAlgo][numProto] (NCCL declares a 2-D array and casts it), so
// entry (a, p) is ((float*)table)[a*numProto + p]; -1.0 marks a
// combination NCCL will not use. To prefer an algorithm and protocol the
// plugin lowers that entry to 0 when it is allowed (NCCL takes the
// smallest non-negative entry); a table entry or geometry it does not
// understand (numAlgo or numProto outside 1..64, the pair outside the
// table) is left alone. nChannels = 0 keeps NCCL's count.
//
// Errors: NCCL 2.28.3 wraps init in NCCLCHECK (a failing init fails the
// communicator's creation) and getCollInfo too (enqueue.cc: a failing
// getCollInfo fails the collective), whatever the header's comment says
// about falling back. So the plugin returns ncclSuccess from every entry
// point, always, and answers "NCCL's default" by setting nothing: a table
// that does not read, a bad DPML_NCCL_POLICY, a failed allocation, a NULL
// context, an unknown collective, a panic in Go. A failed init logs a
// warning through NCCL's logger and one line on stderr per process.
//
// CollNet: NCCL 2.28.3 caps the tuner's count at the communicator's
// channels for every algorithm but CollNet (scheduleCollTasksToPlan takes
// task->nMaxChannels as it is for CollNet tasks), so the plugin sets no
// count where a CollNet entry of the cost table is allowed, unless it
// also steers the call to a non-CollNet algorithm.
//
// # The channel model
//
// The model is costmodel's, read with NCCL meanings (model.go): a channel
// is a leader. With t the bytes each rank sends (allreduce 2(r-1)/r * n,
// allgather and reduce-scatter (r-1)/r * n, broadcast and reduce n, on r
// ranks) and s the ring steps (2(r-1) for allreduce, r-1 otherwise), c
// channels take
//
//	T(c) = s*a + c*a' + t*b / M(c, t/c)
//
// a: a step's startup, a' (costmodel's a_shm): each channel's cost
// (launching and synchronising its block), b: one channel's seconds per
// byte, M(c, x): the concurrency curve of the paper's Fig. 1 with channels
// as the concurrent pairs (zone A, small parts per channel: M = c, the
// channels share nothing; zone C, large parts: M saturates where the links
// do). Zone A makes more channels pay until their cost c*a' outweighs the
// shrinking part; zone C makes channels beyond saturation pure cost: few
// channels for small messages, enough for large ones that each channel's
// part sits in the high-throughput zone. The built-in parameters
// (DefaultModel) are a placeholder for one NVLink node of H200s; a table
// built from a sweep replaces its answers where it has entries.
//
// # Tables
//
// A table is a costmodel.Table (schema 1) whose entries name the
// collective (Entry.Coll, "allreduce"), the layout (nodes, ppn = ranks /
// nodes), the size bucket, and the answer: variant "dpml" with Leaders =
// channels, or "native" (NCCL's own), and optionally Algo and Proto;
// Measured lists every answer the sweep timed. costmodel's tuner skips
// such entries. For a collective with entries the plugin answers a bucket
// between two entries like the nearer one (the smaller on a tie), a bucket
// above the largest like the largest (the bandwidth regime stays), and a
// bucket below the smallest with NCCL's own (small calls are latency-bound,
// where NCCL's own choice is the safe one). Entries of one bucket that
// disagree (e.g. two element types: the plugin is not told the type) make
// the table an error.
//
// BuildTable (dpmlnccl table) makes a table from a sweep: per bucket the
// fixed answer that beat NCCL's own choice on the same communicators by
// more than costmodel's Improve (3%), else native, so the table deviates
// from NCCL only where the sweep shows headroom; where NCCL's own choice
// on the table's communicators (say with 32 channels set up) is slower
// than its default on default communicators, the fastest fixed answer
// that beats it is taken without the margin. The criterion the plugin is
// held to compares it with NCCL's default on default communicators
// (nccl@dflt): dpmlnccl report prints both.
//
// # What is verified where
//
// Here (no GPU; go test ./nccl/...): the policy, model, table rules,
// table building and the floor's fit and decision (table-driven tests);
// the preloaded floor on every creation entry point, against the fake
// NCCL built as libnccl.so (testdata/floortest.c: the config NCCL
// receives, the channels it sets up, the caller's settings left alone,
// errors passed through); the library as NCCL loads it:
// nccl/plugin/testdata/tunertest.c dlopens it and drives v5 and v4 through
// init/getCollInfo/finalize with fake cost tables, error paths, odd table
// geometries, NULL pointers, CollNet, threads and a dlclose/dlopen cycle;
// and the whole chain on fakes: cmd/ncclsweep compiled against fake CUDA
// and NCCL headers (testdata/fake: a host-memory CUDA and an NCCL that
// loads the plugin as 2.28.3 does and advances virtual clocks by a
// synthetic time per channel count), a sweep, dpmlnccl's table, a second
// sweep with the table, and bench/nccl/device.sh itself. On the GPU
// machine (bench/nccl/device.sh): the sweep tool against the real CUDA and
// NCCL, the plugin inside NCCL, and the numbers.
package nccl
