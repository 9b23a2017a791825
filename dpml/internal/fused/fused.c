// The small-message reduction tree (fused.h): its fold and its places in
// the node segment, which the Go executor's tree transport (dpml/tree.go)
// calls step by step, and the fused call, which runs a whole call of a
// one-tree, one-segment plan in one routine over the same steps. Why the
// tree lives in C: a C program's MPI_Allreduce through libdpml.so would
// enter Go and come back on every call, and those two transitions and the
// Go engine's per-call bookkeeping cost 0.5-0.6 us of a 2 us call on a
// 16-core node, more than the tree's own hops. With the tree in C, the
// drop-in runs the calls the engine has cleared without entering Go, Go
// callers make one cgo call per fused call, and the executor's steps fold
// with the same code, so no second copy of the fold has to be kept equal
// to this one.
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dpml_kinds.h"
#include "fused.h"

static inline uint64_t load_acquire(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

// store_release is shm.StoreRelease: release order is all a single-writer
// flag needs, and a sequentially consistent store (XCHG on amd64) stalls the
// writer until it owns the line its readers hold.
static inline void store_release(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

// dpml_wait_step is shm.Schedule.Step over F's schedule (set from
// shm.DefaultSchedule() by dpml_fused's owner): back-off round `round`'s
// sleep in ns (0: yield), given the round before's (prev_ns), and in
// *clock whether the round ends with a look at the deadline.
int64_t dpml_wait_step(const dpml_fused *F, int round, int64_t prev_ns, int *clock) {
	if (round <= F->yield_rounds || F->nosleep) {
		*clock = round % F->clock_every == 0;
		return 0;
	}
	*clock = 1;
	if (prev_ns == 0) return F->min_sleep_ns;
	if (round % F->sleep_every == 0 && prev_ns < F->max_sleep_ns) return 2 * prev_ns;
	return prev_ns;
}

// wait_at_least waits until *f >= v, with shm.Waiter's phases: spin, then
// back-off rounds of F's schedule (dpml_wait_step); the abort word is
// checked every abort_every spins and every round.
static int wait_at_least(dpml_fused *F, const uint64_t *f, uint64_t v) {
	if (load_acquire(f) >= v) return DPML_FUSED_OK;
	int spins = F->spin < 0 ? 0 : F->spin; // SetWaits resolved 0 to shm.DefaultSpin
	// A countdown, not i % abort_every: a division in every spin would
	// slow the loop that sees a flag first.
	for (int i = spins, ab = F->abort_every; i > 0; i--) {
		if (load_acquire(f) >= v) return DPML_FUSED_OK;
		if (--ab <= 0) {
			if (__atomic_load_n(F->abort, __ATOMIC_RELAXED) != 0) break;
			ab = F->abort_every;
		}
	}
	int64_t t0 = dpml_mono_ns();
	int64_t deadline = F->timeout_ns < 0 ? -1 : t0 + F->timeout_ns;
	int64_t sleep_ns = 0;
	for (int rounds = 1;; rounds++) {
		if (load_acquire(f) >= v) return DPML_FUSED_OK;
		uint64_t a = __atomic_load_n(F->abort, __ATOMIC_RELAXED);
		if (a != 0) {
			F->fail_abort = a;
			return DPML_FUSED_ABORTED;
		}
		int clock;
		sleep_ns = dpml_wait_step(F, rounds, sleep_ns, &clock);
		if (sleep_ns == 0) {
			sched_yield();
		} else {
			struct timespec ts = {sleep_ns / 1000000000, sleep_ns % 1000000000};
			nanosleep(&ts, NULL); // EINTR: an early wake-up is harmless
		}
		if (!clock) continue;
		if (deadline >= 0 && dpml_mono_ns() >= deadline) {
			if (load_acquire(f) >= v) return DPML_FUSED_OK; // ready after all
			return DPML_FUSED_TIMEOUT;
		}
	}
}

static int elem_size(int kind) {
	switch (kind) {
	case DPML_KIND_INT8: case DPML_KIND_UINT8: return 1;
	case DPML_KIND_INT16: case DPML_KIND_UINT16: return 2;
	case DPML_KIND_INT32: case DPML_KIND_UINT32: case DPML_KIND_FLOAT32: return 4;
	case DPML_KIND_INT64: case DPML_KIND_UINT64: case DPML_KIND_FLOAT64: case DPML_KIND_COMPLEX64: return 8;
	case DPML_KIND_COMPLEX128: return 16;
	}
	return 0;
}

// The folds: dst = ((src0 op src1) op src2) op ..., element by element, the
// order of dpml's kernels (which the other transports fold with), so every
// element is the same bits as theirs. Integer arithmetic is done unsigned
// (two's complement wrap-around, as in Go, where C's signed overflow is
// undefined); the logical ops give 0 or 1 as dpml's truth does; min and
// max keep the first operand unless the second compares below (above) it,
// as minOf and maxOf do, NaNs included. Complex products are Go's (CPROD).
// The pairs listed here are every pair the engine reduces: the tree has no
// other fold.
#define SRC(T, k) ((const T *)srcs[k])
#define FOLD(T, U, EXPR)                                                   \
	do {                                                                   \
		T *d = (T *)dst;                                                   \
		const T *s0 = SRC(T, 0);                                           \
		if (nsrc == 1) {                                                   \
			memmove(d, s0, (size_t)n * sizeof(T));                         \
			break;                                                         \
		}                                                                  \
		const T *s1 = SRC(T, 1);                                           \
		for (int i = 0; i < n; i++) {                                      \
			T a = s0[i], b = s1[i];                                        \
			d[i] = (EXPR);                                                 \
		}                                                                  \
		for (int k = 2; k < nsrc; k++) {                                   \
			const T *sk = SRC(T, k);                                       \
			for (int i = 0; i < n; i++) {                                  \
				T a = d[i], b = sk[i];                                     \
				d[i] = (EXPR);                                             \
			}                                                              \
		}                                                                  \
	} while (0)

#define INT_OPS(T, U)                                                      \
	switch (op) {                                                          \
	case DPML_OP_SUM: FOLD(T, U, (T)((U)a + (U)b)); return 1;              \
	case DPML_OP_PROD: FOLD(T, U, (T)((U)a * (U)b)); return 1;             \
	case DPML_OP_MIN: FOLD(T, U, b < a ? b : a); return 1;                 \
	case DPML_OP_MAX: FOLD(T, U, b > a ? b : a); return 1;                 \
	case DPML_OP_LAND: FOLD(T, U, (T)((a != 0) & (b != 0))); return 1;     \
	case DPML_OP_LOR: FOLD(T, U, (T)((a != 0) | (b != 0))); return 1;      \
	case DPML_OP_LXOR: FOLD(T, U, (T)((a != 0) ^ (b != 0))); return 1;     \
	case DPML_OP_BAND: FOLD(T, U, (T)(a & b)); return 1;                   \
	case DPML_OP_BOR: FOLD(T, U, (T)(a | b)); return 1;                    \
	case DPML_OP_BXOR: FOLD(T, U, (T)(a ^ b)); return 1;                   \
	}                                                                      \
	return 0

#define REAL_OPS(T)                                                        \
	switch (op) {                                                          \
	case DPML_OP_SUM: FOLD(T, T, a + b); return 1;                         \
	case DPML_OP_PROD: FOLD(T, T, a * b); return 1;                        \
	case DPML_OP_MIN: FOLD(T, T, b < a ? b : a); return 1;                 \
	case DPML_OP_MAX: FOLD(T, T, b > a ? b : a); return 1;                 \
	}                                                                      \
	return 0

// A complex product as Go computes it (cmd/compile, ssagen's OMUL of a
// complex): the parts widened to double, re = ar*br - ai*bi and
// im = ar*bi + ai*br, each rounded once to the part's type. Not C's
// complex multiply, which recovers infinities by Annex G where Go does
// not; and no fused multiply-add, as Go's amd64 code below GOAMD64=v3 has
// none: on a target with FMA each product goes through ROUNDED (GCC fuses
// a product into the sum that reads it there, and its complex-multiply
// pattern does so even under -ffp-contract=off, which cgo's flags would
// not pass anyway). Both parts of an element are read before either is
// written: dst may be src0.
#if defined(__FMA__) || defined(__aarch64__)
#define ROUNDED(x) __extension__({ double r_ = (x); __asm__("" : "+m"(r_)); r_; })
#else
#define ROUNDED(x) (x)
#endif
#define CPROD(T)                                                           \
	do {                                                                   \
		T *d = (T *)dst;                                                   \
		if (nsrc == 1) {                                                   \
			memmove(d, SRC(T, 0), (size_t)n * 2 * sizeof(T));              \
			break;                                                         \
		}                                                                  \
		for (int k = 1; k < nsrc; k++) {                                   \
			const T *a = k == 1 ? SRC(T, 0) : d, *b = SRC(T, k);           \
			for (int i = 0; i < n; i++) {                                  \
				double ar = a[2 * i], ai = a[2 * i + 1];                   \
				double br = b[2 * i], bi = b[2 * i + 1];                   \
				double rr = ROUNDED(ar * br), ii = ROUNDED(ai * bi);       \
				double ri = ROUNDED(ar * bi), ir = ROUNDED(ai * br);       \
				T re = (T)(rr - ii), im = (T)(ri + ir);                    \
				d[2 * i] = re, d[2 * i + 1] = im;                          \
			}                                                              \
		}                                                                  \
	} while (0)

// A complex sum is a sum of its parts: fold the parts as reals.
#define COMPLEX_OPS(T)                                                     \
	switch (op) {                                                          \
	case DPML_OP_SUM: n *= 2; FOLD(T, T, a + b); return 1;                 \
	case DPML_OP_PROD: CPROD(T); return 1;                                 \
	}                                                                      \
	return 0

// fold returns 0, doing nothing, when (kind, op) has no C fold; with n == 0
// it only reports.
static int fold(void *dst, const void *const *srcs, int nsrc, int n, int kind, int op) {
	switch (kind) {
	case DPML_KIND_INT8: INT_OPS(int8_t, uint8_t);
	case DPML_KIND_INT16: INT_OPS(int16_t, uint16_t);
	case DPML_KIND_INT32: INT_OPS(int32_t, uint32_t);
	case DPML_KIND_INT64: INT_OPS(int64_t, uint64_t);
	case DPML_KIND_UINT8: INT_OPS(uint8_t, uint8_t);
	case DPML_KIND_UINT16: INT_OPS(uint16_t, uint16_t);
	case DPML_KIND_UINT32: INT_OPS(uint32_t, uint32_t);
	case DPML_KIND_UINT64: INT_OPS(uint64_t, uint64_t);
	case DPML_KIND_FLOAT32: REAL_OPS(float);
	case DPML_KIND_FLOAT64: REAL_OPS(double);
	case DPML_KIND_COMPLEX64: COMPLEX_OPS(float);
	case DPML_KIND_COMPLEX128: COMPLEX_OPS(double);
	}
	return 0;
}

int dpml_fused_ok(int kind, int op) {
	const void *srcs[2] = {0, 0};
	return fold(0, srcs, 2, 0, kind, op);
}

dpml_ftree *dpml_ftree_new(int nkids) {
	size_t n = nkids > 0 ? (size_t)nkids : 0;
	dpml_ftree *t = calloc(1, sizeof(dpml_ftree) + n * (sizeof(uint64_t *) + sizeof(int)));
	if (t == NULL) return NULL;
	t->kids = (uint64_t **)(t + 1);
	t->kid_rank = (int *)(t->kids + n);
	t->nkids = nkids;
	return t;
}

// partial is where the subtree partial of generation g of local rank
// `rank`, whose flag line in the tree is `line`, lives: inline, in the
// line's payload after its flag; else in the rank's slot of buffer set
// g mod 2.
static inline char *partial(const dpml_fused *F, const uint64_t *line, int rank, int inl, uint64_t g) {
	if (inl) return (char *)(line + 1);
	return F->data + (int64_t)(g & 1) * F->buf_stride + (int64_t)rank * F->slot_stride;
}

void *dpml_tree_result(const dpml_fused *F, int inl, uint64_t g) {
	if (inl) return (void *)(F->out0 + 1);
	return F->data + (int64_t)(g & 1) * F->buf_stride + (int64_t)F->ppn * F->slot_stride;
}

void *dpml_fused_result(dpml_fused *F, int bytes, uint64_t g) {
	return dpml_tree_result(F, bytes <= F->inline_bytes, g);
}

// The tree's fold works in blocks of FOLD_BLOCK bytes, so that dst stays in
// L1 while the sources stream through it (as dpml's kernels do), and folds
// at most FOLD_GROUP children per pass (a node may have any number): the
// next pass starts from dst, which continues the same left fold, so the
// grouping changes no bit.
enum { FOLD_BLOCK = 8 << 10, FOLD_GROUP = 16 };

// tree_fold is dpml_tree_fold for a known element size es. A small
// message's fold (one block, at most FOLD_GROUP children: every fused call
// on the machines measured) is one pass with no further arithmetic: it
// runs at every level of the tree in every small call.
static inline int tree_fold(const dpml_fused *F, const dpml_ftree *T, const void *own, void *dst,
	int lo, int n, int inl, int kind, int op, uint64_t g, int es) {
	const void *srcs[FOLD_GROUP + 1];
	if (T->nkids <= FOLD_GROUP && (int64_t)n * es <= FOLD_BLOCK) {
		int64_t at = (int64_t)lo * es;
		srcs[0] = (const char *)own + at;
		for (int k = 0; k < T->nkids; k++) srcs[k + 1] = partial(F, T->kids[k], T->kid_rank[k], inl, g) + at;
		return fold(dst, srcs, T->nkids + 1, n, kind, op);
	}
	if (es == 0 || !dpml_fused_ok(kind, op)) return 0;
	int blk = FOLD_BLOCK / es;
	for (int b = 0; b < n; b += blk) {
		int m = n - b < blk ? n - b : blk;
		int64_t at = (int64_t)(lo + b) * es; // the block's offset in the segment
		char *d = (char *)dst + (int64_t)b * es;
		int ns = 1;
		srcs[0] = (const char *)own + at;
		for (int k = 0; k < T->nkids; k++) {
			if (ns == FOLD_GROUP + 1) {
				fold(d, srcs, ns, m, kind, op);
				srcs[0] = d, ns = 1;
			}
			srcs[ns++] = partial(F, T->kids[k], T->kid_rank[k], inl, g) + at;
		}
		fold(d, srcs, ns, m, kind, op);
	}
	return 1;
}

int dpml_tree_fold(const dpml_fused *F, const dpml_ftree *T, const void *own, void *dst,
	int lo, int n, int inl, int kind, int op, uint64_t g) {
	return tree_fold(F, T, own, dst, lo, n, inl, kind, op, g, elem_size(kind));
}

static inline int tree_step(const dpml_fused *F, const dpml_ftree *T, const void *own,
	int lo, int n, int inl, int kind, int op, uint64_t g, int es) {
	char *dst = partial(F, T->my, T->me, inl, g) + (int64_t)lo * es;
	if (!tree_fold(F, T, own, dst, lo, n, inl, kind, op, g, es)) return 0;
	store_release(T->my, g);
	return 1;
}

int dpml_tree_step(const dpml_fused *F, const dpml_ftree *T, const void *own,
	int lo, int n, int inl, int kind, int op, uint64_t g) {
	return tree_step(F, T, own, lo, n, inl, kind, op, g, elem_size(kind));
}

// dpml_fused_up is the executor's contribute and, at the root, its reduce,
// for a plan of one tree and one segment: the waits here, the steps the
// executor's tree transport calls.
int dpml_fused_up(dpml_fused *F, const dpml_ftree *T, const void *send, const void *recv,
	int count, int kind, int op, uint64_t g) {
	int es = elem_size(kind);
	int inl = count * es <= F->inline_bytes; // one segment: dpml's Plan.inline
	const void *own = send != NULL ? send : recv;
	for (int k = 0; k < T->nkids; k++) {
		int rc = wait_at_least(F, T->kids[k], g);
		if (rc != DPML_FUSED_OK) {
			F->fail_step = 1, F->fail_index = T->kid_rank[k], F->fail_want = g;
			F->fail_seen = load_acquire(T->kids[k]);
			return rc;
		}
	}
	if (!T->root) {
		tree_step(F, T, own, 0, count, inl, kind, op, g, es);
		return DPML_FUSED_OK;
	}
	tree_fold(F, T, own, dpml_tree_result(F, inl, g), 0, count, inl, kind, op, g, es);
	// The root's own line too, as the executor raises every rank's:
	// nothing reads it in a tree plan, and it keeps the lines alike.
	store_release(T->my, g);
	return DPML_FUSED_OK;
}

int dpml_fused_down(dpml_fused *F, const dpml_ftree *T, void *recv, int bytes, uint64_t g) {
	if (T->root) store_release(F->out0, g);
	int rc = wait_at_least(F, F->out0, g);
	if (rc != DPML_FUSED_OK) {
		F->fail_step = 2, F->fail_index = 0, F->fail_want = g;
		F->fail_seen = load_acquire(F->out0);
		return rc;
	}
	memcpy(recv, dpml_fused_result(F, bytes, g), (size_t)bytes);
	return DPML_FUSED_OK;
}

int dpml_fused_call(dpml_fused *F, const dpml_ftree *T, const void *send, void *recv,
	int count, int kind, int op, uint64_t g) {
	int rc = dpml_fused_up(F, T, send, recv, count, kind, op, g);
	if (rc != DPML_FUSED_OK) return rc;
	return dpml_fused_down(F, T, recv, count * elem_size(kind), g);
}

void dpml_fused_enter_go(dpml_fused *F) { F->c_entry_ns = dpml_mono_ns(); }

// nodes_call runs a cleared call on several nodes as the engine's runFused
// does in Go: the tree's first half, the root's inter-node step on the
// node's result (m->inter), the second half. A failed inter-node step is
// DPML_FUSED_INTER with its MPI code in fail_index; the engine then raises
// the node's abort word, which ends the other local ranks' wait.
static int nodes_call(dpml_fused *F, const dpml_ftree *T, const void *send, void *recv, int count, int kind, int op,
		      uint64_t g, const dpml_fused_mpi *m) {
	int bytes = count * elem_size(kind);
	int rc = dpml_fused_up(F, T, send, recv, count, kind, op, g);
	if (rc != DPML_FUSED_OK) return rc;
	if (T->root) {
		int mrc = m->inter(m->ctx, dpml_fused_result(F, bytes, g), F->inter);
		if (mrc != 0) {
			F->fail_step = 3, F->fail_index = mrc;
			return DPML_FUSED_INTER;
		}
	}
	return dpml_fused_down(F, T, recv, bytes, g);
}

int dpml_fused_run(dpml_fused *F, const void *send, void *recv, int count, int kind, int op,
		   const dpml_fused_mpi *m, int *mpi_rc, int *timed) {
	// A timed clearance is a block of the learner's confirmation: each
	// call's entry and exit (fused.h); a sampled one stamps its samples.
	int t = F->timed && F->ran < DPML_FUSED_MAX_BLOCK;
	uint64_t b = F->ran;
	*timed = t, *mpi_rc = 0;
	if (!F->timed && F->smp_n > 0 && (int64_t)b >= F->smp_at && ((int64_t)b - F->smp_at) % F->smp_stride == 0) {
		// A stride sample (fused.h): stamped as a block's call is.
		int64_t j = ((int64_t)b - F->smp_at) / F->smp_stride;
		if (j < F->smp_n && j < DPML_FUSED_MAX_BLOCK) t = 1, b = (uint64_t)j, *timed = 2;
	}
	F->last_parked = 0;
	if (t) F->blk_entry_ns[b] = dpml_mono_ns();
	if (F->native) {
		// The MPI library's own allreduce; a block's call keeps the
		// lock until its exit is stamped.
		F->ran++, F->budget--;
		if (!t && m->unlock != NULL) m->unlock(m->ctx);
		*mpi_rc = m->native(m->ctx);
		if (t) F->blk_exit_ns[b] = dpml_mono_ns();
		return DPML_FUSED_OK;
	}
	uint64_t g = F->gen + 1;
	int rc = F->nodes > 1 ? nodes_call(F, F->tree, send, recv, count, kind, op, g, m)
			      : dpml_fused_call(F, F->tree, send, recv, count, kind, op, g);
	if (rc != DPML_FUSED_OK) return rc;
	F->gen = g, F->ran++, F->budget--;
	if (t) F->blk_exit_ns[b] = dpml_mono_ns();
	return DPML_FUSED_OK;
}

int dpml_fused_run_parked(dpml_fused *F, int i, const void *send, void *recv, int count, int kind, int op,
			  const dpml_fused_mpi *m, int *mpi_rc) {
	dpml_fpark *p = &F->parked[i];
	*mpi_rc = 0;
	F->last_parked = i + 1, F->last_count = count;
	if (p->native) {
		p->ran++, p->budget--, F->parked_ran++;
		if (m->unlock != NULL) m->unlock(m->ctx);
		*mpi_rc = m->native(m->ctx);
		return DPML_FUSED_OK;
	}
	uint64_t g = F->gen + 1;
	int rc = F->nodes > 1 ? nodes_call(F, p->tree, send, recv, count, kind, op, g, m)
			      : dpml_fused_call(F, p->tree, send, recv, count, kind, op, g);
	if (rc != DPML_FUSED_OK) return rc;
	F->gen = g, p->ran++, p->budget--, F->parked_ran++;
	return DPML_FUSED_OK;
}

