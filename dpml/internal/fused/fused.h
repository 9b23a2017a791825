// The small-message reduction tree, in C: the one implementation of the
// tree's fold (a rank's own input, then its children's partials in tree
// order) and of where its partials and result live in the node segment.
// Two callers run it:
//
//   - the Go executor's tree transport (dpml/tree.go), step by step, for
//     every tree plan: one tree or l trees over partitions, inline or
//     through the slots, any number of segments: it waits with the
//     engine's shm.Waiter and calls dpml_tree_step and dpml_tree_fold;
//   - the fused call below (dpml_fused_call, dpml_fused_up and
//     dpml_fused_down), which runs a whole call of a plan "one tree, one
//     segment" in one C routine, waits included: the Go engine calls it
//     for its callers (dpml/fused.go), and the drop-in library's C layer
//     for calls of a plan the engine has cleared in advance, without
//     entering Go at all (dropin.c).
//
// Both fold with the same functions over the same lines, generations and
// places, so a call's result is the same bits on either path.
#ifndef DPML_FUSED_H
#define DPML_FUSED_H

#include <stdint.h>
#include <time.h>

// The longest confirmation block the drop-in times (costmodel's maxBlock,
// the bound of Config.ConfirmBlock).
#define DPML_FUSED_MAX_BLOCK 64

// The most parked clearances a state holds (dpml_fpark).
#define DPML_FUSED_PARKED 32

