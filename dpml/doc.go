// Package dpml is a faster MPI allreduce for multi-core nodes: the
// data-partitioning multi-leader design (DPML; Bayatpour et al., SC'17)
// on any MPI library, with a cost model and an online tuner choosing each
// call's plan.
//
// # Usage
//
//	if _, err := mpi.Init(); err != nil { // package mpi; mpi.World is nil before it
//		log.Fatal(err)
//	}
//	defer mpi.Finalize()
//	c, err := dpml.New(mpi.World()) // collective: every rank calls it; reuse c
//	if err != nil {
//		log.Fatal(err) // the same error on every rank
//	}
//	defer c.Close() // collective too; before mpi.Finalize
//	err = dpml.Allreduce(c, send, recv, mpi.OpSum) // []float64, []int32, ...: any mpi.Number
//
// Allreduce, AllreduceInPlace and their With forms (a per-call Override,
// or a plan spec through ParseOverride) must be called by every rank of
// the communicator with the same count, type, op and override, as
// MPI_Allreduce. Every rank gets bit-identical results (see Determinism).
//
// Errors are values; none of these functions panics. New fails the same way
// on every rank, with an error wrapping ErrSetup (a nil communicator: most
// often mpi.Init was not called), ErrConfig (a bad DPML_* setting) or
// ErrMismatch (a setting that must be equal on all ranks differs). A
// communicator whose call failed reports that failure on later calls; after
// Close, calls return ErrClosed.
//
// Settings come from DPML_* environment variables (docs/ENVIRONMENT.md;
// the dpml-info command lists them with their current values) and New's
// Options. Building needs cgo and the MPI library's pkg-config file
// (ompi-c, or mpich with the build tag mpich); GOEXPERIMENT=simd builds the
// vector reduction kernels (without it the scalar kernels give the same
// results, slower, and DPML_VERBOSE=1 says so). A program run under
// mpirun or dpmlrun, or on one rank without a launcher, needs nothing more.
//
// # Design
//
// A Comm is built once from an MPI communicator (New) and reused; New with
// Deferred builds it only once its calls have paid for the setup (run on
// the MPI library until then, as libdpml.so does for a C program's
// communicators: DPML_SETUP_AFTER), for communicators made for a few
// calls. A setup allocates some tens of KiB and a call nothing once set
// up; a program that sets communicators up by the thousand may want a
// larger GOGC (libdpml.so runs its own runtime at 400 for that reason).
// Each call
// is described by a Plan — data naming its phases, leaders, partitions and
// segments — and executed by one engine (execute), whatever the variant:
//
//	phase      who                what
//	copy-in    every rank         copy its slice into its slot of the node's shared segment
//	reduce     leader j (of l)    fold partition j of every slot, in local-rank order
//	inter      leader j           allreduce partition j over leader communicator j
//	                              (one per leader index, h members: l run at once),
//	                              by the plan's inter-node algorithm: the MPI
//	                              library's allreduce (default), the engine's
//	                              ring (inter=ring) or the offload (inter.go)
//	copy-out   every rank         copy the l reduced partitions out
//
// Variants are plans: DPML (blocking inter-node step), Pipelined (k
// non-blocking sub-chunk steps per leader, and segment s's inter-node
// step overlapping segment s+1's intra-node phases), the single-node form
// (no inter phase) and Native (the MPI library's allreduce: ppn = 1 on every
// node, or forced). Messages larger than one segment (DPML_SEGMENT_BYTES)
// flow through the two buffer sets of the segment, segment by segment:
//
//	step | copy-in | reduce | inter-node | copy-out
//	  0  | seg 0   | seg 0  | seg 0 x k  |
//	  1  | seg 1   | seg 1  | seg 1 x k  | seg 0
//	  2  | seg 2   | seg 2  | seg 2 x k  | seg 1
//
// # Shared memory and synchronisation
//
// Each node has one segment (package shm), created by the node's first rank
// under a random name, mapped by all, and unlinked at once, so no crash can
// leave it in /dev/shm. Ranks synchronise through per-rank "input ready"
// and per-leader "result ready" words holding generation numbers that only
// grow, so calls need no reset barrier. Waits spin, then yield, and fail
// after DPML_TIMEOUT; a failing rank raises the node's abort word so its
// peers fail fast instead of timing out. While backing off they also let
// the goroutine yield to the Go scheduler every few ms, as MPI calls do, so
// a long wait does not draw the runtime's monitor thread onto the rank's
// core (package internal/runtime/gosched, which New applies: DPML_GOSCHED).
//
// # Determinism
//
// Every rank gets bit-identical results, and a fixed plan gives the same
// output for the same inputs run after run. Inside a node, leader j folds the
// ranks' inputs in local-rank order: r = ((x0 op x1) op x2) op ... ; under
// the reduction tree the order is the tree's (a rank's own input, then its
// children's partials in tree order), and with l trees element e follows
// the tree of its partition, so the tree's radix and l change the last
// bits of float results too. The tree's fold has one implementation, in C
// (internal/fused), which the executor's tree transport calls step by step
// and the fused tree call (fused.go: one tree, one segment, at most 1 KiB,
// run by one C routine) runs whole, so the two paths give the same bits
// (TestTree holds both to one reference, TestTreeGoPath the executor's
// steps). Across
// nodes, the MPI library's allreduce over the leader communicator combines
// the node results (in node order for the libraries' usual algorithms on a
// commutative op); the engine's ring (plan spec inter=ring, ring.go) folds
// each chunk of a leader's partition once, in node order rotated to start
// at the chunk's index, and then copies it. Floating-point sums therefore depend on how ranks are
// placed on nodes, and can differ in the last bits from the native
// MPI_Allreduce and between plans whose leader count or segment size
// changes the inter-node message boundaries; integer results never differ.
// The tuner picks plans from measured timings, so with it on (the default)
// two runs may use different plans for the same call, and their float
// results may differ in the last bits. For run-to-run reproducibility fix
// the plan: an Override, DPML_LEADERS / DPML_PIPELINE, a frozen tuning table
// (DPML_TUNING_FILE), or DPML_TUNER=static.
//
// # Node segment layout
//
// One segment per node: an abort word, one "input ready" word per local
// rank and one "result ready" word per leader (each on its own cache line),
// one flag line per local rank for each further reduction tree (trees 1 to
// plan.MaxTrees-1 of a plan with l trees; tree 0 uses the "input ready"
// lines), then two buffer sets, each holding one slot per local rank and one result
// area of DPML_SEGMENT_BYTES. Rank i copies its slice into slot i; leader j
// reads partition j of every slot and writes partition j of the result.
// Partitions start on cache-line boundaries, so no two leaders write one line.
//
// # Reduction kernels
//
// The kernels fold up to four sources per pass over an 8 KiB block of the
// result (kernels_gen.go, generated per op), so the block stays in L1. Built
// with GOEXPERIMENT=simd on AVX2 machines (the Makefile's default), float32
// and float64 sums use 256-bit vectors with the same per-element order.
// `go test -bench . ./dpml` on the 2-core AMD EPYC development machine,
// L2-resident, counting bytes read plus written: a plain copy moves 80-98
// GB/s; summing 2 sources 23 GB/s (float32, scalar) / 57 GB/s (float32,
// AVX2) and 37 / 41 GB/s (float64); 8 sources 13 / 37 GB/s (float32) and
// 27 / 35 GB/s (float64). On the 32-core device a leader's reduction is
// bound by pulling lines from other cores' caches, not by the kernel. A
// vector kernel ends with VZEROUPPER: dirty upper vector halves slow every
// later SSE instruction of the process on Intel cores (kernels_simd.go).
//
// # Where a call's time goes
//
// A build with -tags dpmltrace time-stamps each step of a call (entered,
// plan chosen, children seen, input published, result published, result
// seen, returned, and the drop-in library's C steps around the call into
// Go) for the last 8192 calls of each communicator, and writes them at
// Close to DPML_TRACE; bench/diag/trace.py walks each back-to-back period's
// critical chain (release, the caller's loop, publication, each hop and
// fold). The default build compiles the stamps out.
//
// # Choosing the plan
//
// A call that forces nothing (no Override, no SetOverride, DPML_LEADERS and
// DPML_PIPELINE on auto) is planned by the tuner of package costmodel: a
// cost model fitted from measurements ranks the (variant, l, k) arms of the
// call's key (element class, op class, size bucket, layout; the reduction
// tree's radixes are arms up to 16 KiB on several nodes, up to 1 KiB on
// one: tunerTreeBytes), and an online hill-climber
// explores around the best, freezes once no neighbour is faster, and
// re-explores only after repeated drift (and leaves a settled arm only
// for one more than 5% faster). A call's cost is the second-to-last rank's
// exit after the last rank's entry, on a clock common to the ranks: arrival
// skew does not read as a slow plan (the skew is kept apart), a plan pays
// until its ranks have left, and one rank stalled on its way out does not
// set the sample. All ranks feed it the same numbers, exchanged in two
// small max-allreduces per batch of calls, so all take the same decision
// on every call with no broadcast per call. DPML_TUNING_FILE loads a table at New and saves what
// was learned at Close; DPML_TUNER=static uses the built-in rule instead.
// Where the kernel permits cross-memory attach, every arm of 16 KiB and
// more has a twin that moves the intra-node data that way, so the tuner
// also picks the intra-node path (on the 32-core device it chose it on 4
// nodes of 8 from 1 to 32 MiB, and never on one node of 32, where it lost). Without the tuner (DPML_TUNER=static or a
// forced plan) the path is shared-memory copies unless DPML_INTRA,
// SetOverride or the call's Override asks for cross-memory attach.
//
// # In-network offload
//
// With DPML_OFFLOAD (libsharp: SHArP switches through libsharp_coll, loaded
// at run time; mpi: the MPI library's own offload), New attaches package
// sharp's groups over the leader communicators (one process per node each)
// and all ranks agree on what they can do. Calls up to DPML_OFFLOAD_BYTES
// with a supported type and op then hand the inter-node step to the
// switches, the paper's SHArP designs: node level (one leader, the tree's
// root) at low ppn, socket level (one leader per socket, each offloading its
// partition over its own group) at high ppn; everything else runs on the
// host, as does a call the plan spec marks offload=host. A missing library
// is a warning and the host path; a switch or member lost mid-call fails the
// call within DPML_TIMEOUT. See offload.go, and docs/guide.md for real SHArP
// and for what was verified only against the tests' emulated switch.
//
// # Large messages
//
// Segments are sized so both buffer sets of a node fit in half the
// last-level cache, at most one slot (DPML_SEGMENT_BYTES, 1 MiB). Once a
// call's bytes times the node's ranks reach the last-level cache
// (DPML_STREAM_BYTES), copy-out writes the receive buffer with streaming
// (non-temporal) stores: a result that cannot stay in cache is not first
// read in from memory. Neither changes the arithmetic: results are the same
// bits with and without them.
//
// # Settings
//
// DPML_LEADERS, DPML_PIPELINE, DPML_SEGMENT_BYTES, DPML_TIMEOUT and the
// others are listed once, with their scope, in docs/ENVIRONMENT.md
// (generated from package config). A per-call Override forces a plan for
// benchmarks and tests; it must be the same on every rank.
//
// New never leaves a rank behind: every rank takes every setup collective
// whatever its own settings say, then the ranks agree on the outcome
// (Agree). A setting that does not parse on some rank, or a setting that
// must be equal on all ranks but differs (docs/ENVIRONMENT.md, column
// "compared"), fails New on every rank with the same message, naming the
// variable and the values seen on which ranks; the error wraps ErrConfig,
// ErrMismatch or ErrSetup. DPML_CHECK=1 compares each call's count, element
// type, op, in-place use and Override across the ranks first (one extra
// allreduce of 192 bytes), and a difference is the same ErrCheck on every
// rank instead of wrong results or a hang. docs/RELIABILITY.md lists the
// bad inputs and faults tried and what happens.
package dpml
