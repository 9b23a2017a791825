// Package learn is the online learner of DPML allreduce plans: per Key
// (a class of calls, package costmodel) it starts on the cost model's pick
// and refines the choice from the times of real calls, within an
// exploration budget. It is pure Go: the engine (package dpml) supplies
// the measurements and carries the few words the ranks exchange; nothing
// here calls MPI.
//
//	Tuner        per-Key learner: KeyState (Next, Record), Stamps, Fold,
//	             Verdicts, CommitVerdicts (the commit step through the node
//	             segment), Pending, Exits, Commit (through MPI)
//	Config       the learner's settings (DPML_TUNER_*)
//	tables       NewTunerFromTable, LoadTable, Save: a costmodel.Table in,
//	             the learned state out
//
// # Model first, learning within a budget
//
// By default (Config.Budget 0.02, DPML_TUNER_BUDGET=2) a new key runs the
// model's pick from its first call, exactly what ModeModel runs, and
// learns only as far as its own calls pay for it (budget.go): it tries one
// candidate arm at a time (the arms the model prices within Candidates
// times its pick, nearest first; within Reject squared once the key's own
// samples show the model wrong there; the next smaller size bucket's
// winner first), each trial admitted at the commit where the key's credit,
// Budget x its time so far less what learning has cost it, covers the
// trial's expected cost and two of the incumbent's calls more. A
// candidate faster by Improve becomes the incumbent; one whose first
// sample exceeds ProbeReject times the incumbent is dropped (that sample
// ends the batch, and while an engine holds the tuner for its commit the
// key runs the incumbent, so the verdict comes before the candidate's
// next call). A settled
// key records one call in a stride that keeps the tuner's overhead
// (OverheadGuess until measured) within SampleShare of its time. Every
// term of the books is agreed, so the ranks decide alike; a drift (Strikes
// windows) makes every arm a candidate again. A key of 10 calls runs the
// pick only; the time lost to learning stays within the budget plus that
// margin (TestBudgetBoundsExploration, simulated keys of 10 to 100,000
// calls). Loaded table entries start settled, with no candidates until a
// drift. Config.Budget < 0 is the explore-first climb described next.
//
// # The learner
//
// A Key is (element class, op class, size bucket = floor(log2 n), h,
// smallest ppn). Its arms are the feasible plans: l in 1, 2, 4, ... up to
// ppn, and ppn itself (with l*64 <= the bucket's largest size); DPML (k = 1)
// and, on several nodes, Pipelined with k in Config.Pipelines ({1, 2, 4,
// 8}; k = 1 only when the bucket spans several segments, and l*k*64 <= the
// largest size); for buckets whose smallest size is at most
// Config.TreeBytes (16 KiB), the reduction tree (l = 1) with radix 4,
// 8, 16, ... (Config.TreeRadixes) up to the first that makes the node's tree flat,
// and on several nodes l = 2, 4, ... (at most plan.MaxTrees) trees over
// disjoint partitions at the radix nearest DefaultTreeRadix (a line from
// that radix's tree arm); and Native
// (unless Config.NoNative; alone when ppn = 1). The grid arms form a graph
// over (l, pipeline level DPML < k=1 < 2 < 4 < 8) whose edges join
// adjacent cells; the tree arms form a line by radix, joined to the grid's
// (l = 1, DPML) cell at the radix nearest DefaultTreeRadix. The cost
// surface on it is close to unimodal (AutoCCL's observation for its
// resource knobs), so the learner climbs it. Native sits off the grid and
// is measured once per episode.
//
// The tree is priced along its longest path (plan.TreeFanIn, the shape
// leaders.BuildTree builds inside a NUMA domain): per level tree_hop +
// (children x tree_kid), the children's partials folded (and, above
// plan.InlineBytes, moved: b' + c per byte), then tree_release plus the
// copy-out, and the root's inter-node allreduce on several nodes. l trees
// over disjoint partitions (one per leader) cost the first tree's path on
// a partition's bytes plus one root level per further active tree (a rank
// works the trees in order), and the roots' concurrent inter-node steps.
//
// # What a call costs: arrival skew
//
// Every rank stamps its call's entry and exit on a clock common to the
// ranks (RecordSpan). In a real program the ranks arrive at different
// times, and a rank that arrives early spends most of its call waiting for
// the last one: that wait says nothing about the plan. The commit step
// exchanges, in one max-allreduce, each sample's last entry, first entry
// (negated), longest duration and last exit, then, in a second
// max-allreduce (Exits, with the rank that left last excluded), the
// second-to-last exit; the cost of a call (Config.Cost = CostSecondExit)
// is that exit after the last entry: the time the plan kept the program
// once it could start, since whatever the ranks do next together waits for
// them to leave, without the one rank that a shared machine stalls on its
// way out now and then (CostLastExit keeps it: one max-allreduce). The
// last entry minus the first is the arrival skew, kept apart (a running mean per key:
// Info.Skew, printed by DPML_VERBOSE and recorded by the benchmarks).
// CostSlowest, the longest duration, is the rule before skew was
// handled; TestLearnerIgnoresSkew shows what it does with skew up to
// three times the cost. CostMeanExit, the ranks' mean exit after the last
// entry (a second, integer sum-allreduce: Exits), is kept to show what it
// does: it underprices a plan whose ranks leave at different times, and
// on the device (1 x 16, C client, back to back) the learner then settled
// on trees 1.3-1.6x slower than the best copies plan at 4 B to 1 KiB
// (TestLearnerCountsLastExit shows it on a simulated spread). One rank
// stalled on its way out sets its call's cost under the last exit: in the
// simulator with 16 ranks and 15% stalls per rank the learner ends at the
// best arm in 47% of runs with the last exit and 72% with the
// second-to-last (TestLearnerSecondExitIgnoresStalls). Early rejection
// also looks at two samples, not one, and an arm needs 5 samples
// (Config.SamplesPerArm).
//
// Back to back the second exit reads low for a plan whose last rank lags
// the others (the last to leave one call is the last to enter the next,
// and the lag falls before that entry): the device read 0.76 us for a
// tree whose calls took 2.1 us. CostPenult, the penultimate exit after
// the penultimate entry, is the back-to-back period without one stalled
// rank (a call after one of another arm is no sample, so its entries are
// the arm's own); TestLearnerPenultCountsBackToBack shows the bias and the
// fix in the simulator's B2B mode. It is not the default: on the device
// no rule did better over all sizes, and with stalls back to back a
// stalled leaver enters the next call last and makes that sample read
// low. Per-call traces of fixed plans (1 x 16, C client, 8 B to 1 KiB)
// put the second exit's median at the period less a near-constant
// 0.63-0.72 us (the time outside the engine) for trees and copies alike,
// so it ranks them as the period does; the 0.76 us above was the minimum
// of five first calls, which is what misled the learner (see the schedule
// below).
//
// An earlier rule took the shortest duration over the ranks (the last
// arrival's own time). It needs no common clock, but the rank that leaves
// first, a tree's root, does not wait for the release to reach the others:
// on the device (1 x 16, back to back and with 20 us of skew) that rule
// settled on radix-2 trees that ran 1.3 to 2.4 times slower than the best
// fixed plan.
//
// # Decisions that stay
//
// Every rank runs the same deterministic state machine on the same
// committed numbers (see the contract below), so there is one decision
// per communicator without a broadcast per call; the commit count is its
// version. A settled key leaves its plan only after Strikes (3) drift
// windows in a row, and every exploration that comes back to the same arm
// doubles that number for the key (up to 3 x 32 windows): noise that keeps
// firing is heard less and less often. A settled key records one call in
// its stride, which doubles with every window that confirms its estimate
// (4 up to MaxStride, 256): a steady key costs one exchange per thousands
// of its calls. A window that strays halves it (a drift being confirmed
// is heard sooner), but never below the key's floor: the engine notes
// what the tuner has cost it since the last commit (NoteOverhead: the
// commit steps' two collectives and, for libdpml.so's C callers, the
// trip into Go a timed call makes for a plan the C layer would run
// itself), the ranks agree on the largest per recorded call (one more
// value in Pending's max-allreduce, a running mean over commits:
// Overhead), and the floor is the smallest
// stride at which that overhead is at most SampleShare (1%) of the key's
// time, even where that passes MaxStride (a key of 1.3 us calls and 5-10
// us of overhead per recorded call needs one call in 1024): up to an
// eighth of ConfirmCalls before the scheduled confirmation, so that it
// comes on time, and up to 2^23 after it. On the device (1 x 16, C
// client, back to back) straying windows
// had left settled keys of 8 B-1 KiB at strides of 8-64, sampling one
// call in 20-40, and auto ran 6-10% behind the same plan fixed; with one
// call in 4096 sampled, 0-3% (TestLearnerSamplesWithinShare). Once a key
// has settled after its scheduled confirmation, its stride jumps past
// MaxStride to about the calls it makes in Config.SamplePeriod (1 s), at
// the call rate its committed samples show (their agreed entries: the
// same on every rank), so a steady key comes back to the engine about
// once a second whatever its size (TestLearnerSettledSamplesPerPeriod).
// The jump comes with the confirmation's freeze itself
// (TestPeriodStrideAfterConfirmation): with the jump after two drift
// windows instead, a 4-16 B key spent its next 16,000-32,000 calls
// visiting Go every 1024 calls, and ran 1-7% behind the same tree fixed.
// For libdpml.so's C callers each such trip into Go costs more than the
// trip: after more than 10 ms in C the Go runtime's monitor wakes at it
// and ticks on the rank's core for about 20 ms, on every rank at once. A
// drift is then heard within a few windows of 8 s. Info.Switches counts
// freezes on another arm than the last freeze; Info.Changes counts calls
// whose plan differed from the key's previous call after it first settled
// (later probes included).
//
// A key explores once more on schedule, whatever its drift windows say:
// when it has made Config.ConfirmCalls (8192) calls since it first
// settled. Its first exploration ran in its first calls, in a process
// that had just started (the Go runtime's monitor still at its shortest
// ticks, pages and lines touched for the first time); on the device
// (1 x 16, C client, back to back) the learner settled from those calls
// on trees 10-18% slower than the best radix and, with no drift to fire
// a window, kept them for the whole run. The confirmation takes every
// arm's full ring of samples (8) and leaves the settled arm for one
// faster by Improve (2%), as a first exploration would, unless the key
// has switched before (then by its grown Leave margin, below): noise did
// not start it, so the Leave that guards drift episodes has nothing to
// guard against, and held to Leave it kept arms that it measured 3-5%
// behind the best, as the client did (1x32, 16 KiB;
// TestLearnerConfirmsNearBest). It starts once per key (not for keys
// loaded from a table), and when it finds the same arm the key does not
// grow deafer to drift (TestLearnerConfirmsOnce).
//
// Each sample of the confirmation is a block of Config.ConfirmBlock (8)
// back-to-back calls of its arm, cur's included (the drift window's
// single calls do not seed it then), priced as what the program pays for
// the calls: the back-to-back period per call, without the program's own
// time between them. A single call's cost leaves out what a plan does to
// the call after it, and the second exit leaves out a last rank that
// lags: on the device single-call samples put tree r=8 ahead of r=4 at 1
// KiB in most runs while r=4 ran 8-12% faster back to back, at its
// per-call minimum and median too (TestLearnerConfirmsInBlocks shows a
// lagging last rank caught by blocks).
//
// Every call of a block is buffered with its own entry and exit (the
// batch holds Batch samples, a block taking ConfirmBlock slots), and the
// block costs the mean of its calls' costs (the Cost rule) plus, under
// CostSecondExit, each later call's lag (Tuner.lag): the time from the
// call before's second-to-last exit to this call's last entry, less the
// shortest time any rank spent between the two calls, at most that
// call's last exit. Back to back that is the lagging last rank, the last
// in again; behind a barrier every rank waits for the last one out and
// the barrier's own time is left out; between calls of a computing
// program it is the plan's whole tail. A block timed from its first entry
// to its last exit holds the program's time between the calls: on the
// emulated 4 x 4 cluster with a barrier before each call the blocks read
// 55 us for calls the client timed at 32, arms the client timed 6-8%
// apart read 1-3% apart, inside Leave, and the key kept the slower flat
// copies at 4-16 B; with computation between the calls the ranks'
// computation was noise in every block (TestLearnerConfirmsBetweenGaps,
// TestBlocksLeaveOutGaps). For libdpml.so's C callers a Go call's trip
// into Go, which a tree the C layer runs itself will not pay once the key
// settles, falls between its timed calls and is left out the same way
// (the trip came before the engine's entry stamp). A call after another
// key's call ends the block under way (its calls buffered so far are no
// sample) and is a sample alone, so a program that interleaves its keys
// confirms from single calls.
//
// A caller that can run a block without the learner on every call asks
// KeyState.Block for it and reports it whole with RecordBlock (each
// call's entry and exit), which leaves the state exactly as the block's
// calls one by one would (TestKeyStateBlock); Warm makes the call before
// it a warm-up, no sample. libdpml.so's engine does this for the arms its
// C layer runs (a tree of at most 1 KiB, the MPI library's allreduce):
// the call before the block runs in Go as a warm-up, and the C layer runs
// the block's calls and stamps each one's entry and exit, so no call of
// a block pays the trip into Go (dpml/fused.go, grantFused); only a block
// another call cuts short goes on through Go. A Go program's blocks of
// those arms run the same way, on the engine's clearance for Go callers,
// without the engine's per-call work (dpml's clearGo). The confirmation costs about
// ConfirmBlock times the calls of the first exploration, once per key.
//
// # The cost of exploring
//
// An episode samples cur and its neighbours and Native, R (5) calls
// each, in rounds: one call of each arm per round, cur first, then the
// others by the model's prior (under CostPenult each arm's calls stay
// together, since a call after another arm's is no sample there). A
// burst of other load, or the process's start-up, then slows every arm
// alike instead of the one arm whose block it hits; sampled in blocks,
// the device ranked tree r=8 over r=4 (13-15% faster there) from five
// calls each, and the simulator's bursts mislead blocks in a fifth of
// its runs (TestLearnerExploresRoundRobin).
//
// A sample is a warm call: a call right after one of the same key's
// other arms only warms its arm up and is no sample (unless
// Config.ColdSamples), so the rounds run each arm in pairs. Back to back a
// plan's call starts from the trail of its own last call (the ranks
// arrive in the order it released them, its flag lines sit where it left
// them), and a sample after another arm's call measures a state the
// plan never meets when it runs. With cold samples the device's
// confirmations (1 x 16, C client) ranked tree r=8 10-19% ahead of r=4
// at 1 KiB while r=4 ran 7-10% faster back to back, and settled on r=8 in
// 3 runs of 3; with warm samples on r=4 in 3 of 3, and auto/best at
// 256 B-1 KiB fell from 1.11-1.14 to 1.03-1.04 (TestLearnerSamplesWarm).
// A call after another key's call is a sample: a program that interleaves
// its keys runs each key's calls after the others'. Warm-up calls keep no
// time (Timed), and they double what an episode costs.
//
// In a grid a cell's neighbours are at most six; a set of at most 20
// arms (one node's: 9 to 17) is searched whole, every arm a neighbour of
// every other, since a climb stops on the first stretch where
// neighbours are within Improve of each other
// (TestLearnerSearchesSmallSetsWhole). An arm the model expects to be more than Reject (2)
// times slower than cur first gets one call, and any arm whose first call
// took more than Reject times the episode's best estimate gets no more:
// so an arm much slower than the best costs at most two calls per
// episode (its warm-up and its one sample), and the others at most 2R
// calls each, at most Reject times the best's time. Per episode the
// extra time is bounded by (2R x (arms within Reject of the best) x
// (Reject - 1) + 2 x (slow arms) x (their time)) over the best arm's
// calls; in the learner's simulations (TestLearnerFindsBest) a key
// settles after about 85 calls (8.5 per arm tried) and the regret over
// 600 calls is about 54 best-call times on average (27 with cold
// samples).
// Native is always an arm: a key settles on the MPI library's own
// allreduce when it beats the climb's arm by more than Improve (2%).
//
// A key that has settled leaves its arm in a later episode started by
// drift only for one faster by more than Leave (5%): on a shared machine
// drift windows fire on noise, and without that margin near-equal arms
// traded places at every episode (the device's long runs: 0-5 switches
// per key in 100,000 calls; TestLearnerKeepsSettledArm). Each switch the key makes raises
// that margin by Leave (10% after one, up to 20%): a key that has switched
// has shown that its best arms are within the machine's noise of each
// other, and 5% alone still let near-equal tree radixes trade places 1-3
// times per key in 100,000 calls on the device. An arm faster by more
// than the grown margin is still taken (TestLearnerLeavesHarderAfterSwitching).
//
//	              +--- drift (Strikes windows in a row), or once: ConfirmCalls ---+
//	              v                                                               |
//	new key --> EXPLORING ------------------------------------------> FROZEN
//	 cur = model's best grid arm     no neighbour (nor Native) beats   uses cur; one call in
//	 sample cur, its grid            cur by > Improve (2%): freeze     its stride (floor..256) is
//	 neighbours and Native,          on cur, or on Native if it beats  sampled; every W (8)
//	 R (5) calls each, in rounds,    cur by > Improve                  samples: median >
//	 favourites first; when a                                          est*(1+Drift), Drift
//	 measured neighbour beats cur                                      = 15%: strike; else
//	 by > Improve: move there                                          est += (median-est)/4
//	 (first improvement)
//
// An arm's estimate is the minimum (Config.Stat; or the median) of its
// last R..8 samples: timing outliers are one-sided, and the max over ranks
// makes them frequent. The frozen estimate is the median of cur's samples;
// re-exploration drops every estimate but cur's (seeded from the drift
// window) and climbs again from cur (from the model's best grid arm if cur
// is Native). Keys loaded from a table start FROZEN on the table's arm, with
// its estimate. Config.Mode = ModeModel freezes every key on the model's
// best arm and never samples.
//
// Per call, Choose is a map lookup (one-entry cache in front) and, while
// exploring, a walk of at most six schedule slots: O(1), no allocation
// (BenchmarkChooseFrozen: 13-16 ns on an idle 2-core development VM, up
// to ~50 ns under load; a whole frozen call with MakeKey and Record 40 ns
// idle, ~100 ns loaded).
//
// # Determinism contract
//
// Every rank must take the same decision on every call, with no broadcast
// per call. The Tuner is a deterministic state machine:
//
//  1. Choose(k) is a pure function of the committed state and of the
//     number of calls of k recorded since the last Commit. It never looks
//     at local times.
//
//  2. RecordSpan(k, arm, entry, exit) stores the times in a fixed-size
//     batch (Config.Batch) and advances that count. Which calls are stored
//     (all while exploring, one in the key's stride when frozen), and its
//     result, depend only on the state and the call sequence, never on the
//     time: every rank gets the same answer.
//
//  3. When Record returns true (the batch is full, or an exploring key got
//     every call its schedule asked for), every rank, before its next call
//     on this communicator, runs the commit step:
//
//     t.NoteOverhead(s)                          // this rank's tuner cost since the last commit (seconds)
//     buf := t.Pending()                         // entries, -entries, durations, exits, overhead; same length everywhere
//     mpi.AllreduceInPlace(comm, buf, mpi.OpMax) // elementwise max over ranks
//     sum := t.Exits(buf)                        // unless t.Second() == SecondNone: exits after each last entry (int64 ns), and a 1
//     mpi.AllreduceInPlace(comm, sum, mpi.OpSum) // sums over ranks, and the rank count
//     t.Commit(buf, sum)                         // the only call that changes decisions
//
//     MAX, and SUM over Exits' integer nanoseconds, are exact and
//     order-free, so every rank commits bit-identical values, applies them
//     in the same order, and reaches the same state.
//
//  4. Therefore the inputs must be the same on every rank: the same Config
//     (SegmentBytes included), the same Model and the same loaded Table
//     (read them on one rank and broadcast the bytes, or use the
//     built-ins), the same binary (floating-point comparisons of the
//     priors), and the same sequence of tuned calls, which MPI's collective
//     semantics already give: every rank makes the same allreduce calls on
//     a communicator with the same count, type and op. A call that does not
//     use the tuner (a per-call Override, DPML_LEADERS set, DPML_TUNER=static)
//     must skip Choose and Record on every rank alike; only successful calls
//     are recorded. Fingerprint hashes everything Choose depends on: compare
//     it across ranks once after setup (and in tests).
//
//  5. A Tuner belongs to one communicator and is not safe for concurrent
//     use.
//
// # Engine integration (package dpml)
//
// At New (collective; DPML_TUNER=auto or model):
//
//	cfg := learn.Config{Mode: ModeLearn or ModeModel,
//		SegmentBytes: the segment the engine uses for plans without an
//		override (min(segBudget, defaultPlan's SegElems), in bytes)}
//	tb := costmodel.DefaultTable(), or costmodel.ReadTable(bytes of
//		DPML_TUNING_FILE read on rank 0 and broadcast)
//	t, err := learn.NewTunerFromTable(cfg, tb)
//	optional: check t.Fingerprint() is equal on all ranks
//
// Per call whose plan is automatic (no Override, DPML_LEADERS and
// DPML_PIPELINE auto, tuner on):
//
//	key := costmodel.MakeKey(elemClass, opClass[op], count*elemSize,
//		costmodel.Layout{Nodes: c.nodes, PPN: c.minPPN})
//	    // elemClass = costmodel.ElemClassOf(reflect.TypeFor[T]().Kind());
//	    // opClass[op] = costmodel.OpClassOf(op.String()), filled once
//	arm := t.Choose(key) // a plan.Shape: variant, l, k, transport
//	o := Override(arm)   // dpml.Override: a defined type over plan.Shape
//	timed := t.Timed(key) // read the clock only for the calls Record keeps
//	t0 := clock(); err := execute(plan(o)); t1 := clock() // common clock
//	if err == nil && t.RecordSpan(key, arm, t0, t1) {
//		t.NoteOverhead(ovh) // the last commit's time and timed trips since (seconds)
//		buf := t.Pending()
//		mpi.AllreduceInPlace(c.world, buf, mpi.OpMax) // not inside the timed region
//		sum := t.Exits(buf) // nil if t.Second() == SecondNone
//		mpi.AllreduceInPlace(c.world, sum, mpi.OpSum)
//		t.Commit(buf, sum)
//	}
//
// (Pipelined with k = 1 is a valid arm: segment overlap without
// sub-chunks.) At Close, rank 0 may
// SetProvenance and Save to DPML_TUNING_FILE; no collective is needed, the
// state is the same everywhere. Offline, dpmlbench calibrate fits a model
// to forced-plan sweeps (package costmodel/offline) and saves it in a
// table.
package learn