// dpml_mono_ns is CLOCK_MONOTONIC in ns: the clock the engine's nanotime
// reads, for the waits' deadlines here and the drop-in's stamps.
static inline int64_t dpml_mono_ns(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

// Results of the calls below.
enum {
	DPML_FUSED_OK = 0,
	DPML_FUSED_TIMEOUT = 1, // a wait ran past the timeout: see dpml_fused.fail_*
	DPML_FUSED_ABORTED = 2, // the node's abort word was raised
	DPML_FUSED_INTER = 3,   // the root's inter-node step failed: fail_index is its MPI error code
};

// dpml_ftree is one rank's view of one reduction tree (tree j of a plan of
// l trees, each over its own flag lines): its own flag line in the tree,
// its children's lines in fold order with their local ranks, and whether
// it is the root. kids and kid_rank point into the same allocation
// (dpml_ftree_new).
typedef struct dpml_ftree {
	uint64_t *my;    // this rank's flag line in the tree: seq, then the inline payload
	uint64_t **kids; // each child's flag line in the tree, in fold order
	int *kid_rank;   // their local ranks (slot index)
	int nkids;
	int me;   // local rank
	int root; // 1 at the tree's root
} dpml_ftree;

// dpml_fpark is a parked clearance: the next `budget` calls of (kind, op)
// whose count lies in [lo, hi] run tree (or, with native set, the MPI
// library's allreduce) without the engine, as the clearance of
// dpml_fused does for one exact count. The engine parks a clearance for
// every key it has cleared, so that a program that alternates between
// sizes runs each of them in C, and for the sizes it readies before a
// program's first calls (dpml's Warm), so that a size's first call runs in
// C too. Every parked clearance of a key comes from the learner's state,
// which is the same on every rank, so every rank runs the same calls here.
typedef struct dpml_fpark {
	int64_t budget;
	uint64_t ran; // calls run since the engine's last call
	int kind, op;
	int lo, hi; // counts
	int native;
	const dpml_ftree *tree;
} dpml_fpark;

// dpml_fused is a communicator's C state, in C memory: the node segment's
// layout, which the tree's steps read, and the fused call's waits and
// clearances. Set up and freed by the Go engine, read by the drop-in's C
// layer.
typedef struct dpml_fused {
	// Layout of the node segment (dpml's nodeSegment).
	volatile uint64_t *abort;
	uint64_t *out0;      // out[0]: the root's result line
	char *data;          // the slots' area
	int64_t slot_stride; // bytes between slots
	int64_t buf_stride;  // bytes between the two buffer sets
	int ppn;
	int inline_bytes;    // messages up to this travel in the lines

	// The waits (shm.Waiter's settings and shm.Schedule's numbers).
	int64_t timeout_ns; // < 0: forever
	int spin;           // loads before yielding (< 0: none; never 0)
	int nosleep;        // yield for the whole wait, never sleep
	int yield_rounds, sleep_every, clock_every, abort_every;
	int64_t min_sleep_ns, max_sleep_ns;

	// The drop-in's clearance, written by the engine after each of its
	// calls: the next `budget` calls of exactly (count, kind, op) run
	// plan `tree` and need nothing of the engine but a generation. The
	// drop-in counts them in `ran` and keeps `gen`, the communicator's
	// generation, which the engine takes back at its next call.
	// With native set the plan is the MPI library's own allreduce, which
	// the drop-in calls directly (tree is NULL; the generation stays).
	int64_t budget;
	int count, kind, op;
	int native;
	const dpml_ftree *tree;
	uint64_t gen;
	uint64_t ran;
	// On several nodes, the C caller that runs the root's inter-node step
	// itself (the drop-in: dpml_fused_up, its own allreduce on inter,
	// dpml_fused_down) needs the communicator of the node roots: inter is
	// its MPI handle as an integer (dpml's leader communicator; opaque
	// here, and meaningful at the tree's root only), and nodes > 1 says
	// the clearance covers such calls. nodes is 0 where the engine left
	// it unset: single-node calls only.
	int nodes;
	uintptr_t inter;
	// The drop-in's CLOCK_MONOTONIC (ns) when it entered the call it now
	// routes through Go; the engine takes it (0: none). See dpml's
	// trip and transition.
	int64_t c_entry_ns;

	// timed: the clearance is one block of the learner's confirmation
	// (costmodel.KeyState.Block): the drop-in stamps CLOCK_MONOTONIC (ns)
	// before each of its calls runs (blk_entry_ns[ran]) and after it has
	// run (blk_exit_ns[ran]), and the engine reports the block at its
	// next call. A block is timed as the C layer runs its calls once the
	// key settles: no trip into Go. The learner prices a block call by
	// call, leaving out the program's time between them.
	int timed;
	int64_t blk_entry_ns[DPML_FUSED_MAX_BLOCK], blk_exit_ns[DPML_FUSED_MAX_BLOCK];

	// A settled key's stride samples (costmodel.KeyState.Samples), when
	// smp_n > 0 and the clearance is not a block: its calls smp_at,
	// smp_at + smp_stride, ... (counted from 0 by ran), smp_n of them,
	// are stamped as a block's are, into blk_entry_ns and blk_exit_ns
	// from index 0, and the engine records them at its next call. The
	// budget ends at the last of them, which makes the learner's commit
	// step due: the engine is entered once for smp_n samples rather than
	// once for each.
	int64_t smp_at, smp_stride;
	int smp_n;

	// The parked clearances (dpml_fpark), consulted when the clearance
	// above does not cover a call: parked[0..nparked). parked_ran counts
	// their calls since the engine's last call; last_parked is 1 + the
	// index of the one that ran the latest call the C layer ran (0: the
	// clearance above ran it), with that call's count in last_count.
	int nparked;
	dpml_fpark parked[DPML_FUSED_PARKED];
	uint64_t parked_ran;
	int last_parked, last_count;

	// The failed wait of the last call that returned an error.
	int fail_step; // 1: children, 2: the result, 3: the inter-node step
	int fail_index; // the child's local rank, the MPI error code (step 3), or 0
	uint64_t fail_want, fail_seen, fail_abort;
} dpml_fused;

// dpml_fused_ok reports whether the C folds serve (kind, op): every pair
// the engine reduces (dpml's kernels).
int dpml_fused_ok(int kind, int op);

// dpml_wait_step is one back-off round of a wait (shm.Schedule.Step over
// the state's schedule): the round's sleep in ns, 0 to yield.
int64_t dpml_wait_step(const dpml_fused *F, int round, int64_t prev_ns, int *clock);

// dpml_ftree_new allocates a tree view with room for nkids children
// (calloc: free it with free); NULL without memory.
dpml_ftree *dpml_ftree_new(int nkids);

// The tree's steps. inl: the plan moves its data inside the flag lines (a
// message of at most inline_bytes in one segment; only tree 0 of a plan
// ever does), else through the slots of buffer set g mod 2. own is the
// rank's input of the segment (element 0 of the segment); lo and n are
// elements of the segment. They return 0, doing nothing, when (kind, op)
// has no fold (dpml_fused_ok), else 1.

// dpml_tree_fold folds elements [lo, lo+n) of this rank's subtree in tree
// T at generation g into dst (the place of element lo): its own input,
// then each child's partial in fold order, dst = ((own op kid 1) op kid 2)
// op ... . The children must have raised their lines to g.
int dpml_tree_fold(const dpml_fused *F, const dpml_ftree *T, const void *own, void *dst,
	int lo, int n, int inl, int kind, int op, uint64_t g);

// dpml_tree_step is a non-root rank's step in tree T once its children
// there reached g: dpml_tree_fold into its own partial, then its line
// raised to g.
int dpml_tree_step(const dpml_fused *F, const dpml_ftree *T, const void *own,
	int lo, int n, int inl, int kind, int op, uint64_t g);

// dpml_tree_result is where the roots fold the node's result of generation
// g (partition j of an l-tree plan at its offset in it).
void *dpml_tree_result(const dpml_fused *F, int inl, uint64_t g);

// dpml_fused_call runs a whole single-node call of generation g: send (NULL
// for in place: recv holds the input) of count elements of kind, op, the
// result in recv.
int dpml_fused_call(dpml_fused *F, const dpml_ftree *T, const void *send, void *recv,
	int count, int kind, int op, uint64_t g);

// dpml_fused_up is the call's first half on several nodes: a non-root rank
// waits for its children, folds and publishes its partial; the root folds
// the node's result into *res (the place dpml_fused_result names) and
// returns, to run the inter-node step on it.
int dpml_fused_up(dpml_fused *F, const dpml_ftree *T, const void *send, const void *recv,
	int count, int kind, int op, uint64_t g);

// dpml_fused_result is where the root folds the node's result of
// generation g (bytes long): dpml_tree_result for a call of one segment.
void *dpml_fused_result(dpml_fused *F, int bytes, uint64_t g);

// dpml_fused_down is the second half: the root publishes the result; every
// rank waits for it and copies it to recv.
int dpml_fused_down(dpml_fused *F, const dpml_ftree *T, void *recv, int bytes, uint64_t g);

// The drop-in's contract: the C layer of libdpml.so asks whether the engine
// cleared a call (dpml_fused_cleared) and runs it with dpml_fused_run, which
// keeps the clearance's books (budget, generation, and the learner's stamps
// when the clearance is a timed block); before a call it routes through Go
// it calls dpml_fused_enter_go. The MPI library's calls stay the caller's:
// dpml_fused_mpi carries them.
typedef struct dpml_fused_mpi {
	// native runs the call as the MPI library's own allreduce (a native
	// clearance) and returns its MPI result.
	int (*native)(void *ctx);
	// inter runs the root's inter-node step on several nodes: the
	// allreduce, in place, of count elements at buf on the communicator
	// whose handle is F->inter; it returns its MPI result.
	int (*inter)(void *ctx, void *buf, uintptr_t comm);
	// unlock releases the caller's lock on F: called once, as soon as F
	// needs no more protection for the call (before a native call that is
	// not timed, which may take long), or never (the caller releases it).
	void (*unlock)(void *ctx);
	void *ctx;
} dpml_fused_mpi;

// dpml_fused_cleared reports whether the engine cleared a call of
// (count, kind, op) for the C layer: the clearance's budget is not spent.
// Inline: every call the drop-in routes asks.
static inline int dpml_fused_cleared(const dpml_fused *F, int count, int kind, int op) {
	return F->budget > 0 && F->count == count && F->kind == kind && F->op == op;
}

// dpml_fused_run runs a cleared call: send (NULL for in place) and recv,
// count elements of kind, op. It returns DPML_FUSED_OK, with *mpi_rc the
// native call's MPI result (MPI's success, 0, otherwise), or a tree call's
// error (then fail_* say which wait), and sets *timed to 1 when the call
// was one of a timed block, 2 when it was a stamped stride sample.
int dpml_fused_run(dpml_fused *F, const void *send, void *recv, int count, int kind, int op,
	const dpml_fused_mpi *m, int *mpi_rc, int *timed);

// dpml_fused_parked returns the index of the parked clearance that covers
// a call of (count, kind, op), or -1. Inline: every call the clearance
// above does not cover asks.
static inline int dpml_fused_parked(const dpml_fused *F, int count, int kind, int op) {
	for (int i = 0; i < F->nparked; i++) {
		const dpml_fpark *p = &F->parked[i];
		if (p->budget > 0 && p->kind == kind && p->op == op && p->lo <= count && count <= p->hi) return i;
	}
	return -1;
}

// dpml_fused_run_parked runs a call that parked clearance i covers, as
// dpml_fused_run does one the clearance above covers (never timed).
int dpml_fused_run_parked(dpml_fused *F, int i, const void *send, void *recv, int count, int kind, int op,
	const dpml_fused_mpi *m, int *mpi_rc);

// dpml_fused_enter_go notes, for the learner, when the C layer entered a
// call it now routes through Go (c_entry_ns: dpml's trip and transition).
void dpml_fused_enter_go(dpml_fused *F);

#endif
