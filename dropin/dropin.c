// C layer of libdpml.so: the interposed MPI_Allreduce and MPI_Finalize, the
// eligibility checks (predefined handles compared in C), the per-communicator
// state cached in an MPI attribute, and the recursion guard. The Go side
// (main.go) owns the DPML engine objects; this file decides which calls reach
// it. See doc.go for the design.

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dropin.h"
#include "_cgo_export.h"

uint64_t dpml_counts[DPML_NREASONS];
uint64_t dpml_comms_setup, dpml_comms_released;

void dpml_note_released(void) { __atomic_fetch_add(&dpml_comms_released, 1, __ATOMIC_RELAXED); }

static inline void count_reason(int r) { __atomic_fetch_add(&dpml_counts[r], 1, __ATOMIC_RELAXED); }

// ---------------------------------------------------------------------------
// Recursion guard. The engine reaches MPI through package mpi, whose cgo code
// calls MPI_Allreduce by name; in this process that name is ours (LD_PRELOAD
// or -ldpml come before libmpi). Every entry into Go from here raises the
// calling thread's depth, and a call made while it is raised goes straight to
// PMPI_Allreduce. The engine makes its MPI calls on the calling thread (a Go
// function exported to C runs on the C thread that called it, and the engine
// starts no goroutines that call MPI), so a thread-local flag is exact: other
// application threads are unaffected.
static __thread int dpml_depth;

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

// The predefined arithmetic types (C, C++ and Fortran handles: Open MPI
// defines all of them in mpi.h). Sizes are read from the MPI library at init,
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

// mpi.Kind values (package mpi, types.go).
enum { K_INT8, K_INT16, K_INT32, K_INT64, K_UINT8, K_UINT16, K_UINT32, K_UINT64,
       K_FLOAT32, K_FLOAT64, K_COMPLEX64, K_COMPLEX128 };

static int kind_for(int cat, int size) {
	switch (cat) {
	case CAT_SINT:
		switch (size) { case 1: return K_INT8; case 2: return K_INT16; case 4: return K_INT32; case 8: return K_INT64; }
		break;
	case CAT_UINT:
	case CAT_BYTE:
		switch (size) { case 1: return K_UINT8; case 2: return K_UINT16; case 4: return K_UINT32; case 8: return K_UINT64; }
		break;
	case CAT_FLOAT:
		switch (size) { case 4: return K_FLOAT32; case 8: return K_FLOAT64; }
		break;
	case CAT_COMPLEX:
		switch (size) { case 8: return K_COMPLEX64; case 16: return K_COMPLEX128; }
		break;
	}
	return -1;
}

static const int kind_size[] = {1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 8, 16};

// The predefined ops, in mpi.Op order (package mpi, op.go).
enum { O_SUM, O_PROD, O_MIN, O_MAX, O_LAND, O_LOR, O_LXOR, O_BAND, O_BOR, O_BXOR, NOPS };
static MPI_Op ops[NOPS];
static const char *op_names[NOPS] = {"MPI_SUM", "MPI_PROD", "MPI_MIN", "MPI_MAX", "MPI_LAND",
				     "MPI_LOR", "MPI_LXOR", "MPI_BAND", "MPI_BOR", "MPI_BXOR"};

static const dtype_entry *find_dtype(MPI_Datatype dt) {
	for (int i = 0; i < NDTYPES; i++)
		if (dtypes[i].h == dt) return &dtypes[i];
	return NULL;
}

static int find_op(MPI_Op op) {
	for (int i = 0; i < NOPS; i++)
		if (ops[i] == op) return i;
	return -1;
}

