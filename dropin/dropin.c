// C layer of libdpml.so: the interposed MPI_Allreduce and MPI_Finalize, the
// eligibility checks (predefined handles compared in C), the per-communicator
// state cached in an MPI attribute, and the recursion guard. The Go side
// (main.go) owns the DPML engine objects; this file decides which calls reach
// it. See doc.go for the design.

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dropin.h"
#include "dpml_kinds.h"
#include "dpmlx.h"
#include "_cgo_export.h"
#include "fused.h"

uint64_t dpml_counts[DPML_NREASONS];

const char *const dpml_reason_words[DPML_NREASONS] = {"routed", "nested", "not-initialized", "disabled",
	"count", "type", "op", "small", "buffer", "communicator", "warm-up", "setup-failed", "native-plan", "settings"};
uint64_t dpml_comms_setup, dpml_comms_released;
// Routed calls the C layer ran itself, on the engine's clearance (fused.h).
uint64_t dpml_fused_calls;
// Of those, the calls of the learner's confirmation blocks (timed), and
// the calls under a parked clearance.
uint64_t dpml_block_calls, dpml_sample_calls, dpml_parked_calls;
// Settings agreements run (one collective each, at a communicator's first
// eligible call).
uint64_t dpml_agreements;
// world_agreed: a communicator of every rank of MPI_COMM_WORLD agreed on
// the settings. They are the process's, so every later communicator's
// ranks hold the same ones: its agreement is skipped. Every member of a
// communicator sees the same value at its first call, since allreduce
// synchronizes: a rank that has left the world-sized agreement knows the
// others entered it, and in a program that does not deadlock each of them
// made it before its first call on the later communicator, as this rank
// did.
static int world_agreed;

void dpml_note_released(void) { __atomic_fetch_add(&dpml_comms_released, 1, __ATOMIC_RELAXED); }

static inline void count_reason(int r) { __atomic_fetch_add(&dpml_counts[r], 1, __ATOMIC_RELAXED); }

// ---------------------------------------------------------------------------
// Recursion guard. The engine reaches MPI through package mpi, which this
// library tells to call PMPI_Allreduce (mpi.SetInterposed in dpmlGoInit), so
// its calls never arrive here. An MPI_Allreduce by name made while the
// library is in Go (another library's code it calls, an MPI library that
// implements something with MPI_Allreduce) would still arrive: every entry
// into Go from here raises the calling thread's depth, and a call made while
// it is raised goes straight to PMPI_Allreduce ("nested" in the counters).
// The engine makes its MPI calls on the calling thread (a Go function
// exported to C runs on the C thread that called it, and the engine starts
// no goroutines that call MPI), so a thread-local flag is exact: other
// application threads are unaffected.
static __thread int dpml_depth;

#ifdef DPML_TRACE
// dpmltrace builds (dropin/trace.go): the time stamp counter at the C steps
// of the latest routed MPI_Allreduce, read by the Go side at its next call.
#include <x86intrin.h>
uint64_t dpml_tc[4];
#define TC_NOW() __rdtsc()
#define TC_SET(i, v) (dpml_tc[i] = (v))
#else
#define TC_NOW() 0
#define TC_SET(i, v) ((void)(v))
#endif

// The calling thread's latest MPI_Allreduce made by the application (not
// nested): its communicator and how it was served (DPML_ROUTED or a pass
// reason), for DPMLX_Last_plan. Thread-local, so recording it costs no lock
// and no attribute lookup on the pass-through path.
static __thread MPI_Comm last_comm; // valid when last_reason >= 0
static __thread int last_reason = -1;
// ---------------------------------------------------------------------------
// Datatypes and ops.

enum { CAT_SINT, CAT_UINT, CAT_FLOAT, CAT_COMPLEX, CAT_BYTE };

typedef struct {
	MPI_Datatype h;
	const char *name;
	int cat;
	int no_logical; // Fortran integer and multi-language types: no LAND/LOR/LXOR in MPI
	int kind;       // mpi.Kind (resolved at init from MPI_Type_size), -1: pass through
} dtype_entry;

