// Package costmodel is the analytic cost model of DPML allreduce plans and
// its table format: a fitted model (the paper's Eq. 5 and Eq. 7, extended
// with segments, pipelining and the Fig. 1 concurrency zones) prices every
// plan, and a versioned JSON table carries a machine's model and tuned
// choices. It is pure Go and calls no MPI.
//
// The cost model and what uses it are three packages, one job each:
//
//	costmodel          Model (Predict / Breakdown price a plan.Shape), Key
//	                   (a class of calls: element and op class, size bucket,
//	                   layout), Arm, Table (ReadTable, Write, DefaultTable)
//	                   and the table files (WriteTableFile, CheckTableFile)
//	costmodel/learn    the online learner (Tuner): the model's pick first,
//	                   exploration within a budget, the commit step's
//	                   exchange; it starts from and saves into Tables
//	costmodel/offline  the offline tools (used by dpmlbench and the tests,
//	                   never by the engine): Calibrate fits a Model to
//	                   measurements (robust least squares on gonum), Compare
//	                   and Picks report the model against them, Simulate
//	                   drives Tuners on synthetic surfaces; it reads the
//	                   benchmarks' reports through their schema package
//
// The engine (package dpml, and libdpml.so) links costmodel and
// costmodel/learn only.
//
// # The model
//
// Symbols (times in seconds, sizes in bytes):
//
//	n        message bytes            h    nodes           ppn  smallest ranks per node
//	l        leaders per node         k    sub-chunks per leader (Pipelined)
//	a, b     inter-node startup, per byte (b includes the remote reduction)
//	a', b'   shared-memory copy startup, per byte (under ppn-way copying)
//	c[e]     reduction per byte and folded source, per element class e
//	r0       reduction startup per leader and segment
//	P        reduce_par: l leaders folding at once are 1 + (l-1)/P times slower
//	s        synchronisation per segment (the engine's flag waits)
//	M(p, x)  concurrency curve: throughput of p concurrent pairs of x-byte
//	         messages relative to one pair (Fig. 1)
//
// A plan is a plan.Shape, the engine's type, and is cut as the engine cuts
// it (plan.Split). A message is cut into S = ceil(n / seg) segments (seg =
// Shape.SegmentBytes; 0: one segment). A segment of g bytes has la =
// ceil(g / per) active leaders, per = g/l rounded up to the 64-byte cache
// line (small messages leave leaders idle), and each of a leader's ka
// active sub-chunks holds x = per/k bytes (rounded up likewise). Per
// segment (Model.CopyTime, ReduceTime and, for k = 1, InterTime):
//
//	T_copy  = la*a' + b'*g                                  copy-in   (Eq. 7)
//	T_comp  = r0 + (ppn-1) * per * c[e] * (1 + (la-1)/P)    reduce    (Eq. 7)
//	T_comm  = ceil(lg h) * ( (ka-1)*a + p*(a + x*b) / M(p, x) ),  p = la*ka
//	                                                         inter     (Eq. 5)
//	T_bcast = la*a' + b'*g                                  copy-out  (Eq. 7)
//
// T_comm is the inter-node algorithm's own cost function (InterCostOf,
// indexed by plan.Inter like the engine's implementations; Shape.
// InterAlgorithm names it). Above is the MPI library's allreduce
// (interMPI: recursive doubling). The ring (interRing) runs 2(h-1) rounds
// of one chunk, x cut in h cache-line pieces: 2(h-1) * ( (ka-1)*a +
// p*(a + x/h*b) / M(p, x/h) ). The in-network offload (interSharp) costs
// sharp_a + x*sharp_b per step, whatever h. Arms: the ring's twins of the
// grid arms on three nodes or more, from Config.RingBytes.
//
// With M = 1 and k = 1, T_comm is Eq. 5's lg(h)*(a + n*b/l) for one leader;
// la concurrent leaders (and la*ka sub-chunks) share the network as the
// concurrency curve says: zone A (small x, message-rate bound, M ~ p) gives
// them for free, zone C (large x, bandwidth bound, M ~ 1) serialises them,
// zone B interpolates. Pipelining pays k startups (Eq. 5's a*k) but moves
// x = n/(l*k) back toward zone A. One node (h = 1) has no T_comm.
//
// With A = T_copy + T_comp + s, B = T_comm and C = T_bcast of a segment:
//
//	DPML       T = sum over segments of (A + B + C)                 stages add
//	Overlap    T = A + (S-2)*(max(A, B) + C) + max(A_last, B) + C + B_last + C_last
//	           (Shape.Overlap, set for Pipelined; S > 1 and h > 1: segment
//	           i's inter-node step overlaps segment i+1's copy-in and
//	           reduce; copy-out waits for it: fill, steady steps, drain)
//	Native     T = ceil(lg(h*ppn)) * (native_a + n*native_b), or 1.05 x DPML
//	           with l = 1 when those are unfitted
//
// Concurrency is a small table (Concurrency): rows are message sizes,
// columns pair counts, interpolated linearly in (log2 size, log2 pairs),
// clamped to [0.25, p]; ZoneCurve builds the three-zone default.
//
// # Fitting
//
// Package costmodel/offline fits the parameters (Calibrate); its
// documentation lists the samples each parameter group is fitted from.
//
// # Persistence
//
// A tuning table is JSON (SchemaVersion 2; ReadTable also reads version
// 1, which had no tree arms, and rejects other versions and unknown
// fields):
//
//	{
//	  "schema": 2,
//	  "provenance": {"host": ..., "cores": 32, "layout": "4x8", "mpi": ...,
//	                 "date": "RFC 3339", "command": ..., "note": ...},
//	  "model": { "a": .., "b": .., "a_shm": .., "b_shm": .., "c": {"any": .., "float32": ..},
//	             "r0": .., "reduce_par": .., "s": .., "native_a": .., "native_b": ..,
//	             "tree_hop": .., "tree_kid": .., "tree_release": ..,
//	             "concurrency": {"log2_bytes": [..], "pairs": [..], "mult": [[..]..]} },
//	  "entries": [ {"elem": "float32", "op": "arith", "log2_bytes": 20, "nodes": 4, "ppn": 8,
//	                "variant": "pipelined", "leaders": 8, "pipeline": 2,
//	                (a tree arm: "variant": "dpml", "leaders": 1, "pipeline": 1,
//	                 "intra": "tree", "radix": 8)
//	                "estimate_s": 0.00123, "prior_s": 0.00110, "samples": 24,
//	                "state": "frozen", "measured": [ per-arm estimates, informative ]}, ... ]
//	}
//
// The learner's Tuner.Save writes it (entries sorted by layout, class and
// size); its Load and LoadTable read one (package costmodel/learn). DefaultTable is the embedded default_table.json: a
// PLACEHOLDER with the model calibrated on a 1 x 32 sweep of the device host
// and that sweep's best arm per size as exploring starting points (the sweep
// predates the cross-memory-attach path, so it is no verdict); regenerate it from device runs
// (COSTMODEL_REGEN=1 go test ./costmodel/offline -run
// TestRegenerateDefaultTable rebuilds it from offline/testdata/).
package costmodel