// op_valid mirrors the MPI standard's table of ops per type group (and
// mpi.OpValidFor): an op the standard rejects passes through, so the MPI
// library reports it as it would without this library.
static int op_valid(const dtype_entry *d, int op) {
	switch (op) {
	case O_SUM:
	case O_PROD:
		return d->cat != CAT_BYTE;
	case O_MIN:
	case O_MAX:
		return d->cat != CAT_BYTE && d->cat != CAT_COMPLEX;
	case O_LAND:
	case O_LOR:
	case O_LXOR:
		return (d->cat == CAT_SINT || d->cat == CAT_UINT) && !d->no_logical;
	case O_BAND:
	case O_BOR:
	case O_BXOR:
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
	ops[O_SUM] = MPI_SUM;
	ops[O_PROD] = MPI_PROD;
	ops[O_MIN] = MPI_MIN;
	ops[O_MAX] = MPI_MAX;
	ops[O_LAND] = MPI_LAND;
	ops[O_LOR] = MPI_LOR;
	ops[O_LXOR] = MPI_LXOR;
	ops[O_BAND] = MPI_BAND;
	ops[O_BOR] = MPI_BOR;
	ops[O_BXOR] = MPI_BXOR;
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
	uintptr_t id;       // Go-side engine object, 0 for none
} comm_state;

static comm_state *get_state(MPI_Comm comm) {
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
// lock (tested with MPI_THREAD_MULTIPLE too).
static int delete_state(MPI_Comm comm, int kv, void *val, void *extra) {
	comm_state *s = val;
	(void)comm, (void)kv, (void)extra;
	if (s == NULL) return MPI_SUCCESS;
	pthread_mutex_lock(&s->mu);
	if (s->id != 0) {
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

// ---------------------------------------------------------------------------
// MPI_Allreduce.

// trace prints one call's decision (DPML_VERBOSE=2).
static void trace(int reason, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
	static const char *reasons[DPML_NREASONS] = {"dpml", "nested", "not initialized", "disabled",
		"count", "type", "op", "small", "buffer", "communicator", "warm-up", "setup failed", "settings differ"};
	const dtype_entry *d = find_dtype(dt);
	int o = find_op(op);
	fprintf(stderr, "libdpml: rank %d: MPI_Allreduce(count %d, %s, %s, comm %#lx) -> %s%s\n",
		settings.world_rank, count, d ? d->name : "other type", o >= 0 ? op_names[o] : "other op",
		(unsigned long)(uintptr_t)comm, reason == DPML_ROUTED ? "" : "MPI: ", reasons[reason]);
}

static int pass(int reason, const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
	count_reason(reason);
	if (reason != DPML_P_NESTED && settings.verbose >= 2) trace(reason, count, dt, op, comm);
	return PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm);
}

int dpml_allreduce_entry(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
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
	if (s->mode == S_NEW) {
		int inter = 0, size = 0;
		if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter ||
		    PMPI_Comm_size(comm, &size) != MPI_SUCCESS || size < 2) {
			s->mode = S_PASS;
		} else {
			dpml_depth++;
			int bad = dpmlGoAgree(dpml_comm_handle(comm));
			dpml_depth--;
			s->mode = bad ? S_BADSET : S_AGREED;
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
		if (++s->eligible < settings.from_call) {
			reason = DPML_P_WARMUP;
		} else {
			// Collective over comm: every rank reaches this call on
			// the same eligible call of comm (see above).
			dpml_depth++;
			s->id = dpmlGoNew(dpml_comm_handle(comm));
			dpml_depth--;
			s->mode = s->id != 0 ? S_ROUTE : S_FAILED;
			if (s->id != 0) __atomic_fetch_add(&dpml_comms_setup, 1, __ATOMIC_RELAXED);
			else reason = DPML_P_SETUP_FAILED;
		}
	}
	if (reason >= 0) {
		pthread_mutex_unlock(&s->mu);
		return pass(reason, sendbuf, recvbuf, count, dt, op, comm);
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
	if (settings.verbose >= 2) trace(DPML_ROUTED, count, dt, op, comm);
	dpml_depth++;
	int rc = dpmlGoAllreduce(s->id, send, recvbuf, count, d->kind, o);
	dpml_depth--;
	pthread_mutex_unlock(&s->mu);
	free(tmp);
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
	if (__atomic_load_n(&ready, __ATOMIC_ACQUIRE) && !finalized) {
		dpml_depth++;
		dpmlGoFinalize();
		dpml_depth--;
	}
	finalized = 1;
	return PMPI_Finalize();
}

int MPI_Finalize(void) { return dpml_finalize_entry(); }