// The predefined arithmetic types (C, C++ and Fortran handles: Open MPI and
// MPICH define all of them in mpi.h, MPICH as int constants, a type its
// Fortran compiler lacks as MPI_DATATYPE_NULL, skipped at init). Sizes are read from the MPI library at init,
// so MPI_LONG, MPI_INTEGER and the like map to whatever width they have here;
// a size with no matching element kind (long double, REAL*16) passes through.
static dtype_entry dtypes[] = {
	{MPI_INT, "MPI_INT", CAT_SINT, 0, -1},
	{MPI_DOUBLE, "MPI_DOUBLE", CAT_FLOAT, 0, -1},
	{MPI_FLOAT, "MPI_FLOAT", CAT_FLOAT, 0, -1},
	{MPI_LONG, "MPI_LONG", CAT_SINT, 0, -1},
	{MPI_LONG_LONG_INT, "MPI_LONG_LONG", CAT_SINT, 0, -1},
	{MPI_UNSIGNED, "MPI_UNSIGNED", CAT_UINT, 0, -1},
	{MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", CAT_UINT, 0, -1},
	{MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", CAT_UINT, 0, -1},
	{MPI_SHORT, "MPI_SHORT", CAT_SINT, 0, -1},
	{MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", CAT_UINT, 0, -1},
	{MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", CAT_SINT, 0, -1},
	{MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", CAT_UINT, 0, -1},
	{MPI_INT8_T, "MPI_INT8_T", CAT_SINT, 0, -1},
	{MPI_INT16_T, "MPI_INT16_T", CAT_SINT, 0, -1},
	{MPI_INT32_T, "MPI_INT32_T", CAT_SINT, 0, -1},
	{MPI_INT64_T, "MPI_INT64_T", CAT_SINT, 0, -1},
	{MPI_UINT8_T, "MPI_UINT8_T", CAT_UINT, 0, -1},
	{MPI_UINT16_T, "MPI_UINT16_T", CAT_UINT, 0, -1},
	{MPI_UINT32_T, "MPI_UINT32_T", CAT_UINT, 0, -1},
	{MPI_UINT64_T, "MPI_UINT64_T", CAT_UINT, 0, -1},
	{MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", CAT_COMPLEX, 0, -1},
	{MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", CAT_COMPLEX, 0, -1},
	{MPI_AINT, "MPI_AINT", CAT_SINT, 1, -1},
	{MPI_OFFSET, "MPI_OFFSET", CAT_SINT, 1, -1},
	{MPI_COUNT, "MPI_COUNT", CAT_SINT, 1, -1},
	{MPI_BYTE, "MPI_BYTE", CAT_BYTE, 1, -1},
#if defined(OPEN_MPI) || defined(MPI_CXX_FLOAT_COMPLEX)
	{MPI_CXX_FLOAT_COMPLEX, "MPI_CXX_FLOAT_COMPLEX", CAT_COMPLEX, 0, -1},
	{MPI_CXX_DOUBLE_COMPLEX, "MPI_CXX_DOUBLE_COMPLEX", CAT_COMPLEX, 0, -1},
#endif
	// Fortran types.
	{MPI_INTEGER, "MPI_INTEGER", CAT_SINT, 1, -1},
	{MPI_REAL, "MPI_REAL", CAT_FLOAT, 0, -1},
	{MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION", CAT_FLOAT, 0, -1},
	{MPI_COMPLEX, "MPI_COMPLEX", CAT_COMPLEX, 0, -1},
	{MPI_DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX", CAT_COMPLEX, 0, -1},
	{MPI_INTEGER1, "MPI_INTEGER1", CAT_SINT, 1, -1},
	{MPI_INTEGER2, "MPI_INTEGER2", CAT_SINT, 1, -1},
	{MPI_INTEGER4, "MPI_INTEGER4", CAT_SINT, 1, -1},
	{MPI_INTEGER8, "MPI_INTEGER8", CAT_SINT, 1, -1},
	{MPI_REAL4, "MPI_REAL4", CAT_FLOAT, 0, -1},
	{MPI_REAL8, "MPI_REAL8", CAT_FLOAT, 0, -1},
	{MPI_COMPLEX8, "MPI_COMPLEX8", CAT_COMPLEX, 0, -1},
	{MPI_COMPLEX16, "MPI_COMPLEX16", CAT_COMPLEX, 0, -1},
};
enum { NDTYPES = sizeof dtypes / sizeof dtypes[0] };

// kind_for returns the mpi.Kind of a type of category cat and size bytes
// (DPML_KIND_*, generated from package mpi's table into dpml_kinds.h), or
// -1. MPI_BYTE counts as unsigned.
static int kind_for(int cat, int size) {
	if (cat == CAT_BYTE) cat = CAT_UINT;
#define KIND_MATCH(K, N, T, C) \
	if (cat == CAT_##C && size == N) return K;
	DPML_KINDS(KIND_MATCH)
#undef KIND_MATCH
	return -1;
}

#define KIND_SIZE(K, N, T, C) [K] = N,
static const int kind_size[DPML_NKINDS] = {DPML_KINDS(KIND_SIZE)};
#undef KIND_SIZE

// The predefined ops, indexed by mpi.Op (DPML_OP_*).
static MPI_Op ops[DPML_NOPS];
// The MPI datatype of each kind, as package mpi passes it to the MPI
// library (MPI_UINT64_T for every unsigned 8-byte type, ...): the inter-node
// step of the C layer reduces with these, so it makes the same call as the
// Go path whatever datatype the caller named (Open MPI 4.1 compares
// MPI_UNSIGNED_LONG as signed under MPI_MAX, and MPI_UINT64_T right).
static MPI_Datatype kind_dt[DPML_NKINDS];
#define OP_NAME(O, M) [O] = #M,
static const char *op_names[DPML_NOPS] = {DPML_OPS(OP_NAME)};
#undef OP_NAME

static const dtype_entry *find_dtype(MPI_Datatype dt) {
	for (int i = 0; i < NDTYPES; i++)
		if (dtypes[i].h == dt) return &dtypes[i];
	return NULL;
}

static int find_op(MPI_Op op) {
	for (int i = 0; i < DPML_NOPS; i++)
		if (ops[i] == op) return i;
	return -1;
}

// op_valid mirrors the MPI standard's table of ops per type group (and
// mpi.OpValidFor): an op the standard rejects passes through, so the MPI
// library reports it as it would without this library.
static int op_valid(const dtype_entry *d, int op) {
	switch (op) {
	case DPML_OP_SUM:
	case DPML_OP_PROD:
		return d->cat != CAT_BYTE;
	case DPML_OP_MIN:
	case DPML_OP_MAX:
		return d->cat != CAT_BYTE && d->cat != CAT_COMPLEX;
	case DPML_OP_LAND:
	case DPML_OP_LOR:
	case DPML_OP_LXOR:
		return (d->cat == CAT_SINT || d->cat == CAT_UINT) && !d->no_logical;
	case DPML_OP_BAND:
	case DPML_OP_BOR:
	case DPML_OP_BXOR:
		return d->cat == CAT_SINT || d->cat == CAT_UINT || d->cat == CAT_BYTE;
	}
	return 0;
}

// ---------------------------------------------------------------------------
// Initialization, on the first MPI_Allreduce after MPI_Init.

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int ready;     // init done (read after pthread_once)
static int finalized; // our MPI_Finalize ran
static int go_failed; // the Go side could not adopt MPI: pass everything through (on this rank)
static dpml_settings settings;
static int keyval = MPI_KEYVAL_INVALID;
static pthread_mutex_t attr_mu = PTHREAD_MUTEX_INITIALIZER;

static int delete_state(MPI_Comm comm, int kv, void *val, void *extra);

static void init_once_fn(void) {
#define OP_SET(O, M) ops[O] = M;
	DPML_OPS(OP_SET)
#undef OP_SET
#define KIND_DT(K, N, T, C) kind_dt[K] = T;
	DPML_KINDS(KIND_DT)
#undef KIND_DT
	for (int i = 0; i < NDTYPES; i++) {
		int size = 0;
		dtypes[i].kind = -1;
		if (dtypes[i].h == MPI_DATATYPE_NULL || PMPI_Type_size(dtypes[i].h, &size) != MPI_SUCCESS) continue;
		dtypes[i].kind = kind_for(dtypes[i].cat, size);
		if (dtypes[i].cat == CAT_BYTE && size != 1) dtypes[i].kind = -1;
	}
	dpml_depth++;
	int rc = dpmlGoInit(&settings);
	dpml_depth--;
	// Even with DPML_DISABLE set (or bad settings) the communicators get
	// their state: the ranks of each still agree on the settings at its
	// first call (see dpml_allreduce_entry).
	if (rc != 0) {
		go_failed = 1;
	} else if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &keyval, NULL) != MPI_SUCCESS) {
		fprintf(stderr, "libdpml: MPI_Comm_create_keyval failed; every MPI_Allreduce passes through\n");
		go_failed = 1;
	}
	__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
}

// ---------------------------------------------------------------------------
// Per-communicator state, cached in an attribute (keyval above). The copy
// callback is MPI_COMM_NULL_COPY_FN, so MPI_Comm_dup does not copy it: a
// duplicate gets its own state on its own first call.

// S_NEW: no call yet; S_AGREED: the ranks agree on the settings (warm-up
// calls counted until setup); S_ROUTE: the engine is set up; S_PASS: not
// eligible (intercommunicator, one rank); S_FAILED: engine setup failed;
// S_BADSET: the ranks disagree on the settings, or some are invalid.
enum { S_NEW, S_AGREED, S_ROUTE, S_PASS, S_FAILED, S_BADSET };

typedef struct {
	pthread_mutex_t mu; // serializes the engine calls on this communicator
	int mode;
	int64_t eligible;   // eligible calls seen before setup (DPML_DROPIN_FROM_CALL)
	double priced;      // their time in the MPI library as priced (DPML_SETUP_AFTER)
	uintptr_t id;       // Go-side engine object, 0 for none
	// DPMLX_Set_plan: native sends every call to PMPI_Allreduce; plan is
	// the Go side's slot of the parsed engine plan (-1: never set), handed
	// to the engine when it exists and again when it is set up.
	int native;
	int plan;
	// forced: a plan other than native and auto is set (DPMLX_Set_plan):
	// the program asked for DPML, and the communicator is set up at its
	// next eligible call whatever DPML_SETUP_AFTER says.
	int forced;
	// The engine's fused-call state (dpml/internal/fused/fused.h): calls
	// it has cleared run in C, without entering Go. NULL: none.
	dpml_fused *fused;
	// shared: id is the engine of MPI_COMM_WORLD (world_engine), which
	// this communicator does not own.
	int shared;
} comm_state;

// world_engine: the engine set up on MPI_COMM_WORLD inside MPI_Init,
// which every communicator congruent to MPI_COMM_WORLD (the same ranks in
// the same order: its duplicates, a split of one colour) runs on from its
// first call instead of setting up its own. A program that is not
// MPI_THREAD_MULTIPLE makes its blocking collectives one at a time, and a
// correct one makes those of communicators of one group in the same order
// on every rank, so one engine serves them all in that order. plan is the
// override the engine holds (a spec slot, -1: none), switched to the
// calling communicator's own at its call. Set in MPI_Init on every rank or
// on none; cleared at MPI_Finalize.
static struct {
	uintptr_t id;
	dpml_fused *fused;
	int plan;
} world_engine = {0, NULL, -1};
static int auto_slot = -1; // the spec slot of "auto" (no override)
static int lookup_spec(const char *spec, int *native, int *is_auto);

static comm_state *get_state_slow(MPI_Comm comm);

// get_state's memo, per thread, of the last communicator it resolved: a
// program calling MPI_Allreduce back to back on one communicator skips the
// attribute lookup. It is valid while state_epoch is unchanged; delete_state
// raises the epoch before it frees a state, so a handle the MPI library
// reuses for a new communicator never finds the freed one.
static uint64_t state_epoch;
static __thread MPI_Comm memo_comm;
static __thread comm_state *memo_state;
static __thread uint64_t memo_epoch;

static comm_state *get_state(MPI_Comm comm) {
	uint64_t epoch = __atomic_load_n(&state_epoch, __ATOMIC_ACQUIRE);
	if (memo_state != NULL && memo_comm == comm && memo_epoch == epoch) return memo_state;
	comm_state *found = get_state_slow(comm);
	if (found != NULL) memo_comm = comm, memo_state = found, memo_epoch = epoch;
	return found;
}

static comm_state *get_state_slow(MPI_Comm comm) {
	void *v = NULL;
	int flag = 0;
	if (PMPI_Comm_get_attr(comm, keyval, &v, &flag) == MPI_SUCCESS && flag) return v;
	// First call on comm. Creating the (local) state is guarded by one
	// lock; the collective engine setup happens later under the
	// communicator's own lock only, so threads using other communicators
	// never wait for it.
	pthread_mutex_lock(&attr_mu);
	comm_state *s = NULL;
	if (PMPI_Comm_get_attr(comm, keyval, &v, &flag) == MPI_SUCCESS && flag) {
		s = v;
	} else if ((s = calloc(1, sizeof *s)) != NULL) {
		pthread_mutex_init(&s->mu, NULL);
		s->plan = -1;
		if (PMPI_Comm_set_attr(comm, keyval, s) != MPI_SUCCESS) {
			pthread_mutex_destroy(&s->mu);
			free(s);
			s = NULL;
		}
	}
	pthread_mutex_unlock(&attr_mu);
	return s;
}

// delete_state runs inside MPI_Comm_free (and MPI_Finalize for
// MPI_COMM_SELF). Freeing the engine's own communicators from here is
// allowed: Open MPI 4.1 calls delete callbacks without holding its attribute
// lock, and MPICH 4.0 allows the nested MPI_Comm_free as well (both tested
// with MPI_THREAD_MULTIPLE too: TestThreads, with and without -tags mpich).
static int delete_state(MPI_Comm comm, int kv, void *val, void *extra) {
	comm_state *s = val;
	(void)comm, (void)kv, (void)extra;
	if (s == NULL) return MPI_SUCCESS;
	__atomic_add_fetch(&state_epoch, 1, __ATOMIC_RELEASE); // every thread's memo of s is stale
	pthread_mutex_lock(&s->mu);
	s->fused = NULL; // freed with the engine
	if (s->id != 0 && !s->shared) {
		dpml_depth++;
		dpmlGoRelease(s->id);
		dpml_depth--;
		s->id = 0;
	}
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_destroy(&s->mu);
	free(s);
	return MPI_SUCCESS;
}

// congruent_to_world reports whether comm has the ranks of MPI_COMM_WORLD
// in the same order.
static int congruent_to_world(MPI_Comm comm) {
	int res = MPI_UNEQUAL;
	return PMPI_Comm_compare(comm, MPI_COMM_WORLD, &res) == MPI_SUCCESS && (res == MPI_IDENT || res == MPI_CONGRUENT);
}

// setup_comm sets up the engine on comm (collective over comm; s->mu
// held) and reports whether it is set up: s->mode becomes S_ROUTE, or
// S_FAILED on every rank (the Go side agrees on the outcome).
static int setup_comm(comm_state *s, MPI_Comm comm) {
	dpml_depth++;
	s->id = dpmlGoNew(dpml_comm_handle(comm));
	dpml_depth--;
	if (s->id == 0) {
		s->mode = S_FAILED;
		return 0;
	}
	s->mode = S_ROUTE;
	__atomic_fetch_add(&dpml_comms_setup, 1, __ATOMIC_RELAXED);
	s->fused = dpmlGoFusedState(s->id);
	if (s->plan >= 0) {
		// A plan set before the engine existed (checked then).
		dpml_depth++;
		dpmlGoSetOverride(s->id, s->plan);
		dpml_depth--;
	}
	return 1;
}

// ---------------------------------------------------------------------------
// MPI_Allreduce.

// A cleared call's MPI steps, for dpml_fused_run (fused.h): the native
// plan's allreduce on the call's own communicator (every rank calls it on
// the same call, with the kind's datatype, as the Go path's native plan
// does), and the root's inter-node allreduce of the node's result on the
// leader communicator (in place, as the Go path's mpi.AllreduceInPlace).
typedef struct cleared_call {
	const void *send;
	void *recv;
	int count, kind, op;
	MPI_Comm comm;
	comm_state *s;
	int unlocked;
} cleared_call;

static int cleared_native(void *ctx) {
	cleared_call *c = ctx;
	return PMPI_Allreduce(c->send != NULL ? c->send : MPI_IN_PLACE, c->recv, c->count, kind_dt[c->kind], ops[c->op], c->comm);
}

static int cleared_inter(void *ctx, void *buf, uintptr_t inter) {
	cleared_call *c = ctx;
	return PMPI_Allreduce(MPI_IN_PLACE, buf, c->count, kind_dt[c->kind], ops[c->op], dpml_comm_from_handle(inter));
}

static void cleared_unlock(void *ctx) {
	cleared_call *c = ctx;
	pthread_mutex_unlock(&c->s->mu);
	c->unlocked = 1;
}

// trace prints one call's decision (DPML_VERBOSE=2).
static void trace(int reason, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
	static const char *reasons[DPML_NREASONS] = {"dpml", "nested", "not initialized", "disabled",
		"count", "type", "op", "small", "buffer", "communicator", "warm-up", "setup failed", "native plan", "settings differ"};
	const dtype_entry *d = find_dtype(dt);
	int o = find_op(op);
	fprintf(stderr, "libdpml: rank %d: MPI_Allreduce(count %d, %s, %s, comm %#lx) -> %s%s\n",
		settings.world_rank, count, d ? d->name : "other type", o >= 0 ? op_names[o] : "other op",
		(unsigned long)(uintptr_t)comm, reason == DPML_ROUTED ? "" : "MPI: ", reasons[reason]);
}

static int pass(int reason, const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
	count_reason(reason);
	if (reason != DPML_P_NESTED) {
		last_comm = comm, last_reason = reason;
		if (settings.verbose >= 2) trace(reason, count, dt, op, comm);
	}
	return PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm);
}

int dpml_allreduce_entry(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
	uint64_t tc0 = TC_NOW();
	(void)tc0;
	if (dpml_depth > 0) return pass(DPML_P_NESTED, sendbuf, recvbuf, count, dt, op, comm);
	if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
		int flag = 0;
		if (PMPI_Initialized(&flag) != MPI_SUCCESS || !flag || finalized)
			return pass(DPML_P_INIT, sendbuf, recvbuf, count, dt, op, comm);
		pthread_once(&init_once, init_once_fn);
	}
	if (finalized) return pass(DPML_P_INIT, sendbuf, recvbuf, count, dt, op, comm);
	if (go_failed) return pass(DPML_P_DISABLED, sendbuf, recvbuf, count, dt, op, comm);
	if (count <= 0) return pass(DPML_P_COUNT, sendbuf, recvbuf, count, dt, op, comm);
	const dtype_entry *d = find_dtype(dt);
	if (d == NULL || d->kind < 0) return pass(DPML_P_TYPE, sendbuf, recvbuf, count, dt, op, comm);
	int o = find_op(op);
	if (o < 0 || !op_valid(d, o)) return pass(DPML_P_OP, sendbuf, recvbuf, count, dt, op, comm);
	size_t bytes = (size_t)count * (size_t)kind_size[d->kind];
	if (recvbuf == MPI_BOTTOM || recvbuf == NULL || sendbuf == NULL || sendbuf == MPI_BOTTOM)
		return pass(DPML_P_BUFFER, sendbuf, recvbuf, count, dt, op, comm);
	// The MPI library reports a null communicator (its attribute calls
	// would report it under another name).
	if (comm == MPI_COMM_NULL) return pass(DPML_P_COMM, sendbuf, recvbuf, count, dt, op, comm);

	// Everything above depends only on arguments the MPI standard requires
	// to be equal on all ranks (count, datatype, op), so every rank takes
	// the same path. Everything below also depends on the settings
	// (DPML_DISABLE, DPML_MIN_BYTES, DPML_DROPIN_FROM_CALL), so the ranks
	// first agree on them, collectively, at the first such call of each
	// communicator: a communicator is never driven by the engine on some
	// ranks and by the MPI library on others.
	comm_state *s = get_state(comm);
	if (s == NULL) return pass(DPML_P_COMM, sendbuf, recvbuf, count, dt, op, comm);
	pthread_mutex_lock(&s->mu);
	if (s->native) {
		// Before any setup: a communicator kept native from its first
		// call never builds an engine. The plan is equal on all ranks.
		pthread_mutex_unlock(&s->mu);
		return pass(DPML_P_PLAN, sendbuf, recvbuf, count, dt, op, comm);
	}
	if (s->mode == S_NEW) {
		int inter = 0, size = 0;
		if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter ||
		    PMPI_Comm_size(comm, &size) != MPI_SUCCESS || size < 2) {
			s->mode = S_PASS;
		} else if (world_engine.id != 0 && congruent_to_world(comm)) {
			// Congruence is the same on every rank, and so is
			// world_engine: every rank shares it, none sets up.
			s->mode = S_ROUTE, s->shared = 1;
			s->id = world_engine.id, s->fused = world_engine.fused;
		} else if (__atomic_load_n(&world_agreed, __ATOMIC_ACQUIRE)) {
			s->mode = S_AGREED;
		} else {
			dpml_depth++;
			int bad = dpmlGoAgree(dpml_comm_handle(comm));
			dpml_depth--;
			__atomic_fetch_add(&dpml_agreements, 1, __ATOMIC_RELAXED);
			s->mode = bad ? S_BADSET : S_AGREED;
			int wsize = 0;
			if (!bad && PMPI_Comm_size(MPI_COMM_WORLD, &wsize) == MPI_SUCCESS && size == wsize)
				__atomic_store_n(&world_agreed, 1, __ATOMIC_RELEASE);
		}
	}
	int reason = -1;
	switch (s->mode) {
	case S_PASS: reason = DPML_P_COMM; break;
	case S_BADSET: reason = DPML_P_SETTINGS; break;
	case S_FAILED: reason = DPML_P_SETUP_FAILED; break;
	}
	if (reason < 0 && settings.disabled) reason = DPML_P_DISABLED;
	if (reason < 0 && (int64_t)bytes < settings.min_bytes) reason = DPML_P_SMALL;
	if (reason < 0 && s->mode == S_AGREED) {
		// Setup pays once the communicator has called enough: the
		// price depends only on the calls' sizes, so every rank sets
		// up on the same call.
		s->priced += settings.price_call + (double)bytes * settings.price_byte;
		if (++s->eligible < settings.from_call || (!s->forced && s->priced < settings.setup_after)) {
			reason = DPML_P_WARMUP;
		} else if (!setup_comm(s, comm)) {
			// Collective over comm: every rank reaches this call on
			// the same eligible call of comm (see above).
			reason = DPML_P_SETUP_FAILED;
		}
	}
	if (reason >= 0) {
		pthread_mutex_unlock(&s->mu);
		return pass(reason, sendbuf, recvbuf, count, dt, op, comm);
	}
	if (s->shared && world_engine.plan != s->plan) {
		// The shared engine takes this communicator's plan (DPMLX_Set_plan),
		// on every rank at the same call: the plans are the program's.
		dpml_depth++;
		int bad = dpmlGoSetOverride(s->id, s->plan >= 0 ? s->plan : auto_slot);
		dpml_depth--;
		if (bad) {
			pthread_mutex_unlock(&s->mu);
			PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
			return MPI_ERR_OTHER;
		}
		world_engine.plan = s->plan;
	}

	// The engine takes a send buffer that does not overlap recvbuf, or
	// NULL for in place. Overlap without MPI_IN_PLACE is erroneous in MPI;
	// it is served from a copy rather than refused, so that a rank never
	// leaves the collective path the others took.
	void *send = NULL, *tmp = NULL;
	if (sendbuf != MPI_IN_PLACE) {
		uintptr_t a = (uintptr_t)sendbuf, b = (uintptr_t)recvbuf;
		if (a < b + bytes && b < a + bytes) {
			tmp = malloc(bytes);
			if (tmp == NULL) {
				pthread_mutex_unlock(&s->mu);
				PMPI_Comm_call_errhandler(comm, MPI_ERR_NO_MEM);
				return MPI_ERR_NO_MEM;
			}
			memcpy(tmp, sendbuf, bytes);
			send = tmp;
		} else {
			send = (void *)sendbuf;
		}
	}
	count_reason(DPML_ROUTED);
	last_comm = comm, last_reason = DPML_ROUTED;
	if (settings.verbose >= 2) trace(DPML_ROUTED, count, dt, op, comm);
	dpml_fused *F = s->fused;
	int parked = -1;
	if (F != NULL && (dpml_fused_cleared(F, count, d->kind, o) || (parked = dpml_fused_parked(F, count, d->kind, o)) >= 0)) {
		// A call the engine cleared (dpml/fused.go: the plan is fixed, or
		// the learner needs this call neither timed nor seen), for these
		// exact arguments or parked for its key (dpml/parked.go): the
		// tree's protocol in C, no Go. Every rank takes this branch on
		// the same calls: the clearances are computed alike on all.
		__atomic_fetch_add(&dpml_fused_calls, 1, __ATOMIC_RELAXED);
		cleared_call cc = {send, recvbuf, count, d->kind, o, comm, s, 0};
		dpml_fused_mpi m = {cleared_native, cleared_inter, cleared_unlock, &cc};
		int mrc = MPI_SUCCESS, timed = 0;
		int frc = parked >= 0 ? dpml_fused_run_parked(F, parked, send, recvbuf, count, d->kind, o, &m, &mrc)
				      : dpml_fused_run(F, send, recvbuf, count, d->kind, o, &m, &mrc, &timed);
		if (parked >= 0) __atomic_fetch_add(&dpml_parked_calls, 1, __ATOMIC_RELAXED);
		if (timed == 1) __atomic_fetch_add(&dpml_block_calls, 1, __ATOMIC_RELAXED);
		if (timed == 2) __atomic_fetch_add(&dpml_sample_calls, 1, __ATOMIC_RELAXED);
		if (frc == DPML_FUSED_OK) {
			if (!cc.unlocked) pthread_mutex_unlock(&s->mu);
			free(tmp);
			return mrc;
		}
		dpml_depth++;
		dpmlGoFusedFailed(s->id, frc);
		dpml_depth--;
		pthread_mutex_unlock(&s->mu);
		free(tmp);
		PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
		return MPI_ERR_OTHER;
	}
	// For the learner: the call's cost through Go includes the two cgo
	// transitions, which a call run here does not pay (dpml's transition
	// and trip).
	if (F != NULL) dpml_fused_enter_go(F);
	dpml_depth++;
	TC_SET(0, tc0);
	TC_SET(1, TC_NOW());
	int rc = dpmlGoAllreduce(s->id, send, recvbuf, count, d->kind, o);
	TC_SET(2, TC_NOW());
	dpml_depth--;
	pthread_mutex_unlock(&s->mu);
	free(tmp);
	TC_SET(3, TC_NOW());
	if (rc != 0) {
		// The Go side printed the error. The communicator's error handler
		// decides: MPI_ERRORS_ARE_FATAL (the default) aborts the job.
		PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
		return MPI_ERR_OTHER;
	}
	return MPI_SUCCESS;
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
	return dpml_allreduce_entry(sendbuf, recvbuf, count, dt, op, comm);
}

// ---------------------------------------------------------------------------
// MPI_Finalize: release every engine object (their MPI communicators and
// shared memory) while MPI still works, print the counters under
// DPML_VERBOSE, then finalize.

int dpml_finalize_entry(void) {
	world_engine.id = 0, world_engine.fused = NULL;
	if (__atomic_load_n(&ready, __ATOMIC_ACQUIRE) && !finalized) {
		dpml_depth++;
		dpmlGoFinalize();
		dpml_depth--;
	}
	finalized = 1;
	return PMPI_Finalize();
}

int MPI_Finalize(void) { return dpml_finalize_entry(); }

// init_at_start runs, right after the program's MPI_Init, what the first
// MPI_Allreduce would otherwise: the library's initialization (the Go
// side's settings and scheduler) and the settings agreement on
// MPI_COMM_WORLD, which covers every later communicator (world_agreed).
// MPI_Init takes tens of milliseconds, and a millisecond more is lost
// there; in the first MPI_Allreduce it was ten times the call. Every rank
// calls MPI_Init, so the agreement's collective is safe; a program whose
// MPI_Init does not come through here (Fortran's binding, a program linked
// otherwise) initializes at its first call instead, and MPI_COMM_WORLD
// is set up as every other communicator is (DPML_SETUP_AFTER).
static void init_at_start(void) {
	int flag = 0;
	if (PMPI_Initialized(&flag) != MPI_SUCCESS || !flag) return;
	pthread_once(&init_once, init_once_fn);
	int size = 0;
	if (PMPI_Comm_size(MPI_COMM_WORLD, &size) != MPI_SUCCESS || size < 2) return;
	// Every rank takes the same collectives whatever its own settings
	// (DPML_DISABLE included: the agreement is what tells the ranks that
	// they differ); a rank whose Go side failed cannot agree, and then no
	// rank does here.
	int ok = !go_failed, all = 0;
	if (PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS || !all) return;
	dpml_depth++;
	int bad = dpmlGoAgree(dpml_comm_handle(MPI_COMM_WORLD));
	dpml_depth--;
	__atomic_fetch_add(&dpml_agreements, 1, __ATOMIC_RELAXED);
	if (bad) return;
	__atomic_store_n(&world_agreed, 1, __ATOMIC_RELEASE);
	// The settings are agreed, so every rank takes this branch alike.
	// A program times its calls, not its MPI_Init: setting up
	// MPI_COMM_WORLD here gives its first MPI_Allreduce the engine.
	if (!settings.setup_world || settings.disabled || settings.from_call > 1) return;
	// A rank without the communicator's state (a local allocation or
	// attribute failure) keeps every rank from setting up here.
	// The engine is shared with congruent communicators (world_engine)
	// only if no rank runs MPI_THREAD_MULTIPLE.
	comm_state *s = get_state(MPI_COMM_WORLD);
	int level = MPI_THREAD_MULTIPLE, nat = 0, is_auto = 0;
	PMPI_Query_thread(&level);
	auto_slot = lookup_spec("auto", &nat, &is_auto);
	int mine[2] = {s != NULL, level != MPI_THREAD_MULTIPLE && auto_slot >= 0}, both[2] = {0, 0};
	if (PMPI_Allreduce(mine, both, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS || !both[0]) return;
	pthread_mutex_lock(&s->mu);
	if (s->mode == S_NEW) {
		s->mode = S_AGREED;
		if (setup_comm(s, MPI_COMM_WORLD) && both[1]) {
			world_engine.id = s->id, world_engine.fused = s->fused, world_engine.plan = s->plan;
			s->shared = 1; // released with every engine at MPI_Finalize
		}
		if (s->id != 0 && settings.setup_world == 2) {
			// Collective: every rank set up (the outcome is agreed).
			// A failure leaves the engine failed on every rank, as
			// a failed call would; the program's calls report it.
			dpml_depth++;
			dpmlGoWarm(s->id);
			dpml_depth--;
		}
	}
	pthread_mutex_unlock(&s->mu);
}

int MPI_Init(int *argc, char ***argv) {
	int rc = PMPI_Init(argc, argv);
	if (rc == MPI_SUCCESS) init_at_start();
	return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
	int rc = PMPI_Init_thread(argc, argv, required, provided);
	if (rc == MPI_SUCCESS) init_at_start();
	return rc;
}

// ---------------------------------------------------------------------------
// Extension entry points (dpmlx.h).

// lib_ready initializes the library if MPI is up (as the first
// MPI_Allreduce would) and reports whether MPI is usable.
static int lib_ready(void) {
	int flag = 0;
	if (finalized || PMPI_Initialized(&flag) != MPI_SUCCESS || !flag) return 0;
	if (PMPI_Finalized(&flag) != MPI_SUCCESS || flag) return 0;
	if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) pthread_once(&init_once, init_once_fn);
	return 1;
}

int DPMLX_Check_plan(const char *spec, char *buf, int len) {
	char tmp[1];
	int native = 0;
	if (spec == NULL) {
		if (buf != NULL && len > 0) snprintf(buf, (size_t)len, "spec is NULL");
		return MPI_ERR_ARG;
	}
	if (buf == NULL || len < 1) buf = tmp, len = 1;
	return dpmlGoParseSpec((char *)spec, buf, len, &native, 0) >= 0 ? MPI_SUCCESS : MPI_ERR_ARG;
}

// Specs seen by DPMLX_Set_plan, as given: a benchmark switches among a few
// plans before every call, and the cache spares it the Go parser (and its
// garbage, whose collection would run during timed calls); the Go side
// keeps the parsed plans by slot, so handing one to an engine allocates
// nothing either.
enum { SPEC_CACHE = 64 };
static struct {
	char raw[DPMLX_MAX_SPEC];
	int slot, native, is_auto;
} spec_cache[SPEC_CACHE];
static int spec_cached;
static pthread_mutex_t spec_mu = PTHREAD_MUTEX_INITIALIZER;

// lookup_spec resolves spec to its Go slot (-1: a bad spec) and whether it
// is native or auto.
static int lookup_spec(const char *spec, int *native, int *is_auto) {
	size_t n = strlen(spec);
	pthread_mutex_lock(&spec_mu);
	for (int i = 0; i < spec_cached; i++) {
		if (strcmp(spec_cache[i].raw, spec) == 0) {
			int slot = spec_cache[i].slot;
			*native = spec_cache[i].native, *is_auto = spec_cache[i].is_auto;
			pthread_mutex_unlock(&spec_mu);
			return slot;
		}
	}
	pthread_mutex_unlock(&spec_mu);
	char canon[DPMLX_MAX_SPEC];
	int slot = dpmlGoParseSpec((char *)spec, canon, sizeof canon, native, 1);
	if (slot < 0) return -1;
	*is_auto = strcmp(canon, "auto") == 0;
	pthread_mutex_lock(&spec_mu);
	if (spec_cached < SPEC_CACHE && n < DPMLX_MAX_SPEC) {
		memcpy(spec_cache[spec_cached].raw, spec, n + 1);
		spec_cache[spec_cached].slot = slot, spec_cache[spec_cached].native = *native, spec_cache[spec_cached].is_auto = *is_auto;
		spec_cached++;
	}
	pthread_mutex_unlock(&spec_mu);
	return slot;
}

int DPMLX_Set_plan(MPI_Comm comm, const char *spec) {
	int native = 0, is_auto = 0;
	if (spec == NULL) return MPI_ERR_ARG;
	int slot = lookup_spec(spec, &native, &is_auto);
	if (slot < 0) return MPI_ERR_ARG;
	if (comm == MPI_COMM_NULL) return MPI_ERR_COMM;
	if (!lib_ready()) return MPI_ERR_OTHER;
	if (settings.disabled) {
		// Every call passes through already: native and auto hold.
		return native || is_auto ? MPI_SUCCESS : MPI_ERR_UNSUPPORTED_OPERATION;
	}
	comm_state *s = get_state(comm);
	if (s == NULL) return MPI_ERR_COMM;
	if (!native && !is_auto && s->mode != S_ROUTE) {
		int inter = 0, size = 0;
		if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter ||
		    PMPI_Comm_size(comm, &size) != MPI_SUCCESS || size < 2)
			return MPI_ERR_COMM;
	}
	int rc = MPI_SUCCESS;
	pthread_mutex_lock(&s->mu);
	s->native = native;
	s->forced = !native && !is_auto;
	if (!native && s->plan != slot) {
		s->plan = slot;
		if (s->id != 0 && !s->shared) { // a shared engine switches at the call
			dpml_depth++;
			if (dpmlGoSetOverride(s->id, slot) != 0) rc = MPI_ERR_OTHER;
			dpml_depth--;
		}
	}
	pthread_mutex_unlock(&s->mu);
	return rc;
}

int DPMLX_Last_plan(MPI_Comm comm, char *buf, int len) {
	if (buf == NULL || len < 1) return MPI_ERR_ARG;
	if (last_reason < 0 || last_comm != comm) {
		snprintf(buf, (size_t)len, "none");
		return MPI_ERR_OTHER;
	}
	int n;
	if (last_reason != DPML_ROUTED) {
		n = snprintf(buf, (size_t)len, "native reason=%s", dpml_reason_words[last_reason]);
		return n >= len ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
	}
	// Routed: the engine of comm exists (engines live until MPI_Comm_free).
	comm_state *s = get_state(comm);
	if (s == NULL) {
		snprintf(buf, (size_t)len, "none");
		return MPI_ERR_OTHER;
	}
	pthread_mutex_lock(&s->mu);
	n = s->id != 0 ? dpmlGoLastPlan(s->id, buf, len) : -1;
	pthread_mutex_unlock(&s->mu);
	if (n < 0) {
		snprintf(buf, (size_t)len, "none");
		return MPI_ERR_OTHER;
	}
	return n >= len ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
}

const char *DPMLX_Library_version(void) { return dpmlGoVersion(); }
