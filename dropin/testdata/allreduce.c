// allreduce.c: an ordinary MPI program (no DPML in it) exercising
// MPI_Allreduce the way the drop-in library must serve it. Run it with and
// without LD_PRELOAD=libdpml.so: the "case" lines on stdout must be
// identical (sorted: ranks interleave), and every rank checks its results
// against values it computes itself ("FAIL" lines, exit code 1).
//
//	allreduce [-mt] [-pthread] [-o DIR] PART...
//
// -mt initializes with MPI_THREAD_MULTIPLE; -pthread starts a thread of the
// program's own before MPI_Init, blocked in read(2) until exit; -o writes
// each rank's lines to DIR/rank-N.txt instead of stdout. Parts: types (every predefined
// type and op, plain and in place, several counts), large (multi-segment
// messages), special (count 0, MPI_COMM_SELF, MAXLOC, MINLOC, user op,
// derived type, intercommunicator), loop=N (N split and duplicated
// communicators created, used and freed), threads (two threads on two
// communicators at once; needs -mt), overlap (overlapping buffers without
// MPI_IN_PLACE: erroneous, for the library only), shm (print the number of
// dpml-<job> entries in /dev/shm: must be 0), abort (rank 0 calls MPI_Abort
// after routed calls; the others wait in a barrier), extremes=N (every
// type and op with extreme values, N calls each, checked against the
// type's arithmetic), repeat=N and repeat1=N (N back-to-back calls of
// each of a few cases, or of the first), alternate=N (N rounds of one
// call of each of a few cases), policies (the scheduling policy of the main thread
// and of -pthread's thread, and how many of the process's threads are
// SCHED_IDLE), resident (how much of libdpml.so's read-only mappings the
// process's page tables map).
//
// Data are small integers in every type, so floating-point results are
// exact whatever the reduction order, and runs with and without the
// library must agree bit for bit.

#define _GNU_SOURCE
#include <complex.h>
#include <dirent.h>
#include <float.h>
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { SUM, PROD, MIN, MAX, LAND, LOR, LXOR, BAND, BOR, BXOR, NOPS };
static MPI_Op mpi_ops[NOPS];
static const char *op_names[NOPS] = {"sum", "prod", "min", "max", "land", "lor", "lxor", "band", "bor", "bxor"};

// Storage kinds of the test's elements.
enum { I8, I16, I32, I64, U8, U16, U32, U64, F32, F64, F80, C64, C128, C160, BOOL };
// Type groups of the MPI standard's op table.
enum { G_CINT, G_FINT, G_MULTI, G_FLOAT, G_COMPLEX, G_BOOL, G_BYTE };

typedef struct {
	MPI_Datatype dt;
	const char *name;
	int group;
	int sgn; // integers: signed?
	int kind; // resolved from MPI_Type_size
} type_t;

static type_t types[] = {
	{MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", G_CINT, 1},
	{MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", G_CINT, 0},
	{MPI_SHORT, "MPI_SHORT", G_CINT, 1},
	{MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", G_CINT, 0},
	{MPI_INT, "MPI_INT", G_CINT, 1},
	{MPI_UNSIGNED, "MPI_UNSIGNED", G_CINT, 0},
	{MPI_LONG, "MPI_LONG", G_CINT, 1},
	{MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", G_CINT, 0},
	{MPI_LONG_LONG, "MPI_LONG_LONG", G_CINT, 1},
	{MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", G_CINT, 0},
	{MPI_INT8_T, "MPI_INT8_T", G_CINT, 1},
	{MPI_INT16_T, "MPI_INT16_T", G_CINT, 1},
	{MPI_INT32_T, "MPI_INT32_T", G_CINT, 1},
	{MPI_INT64_T, "MPI_INT64_T", G_CINT, 1},
	{MPI_UINT8_T, "MPI_UINT8_T", G_CINT, 0},
	{MPI_UINT16_T, "MPI_UINT16_T", G_CINT, 0},
	{MPI_UINT32_T, "MPI_UINT32_T", G_CINT, 0},
	{MPI_UINT64_T, "MPI_UINT64_T", G_CINT, 0},
	{MPI_AINT, "MPI_AINT", G_MULTI, 1},
	// Open MPI 4.1 reduces MPI_OFFSET as an unsigned type (MIN of -5 and 3
	// is 3): unsigned values keep the test independent of that.
	{MPI_OFFSET, "MPI_OFFSET", G_MULTI, 0},
	{MPI_COUNT, "MPI_COUNT", G_MULTI, 1},
	{MPI_INTEGER, "MPI_INTEGER", G_FINT, 1},
	{MPI_INTEGER1, "MPI_INTEGER1", G_FINT, 1},
	{MPI_INTEGER2, "MPI_INTEGER2", G_FINT, 1},
	{MPI_INTEGER4, "MPI_INTEGER4", G_FINT, 1},
	{MPI_INTEGER8, "MPI_INTEGER8", G_FINT, 1},
	{MPI_FLOAT, "MPI_FLOAT", G_FLOAT, 1},
	{MPI_DOUBLE, "MPI_DOUBLE", G_FLOAT, 1},
	{MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", G_FLOAT, 1},
	{MPI_REAL, "MPI_REAL", G_FLOAT, 1},
	{MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION", G_FLOAT, 1},
	{MPI_REAL4, "MPI_REAL4", G_FLOAT, 1},
	{MPI_REAL8, "MPI_REAL8", G_FLOAT, 1},
	{MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", G_COMPLEX, 1},
	{MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", G_COMPLEX, 1},
	{MPI_C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX", G_COMPLEX, 1},
	{MPI_CXX_FLOAT_COMPLEX, "MPI_CXX_FLOAT_COMPLEX", G_COMPLEX, 1},
	{MPI_CXX_DOUBLE_COMPLEX, "MPI_CXX_DOUBLE_COMPLEX", G_COMPLEX, 1},
	{MPI_COMPLEX, "MPI_COMPLEX", G_COMPLEX, 1},
	{MPI_DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX", G_COMPLEX, 1},
	{MPI_COMPLEX8, "MPI_COMPLEX8", G_COMPLEX, 1},
	{MPI_COMPLEX16, "MPI_COMPLEX16", G_COMPLEX, 1},
	{MPI_C_BOOL, "MPI_C_BOOL", G_BOOL, 0},
	{MPI_BYTE, "MPI_BYTE", G_BYTE, 0},
};
enum { NTYPES = sizeof types / sizeof types[0] };

static int kind_size(int k) {
	static const int s[] = {1, 2, 4, 8, 1, 2, 4, 8, 4, 8, sizeof(long double), 8, 16,
				sizeof(long double complex), sizeof(_Bool)};
	return s[k];
}

static int resolve_kind(const type_t *t) {
	int size = 0;
	MPI_Type_size(t->dt, &size);
	switch (t->group) {
	case G_CINT:
	case G_FINT:
	case G_MULTI:
		switch (size) {
		case 1: return t->sgn ? I8 : U8;
		case 2: return t->sgn ? I16 : U16;
		case 4: return t->sgn ? I32 : U32;
		case 8: return t->sgn ? I64 : U64;
		}
		break;
	case G_FLOAT:
		if (size == 4) return F32;
		if (size == 8) return F64;
		if (size == (int)sizeof(long double)) return F80;
		break;
	case G_COMPLEX:
		if (size == 8) return C64;
		if (size == 16) return C128;
		if (size == (int)sizeof(long double complex)) return C160;
		break;
	case G_BOOL:
		if (size == (int)sizeof(_Bool)) return BOOL;
		break;
	case G_BYTE:
		return U8;
	}
	return -1;
}

// The MPI standard's table: which ops a type group allows.
static int op_allowed(int group, int op) {
	switch (op) {
	case SUM:
	case PROD:
		return group == G_CINT || group == G_FINT || group == G_MULTI || group == G_FLOAT || group == G_COMPLEX;
	case MIN:
	case MAX:
		return group == G_CINT || group == G_FINT || group == G_MULTI || group == G_FLOAT;
	case LAND:
	case LOR:
	case LXOR:
		return group == G_CINT || group == G_BOOL;
	default:
		return group == G_CINT || group == G_FINT || group == G_MULTI || group == G_BYTE;
	}
}

// ---------------------------------------------------------------------------
// Values: element i of rank r for op, as small integers (re, im).

static uint64_t mix(uint64_t x) {
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ULL;
	x ^= x >> 29;
	return x;
}

static void value(int op, int sgn, long i, int r, int64_t *re, int64_t *im, uint64_t *bits) {
	*im = 0;
	*bits = 0;
	switch (op) {
	case SUM:
		*re = (i * 7 + r * 3) % 11 + (sgn ? -5 : 1);
		*im = (i * 3 + r) % 5 - 2;
		break;
	case PROD:
		*re = sgn ? (i + r) % 5 - 2 : (i + r) % 3 + 1;
		*im = (i + 2 * r) % 3 - 1;
		break;
	case MIN:
	case MAX:
		*re = (i * 13 + r * 29) % 101 - (sgn ? 50 : 0);
		break;
	case LAND:
	case LOR:
	case LXOR:
		*re = ((i >> (r % 8)) & 1) ? i % 5 + 1 : 0;
		break;
	default:
		*bits = mix((uint64_t)i * 1000003u + (uint64_t)r * 7919u + 1);
	}
}

#define SETI(T) ((T *)buf)[i] = (op >= BAND) ? (T)bits : (T)re
static void fill(int kind, int op, int sgn, void *buf, long n, int r) {
	for (long i = 0; i < n; i++) {
		int64_t re = 0, im = 0;
		uint64_t bits = 0;
		value(op, sgn, i, r, &re, &im, &bits);
		switch (kind) {
		case I8: SETI(int8_t); break;
		case I16: SETI(int16_t); break;
		case I32: SETI(int32_t); break;
		case I64: SETI(int64_t); break;
		case U8: SETI(uint8_t); break;
		case U16: SETI(uint16_t); break;
		case U32: SETI(uint32_t); break;
		case U64: SETI(uint64_t); break;
		case F32: ((float *)buf)[i] = (float)re; break;
		case F64: ((double *)buf)[i] = (double)re; break;
		case F80: ((long double *)buf)[i] = (long double)re; break;
		case C64: ((float complex *)buf)[i] = (float)re + (float)im * I; break;
		case C128: ((double complex *)buf)[i] = (double)re + (double)im * I; break;
		case C160: ((long double complex *)buf)[i] = (long double)re + (long double)im * I; break;
		case BOOL: ((_Bool *)buf)[i] = re != 0; break;
		}
	}
}

#define FOLD_INT(T)                                                       \
	do {                                                              \
		T *x = a;                                                 \
		const T *y = b;                                           \
		for (long i = 0; i < n; i++) switch (op) {                \
			case SUM: x[i] = (T)(x[i] + y[i]); break;         \
			case PROD: x[i] = (T)(x[i] * y[i]); break;        \
			case MIN: x[i] = y[i] < x[i] ? y[i] : x[i]; break; \
			case MAX: x[i] = y[i] > x[i] ? y[i] : x[i]; break; \
			case LAND: x[i] = (T)(x[i] && y[i]); break;       \
			case LOR: x[i] = (T)(x[i] || y[i]); break;        \
			case LXOR: x[i] = (T)(!x[i] != !y[i]); break;     \
			case BAND: x[i] = (T)(x[i] & y[i]); break;        \
			case BOR: x[i] = (T)(x[i] | y[i]); break;         \
			case BXOR: x[i] = (T)(x[i] ^ y[i]); break;        \
			}                                                 \
	} while (0)
#define FOLD_FLT(T)                                                       \
	do {                                                              \
		T *x = a;                                                 \
		const T *y = b;                                           \
		for (long i = 0; i < n; i++) switch (op) {                \
			case SUM: x[i] = x[i] + y[i]; break;              \
			case PROD: x[i] = x[i] * y[i]; break;             \
			case MIN: x[i] = y[i] < x[i] ? y[i] : x[i]; break; \
			case MAX: x[i] = y[i] > x[i] ? y[i] : x[i]; break; \
			}                                                 \
	} while (0)
#define FOLD_CPLX(T)                                         \
	do {                                                 \
		T *x = a;                                    \
		const T *y = b;                              \
		for (long i = 0; i < n; i++) switch (op) {   \
			case SUM: x[i] = x[i] + y[i]; break; \
			case PROD: x[i] = x[i] * y[i]; break; \
			}                                    \
	} while (0)

static void fold(int kind, int op, void *a, const void *b, long n) {
	switch (kind) {
	case I8: FOLD_INT(int8_t); break;
	case I16: FOLD_INT(int16_t); break;
	case I32: FOLD_INT(int32_t); break;
	case I64: FOLD_INT(int64_t); break;
	case U8: FOLD_INT(uint8_t); break;
	case U16: FOLD_INT(uint16_t); break;
	case U32: FOLD_INT(uint32_t); break;
	case U64: FOLD_INT(uint64_t); break;
	case BOOL: {
		_Bool *x = a;
		const _Bool *y = b;
		for (long i = 0; i < n; i++) switch (op) {
			case LAND: x[i] = x[i] && y[i]; break;
			case LOR: x[i] = x[i] || y[i]; break;
			case LXOR: x[i] = x[i] != y[i]; break;
			}
		break;
	}
	case F32: FOLD_FLT(float); break;
	case F64: FOLD_FLT(double); break;
	case F80: FOLD_FLT(long double); break;
	case C64: FOLD_CPLX(float complex); break;
	case C128: FOLD_CPLX(double complex); break;
	case C160: FOLD_CPLX(long double complex); break;
	}
}

// Element i of a and b equal (by value: long double has padding bytes)?
static int elem_equal(int kind, const void *a, const void *b, long i) {
	switch (kind) {
	case F32: return ((const float *)a)[i] == ((const float *)b)[i];
	case F64: return ((const double *)a)[i] == ((const double *)b)[i];
	case C64: return ((const float complex *)a)[i] == ((const float complex *)b)[i];
	case C128: return ((const double complex *)a)[i] == ((const double complex *)b)[i];
	case F80: return ((const long double *)a)[i] == ((const long double *)b)[i];
	case C160: return ((const long double complex *)a)[i] == ((const long double complex *)b)[i];
	case BOOL: return !((const _Bool *)a)[i] == !((const _Bool *)b)[i];
	default: return memcmp((const char *)a + i * kind_size(kind), (const char *)b + i * kind_size(kind), kind_size(kind)) == 0;
	}
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

// hash of the values. Floating-point values are hashed as doubles (exact
// here) plus 0.0, which turns -0 into +0: the sign of a zero in a complex
// product depends on the order of the reduction.
static uint64_t hash(int kind, const void *buf, long n) {
	uint64_t h = 0xcbf29ce484222325ULL;
	if (kind >= F32 && kind <= C160) {
		for (long i = 0; i < n; i++) {
			double d[2] = {0, 0};
			switch (kind) {
			case F32: d[0] = ((const float *)buf)[i]; break;
			case F64: d[0] = ((const double *)buf)[i]; break;
			case F80: d[0] = (double)((const long double *)buf)[i]; break;
			case C64: d[0] = crealf(((const float complex *)buf)[i]), d[1] = cimagf(((const float complex *)buf)[i]); break;
			case C128: d[0] = creal(((const double complex *)buf)[i]), d[1] = cimag(((const double complex *)buf)[i]); break;
			case C160: d[0] = (double)creall(((const long double complex *)buf)[i]), d[1] = (double)cimagl(((const long double complex *)buf)[i]); break;
			}
			d[0] += 0.0, d[1] += 0.0;
			h = fnv(h, d, sizeof d);
		}
		return h;
	}
	return fnv(h, buf, (size_t)n * kind_size(kind));
}

// ---------------------------------------------------------------------------

static int world_rank, world_size, failures;

// Results go to out: stdout, or with -o DIR the file DIR/rank-N.txt. The
// files keep lines whole: mpirun forwards the ranks' stdout in chunks that
// may split a line and interleave it with another rank's.
static FILE *out;

#define FAIL(...)                                                          \
	do {                                                               \
		char msg_[512];                                            \
		snprintf(msg_, sizeof msg_, __VA_ARGS__);                  \
		fprintf(out, "FAIL rank %d: %s\n", world_rank, msg_);      \
		__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);        \
	} while (0)

static void check_rc(int rc, const char *what) {
	if (rc != MPI_SUCCESS) FAIL("%s returned %d", what, rc);
}

// run_case_at reduces n elements of type t with op on comm and checks the
// result on every rank; in_place uses MPI_IN_PLACE; the ranks fill their
// inputs as ranks base, base+1, ... would. Returns the hash.
static uint64_t run_case_at(const type_t *t, int op, long n, int in_place, MPI_Comm comm, const char *label, int print, int base) {
	int r, size;
	MPI_Comm_rank(comm, &r);
	MPI_Comm_size(comm, &size);
	r += base;
	size_t es = kind_size(t->kind);
	size_t bytes = (size_t)n * es + 1;
	void *send = malloc(bytes), *recv = malloc(bytes), *want = malloc(bytes), *tmp = malloc(bytes);
	memset(send, 0, bytes);
	memset(want, 0, bytes);
	memset(tmp, 0, bytes);
	memset(recv, 0xab, bytes);
	fill(t->kind, op, t->sgn, send, n, r);
	int rc;
	if (in_place) {
		memcpy(recv, send, (size_t)n * es);
		rc = MPI_Allreduce(MPI_IN_PLACE, recv, (int)n, t->dt, mpi_ops[op], comm);
	} else {
		rc = MPI_Allreduce(send, recv, (int)n, t->dt, mpi_ops[op], comm);
	}
	check_rc(rc, "MPI_Allreduce");
	fill(t->kind, op, t->sgn, want, n, base);
	for (int q = 1; q < size; q++) {
		fill(t->kind, op, t->sgn, tmp, n, base + q);
		fold(t->kind, op, want, tmp, n);
	}
	long bad = 0, first = -1;
	for (long i = 0; i < n; i++)
		if (!elem_equal(t->kind, recv, want, i)) {
			if (first < 0) first = i;
			bad++;
		}
	if (bad) FAIL("%s %s %s n=%ld%s: %ld wrong elements, first %ld", label, t->name, op_names[op], n,
		      in_place ? " in place" : "", bad, first);
	uint64_t h = hash(t->kind, recv, n);
	if (print)
		fprintf(out, "case %s %s %s n=%ld%s rank %d hash %016llx\n", label, t->name, op_names[op], n,
		       in_place ? " inplace" : "", world_rank, (unsigned long long)h);
	free(send);
	free(recv);
	free(want);
	free(tmp);
	return h;
}

static uint64_t run_case(const type_t *t, int op, long n, int in_place, MPI_Comm comm, const char *label, int print) {
	return run_case_at(t, op, n, in_place, comm, label, print, 0);
}

static const type_t *type_named(const char *name);

// part_alternate makes n rounds of one call of each of a few (type, op,
// count), new inputs on every call, in place on every other round: a
// program that alternates between sizes, whose float and double sums up
// to 1 KiB libdpml.so readies before its first call (parked clearances).
static void part_alternate(long n) {
	static const struct {
		const char *type;
		int op;
		long count;
	} cases[] = {
		{"MPI_FLOAT", SUM, 1}, {"MPI_DOUBLE", SUM, 2}, {"MPI_FLOAT", SUM, 3}, {"MPI_INT", MAX, 5},
		{"MPI_DOUBLE", SUM, 100}, {"MPI_FLOAT", SUM, 256},
	};
	enum { NCASES = sizeof cases / sizeof cases[0] };
	int size;
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	uint64_t h[NCASES];
	for (int c = 0; c < NCASES; c++) h[c] = 0xcbf29ce484222325ULL;
	for (long i = 0; i < n; i++) {
		for (int c = 0; c < NCASES; c++) {
			uint64_t x = run_case_at(type_named(cases[c].type), cases[c].op, cases[c].count, (int)(i & 1), MPI_COMM_WORLD,
						 "alternate", 0, (int)((i * NCASES + c) % 1000) * size);
			h[c] = fnv(h[c], &x, sizeof x);
		}
	}
	for (int c = 0; c < NCASES; c++)
		fprintf(out, "case alternate %s %s n=%ld x%ld rank %d hash %016llx\n", type_named(cases[c].type)->name,
			op_names[cases[c].op], cases[c].count, n, world_rank, (unsigned long long)h[c]);
}

// part_repeat makes n back-to-back calls of each of a few (type, op,
// count), or of the first only (one), new inputs on every call, in place
// on every other call: the calls libdpml.so runs without entering Go once
// their plan is fixed.
static void part_repeat(long n, int one) {
	static const struct {
		const char *type;
		int op;
		long count;
	} cases[] = {
		{"MPI_DOUBLE", SUM, 1}, {"MPI_INT", MAX, 7}, {"MPI_FLOAT", SUM, 14},
		{"MPI_DOUBLE", SUM, 100}, {"MPI_UNSIGNED_CHAR", BXOR, 3}, {"MPI_C_DOUBLE_COMPLEX", PROD, 2},
	};
	int size;
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (size_t c = 0; c < (one ? 1 : sizeof cases / sizeof cases[0]); c++) {
		const type_t *t = type_named(cases[c].type);
		uint64_t h = 0xcbf29ce484222325ULL;
		for (long i = 0; i < n; i++) {
			uint64_t x = run_case_at(t, cases[c].op, cases[c].count, (int)(i & 1), MPI_COMM_WORLD, "repeat", 0, (int)(i % 1000) * size);
			h = fnv(h, &x, sizeof x);
		}
		fprintf(out, "case repeat %s %s n=%ld x%ld rank %d hash %016llx\n", t->name, op_names[cases[c].op], cases[c].count, n,
		       world_rank, (unsigned long long)h);
	}
}

// extreme_int is value j of a small set of extremes of an integer kind:
// 0, 1, the largest, the smallest, one off each, the middle of the
// unsigned range, and an alternating bit pattern.
static uint64_t extreme_int(int kind, int j) {
	int bits = 8 * kind_size(kind);
	uint64_t mask = bits == 64 ? ~0ULL : (1ULL << bits) - 1;
	int sgn = kind <= I64;
	uint64_t top = 1ULL << (bits - 1);
	uint64_t v[] = {0, 1, sgn ? top - 1 : mask, sgn ? top : mask - 1, sgn ? top + 1 : top, sgn ? mask : top - 1,
			sgn ? top - 2 : 2, 0x5555555555555555ULL};
	return v[j % (int)(sizeof v / sizeof v[0])] & mask;
}

// extreme_float is value j of the extremes of floating-point kind kind:
// zero, small integers, and the largest, the smallest normal and the
// smallest subnormal finite values of either sign.
static long double extreme_float(int kind, int j) {
	long double big = kind == F32 ? FLT_MAX : kind == F64 ? DBL_MAX : LDBL_MAX;
	long double tiny = kind == F32 ? FLT_MIN : kind == F64 ? DBL_MIN : LDBL_MIN;
	long double sub = kind == F32 ? FLT_TRUE_MIN : kind == F64 ? DBL_TRUE_MIN : LDBL_TRUE_MIN;
	long double v[] = {0, 1, -1, big, -big, tiny, -tiny, sub, -sub, 2, -2};
	return v[j % (int)(sizeof v / sizeof v[0])];
}

// fill_extremes fills buf with extremes: element i of rank r on call c.
// Floating-point values are for MIN and MAX only (sums of extremes depend
// on the order of the reduction).
static void fill_extremes(int kind, void *buf, long n, int r, long c) {
	for (long i = 0; i < n; i++) {
		int j = (int)((i * 3 + r * 5 + c * 7) % 11);
		uint64_t u = extreme_int(kind, j);
		switch (kind) {
		case I8: case U8: ((uint8_t *)buf)[i] = (uint8_t)u; break;
		case I16: case U16: ((uint16_t *)buf)[i] = (uint16_t)u; break;
		case I32: case U32: ((uint32_t *)buf)[i] = (uint32_t)u; break;
		case I64: case U64: ((uint64_t *)buf)[i] = u; break;
		case F32: ((float *)buf)[i] = (float)extreme_float(kind, j); break;
		case F64: ((double *)buf)[i] = (double)extreme_float(kind, j); break;
		case F80: ((long double *)buf)[i] = extreme_float(kind, j); break;
		case BOOL: ((_Bool *)buf)[i] = j & 1; break;
		}
	}
}

// part_extremes: every type and op with extreme values (largest and
// smallest integers, unsigned values with the top bit set), n calls of
// each (type, op, count) back to back, plain and in place in turn, so
// that libdpml.so clears the later calls for its C layer. Each result is
// checked against the arithmetic of the type (fold), not against the MPI
// library, and the hash of every call's result is printed: runs with the
// C layer on and off (DPML_FUSED) must print the same lines.
static void part_extremes(long n) {
	static const long counts[] = {1, 7};
	int r, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &r);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int ti = 0; ti < NTYPES; ti++) {
		type_t tt = types[ti];
		const type_t *t = &tt;
		if (t->kind < 0 || t->group == G_COMPLEX) continue;
		// MPI_Aint, MPI_Offset and MPI_Count are signed C types (the
		// types table reads MPI_OFFSET as unsigned to keep small values
		// clear of Open MPI 4.1, which reduces it as unsigned).
		if (t->group == G_MULTI && t->kind >= U8 && t->kind <= U64) tt.kind -= U8 - I8;
		for (int op = 0; op < NOPS; op++) {
			if (!op_allowed(t->group, op)) continue;
			if ((t->kind == F32 || t->kind == F64 || t->kind == F80) && op != MIN && op != MAX) continue;
			for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
				long cnt = counts[ci];
				size_t bytes = (size_t)cnt * kind_size(t->kind) + 1;
				void *send = calloc(1, bytes), *recv = calloc(1, bytes), *want = calloc(1, bytes), *tmp = calloc(1, bytes);
				uint64_t h = 0xcbf29ce484222325ULL;
				for (long c = 0; c < n; c++) {
					fill_extremes(t->kind, send, cnt, r, c);
					int rc;
					if (c & 1) {
						memcpy(recv, send, (size_t)cnt * kind_size(t->kind));
						rc = MPI_Allreduce(MPI_IN_PLACE, recv, (int)cnt, t->dt, mpi_ops[op], MPI_COMM_WORLD);
					} else {
						rc = MPI_Allreduce(send, recv, (int)cnt, t->dt, mpi_ops[op], MPI_COMM_WORLD);
					}
					check_rc(rc, "MPI_Allreduce");
					fill_extremes(t->kind, want, cnt, 0, c);
					for (int q = 1; q < size; q++) {
						fill_extremes(t->kind, tmp, cnt, q, c);
						fold(t->kind, op, want, tmp, cnt);
					}
					for (long i = 0; i < cnt; i++)
						if (!elem_equal(t->kind, recv, want, i)) {
							FAIL("extremes %s %s n=%ld call %ld: element %ld wrong", t->name, op_names[op], cnt, c, i);
							break;
						}
					uint64_t x = hash(t->kind, recv, cnt);
					h = fnv(h, &x, sizeof x);
				}
				fprintf(out, "case extremes %s %s n=%ld x%ld rank %d hash %016llx\n", t->name, op_names[op], cnt, n, world_rank,
				       (unsigned long long)h);
				free(send);
				free(recv);
				free(want);
				free(tmp);
			}
		}
	}
}

static void part_types(void) {
	static const long counts[] = {1, 5, 1000};
	for (int ti = 0; ti < NTYPES; ti++) {
		const type_t *t = &types[ti];
		if (t->kind < 0) {
			FAIL("type %s has no test kind", t->name);
			continue;
		}
		for (int op = 0; op < NOPS; op++) {
			if (!op_allowed(t->group, op)) continue;
			for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
				for (int ip = 0; ip < 2; ip++) run_case(t, op, counts[c], ip, MPI_COMM_WORLD, "world", 1);
		}
	}
}

static const type_t *type_named(const char *name) {
	for (int i = 0; i < NTYPES; i++)
		if (strcmp(types[i].name, name) == 0) return &types[i];
	return NULL;
}

static void part_large(void) {
	// Larger than the engine's default 1 MiB segment: several segments,
	// pipelined.
	struct { const char *type; int op; long n; } cases[] = {
		{"MPI_DOUBLE", SUM, 300001}, {"MPI_DOUBLE", MAX, 300001}, {"MPI_FLOAT", SUM, 400003},
		{"MPI_INT", SUM, 300001},    {"MPI_INT", BXOR, 300001},   {"MPI_C_DOUBLE_COMPLEX", SUM, 150001},
		{"MPI_UINT8_T", BOR, 1500007}, {"MPI_INT64_T", MIN, 200003},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		for (int ip = 0; ip < 2; ip++)
			run_case(type_named(cases[i].type), cases[i].op, cases[i].n, ip, MPI_COMM_WORLD, "large", 1);
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
	int per = 1;
	if (*dt != MPI_INT) MPI_Type_size(*dt, &per), per /= (int)sizeof(int);
	for (int i = 0; i < *len * per; i++) ((int *)inout)[i] += ((int *)in)[i];
}

static void part_special(void) {
	// Count 0: a no-op that must succeed and leave recv alone.
	int s0[4] = {1, 2, 3, 4}, r0[4] = {9, 9, 9, 9};
	check_rc(MPI_Allreduce(s0, r0, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD), "count 0");
	check_rc(MPI_Allreduce(MPI_IN_PLACE, r0, 0, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "count 0 in place");
	if (r0[0] != 9 || r0[3] != 9) FAIL("count 0 wrote recv");
	fprintf(out, "case special count0 rank %d ok\n", world_rank);

	// MPI_COMM_SELF: a copy.
	run_case(type_named("MPI_INT"), SUM, 100, 0, MPI_COMM_SELF, "self", 1);
	run_case(type_named("MPI_DOUBLE"), MAX, 100, 1, MPI_COMM_SELF, "self", 1);

	// Pass-through cases: MAXLOC / MINLOC pairs, a user op, a derived type.
	struct { int v, loc; } p[3], q[3];
	for (int i = 0; i < 3; i++) p[i].v = (world_rank * 7 + i * 3) % 5, p[i].loc = world_rank;
	check_rc(MPI_Allreduce(p, q, 3, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD), "maxloc");
	fprintf(out, "case special maxloc rank %d %d/%d %d/%d %d/%d\n", world_rank, q[0].v, q[0].loc, q[1].v, q[1].loc, q[2].v, q[2].loc);
	struct { double v; int loc; } dp = {(double)((world_rank * 5) % 3), world_rank}, dq;
	check_rc(MPI_Allreduce(&dp, &dq, 1, MPI_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD), "minloc");
	fprintf(out, "case special minloc rank %d %g/%d\n", world_rank, dq.v, dq.loc);

	MPI_Op uop;
	MPI_Op_create(user_sum, 1, &uop);
	int us[64], ur[64];
	for (int i = 0; i < 64; i++) us[i] = world_rank * 100 + i;
	check_rc(MPI_Allreduce(us, ur, 64, MPI_INT, uop, MPI_COMM_WORLD), "user op");
	fprintf(out, "case special userop rank %d hash %016llx\n", world_rank, (unsigned long long)fnv(0, ur, sizeof ur));

	// A derived type (Open MPI allows only user ops on those).
	MPI_Datatype tri;
	MPI_Type_contiguous(3, MPI_INT, &tri);
	MPI_Type_commit(&tri);
	check_rc(MPI_Allreduce(us, ur, 20, tri, uop, MPI_COMM_WORLD), "derived type");
	fprintf(out, "case special derived rank %d hash %016llx\n", world_rank, (unsigned long long)fnv(0, ur, 60 * sizeof(int)));
	MPI_Type_free(&tri);
	MPI_Op_free(&uop);

	// An intercommunicator between the even and the odd ranks: each side
	// gets the reduction of the other side's values.
	if (world_size >= 2) {
		MPI_Comm half, inter;
		MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half);
		MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, world_rank % 2 == 0 ? 1 : 0, 99, &inter);
		int v = world_rank + 1, w = 0;
		check_rc(MPI_Allreduce(&v, &w, 1, MPI_INT, MPI_SUM, inter), "intercomm");
		fprintf(out, "case special intercomm rank %d %d\n", world_rank, w);
		MPI_Comm_free(&inter);
		MPI_Comm_free(&half);
	}
}

// part_loop creates, uses and frees n communicators: duplicates of World,
// splits with one rank per fake node, and node-local splits.
static void part_loop(long n) {
	const type_t *ti = type_named("MPI_INT"), *td = type_named("MPI_DOUBLE");
	uint64_t h = 0xcbf29ce484222325ULL;
	double t0 = MPI_Wtime();
	for (long i = 0; i < n; i++) {
		MPI_Comm c;
		switch (i % 3) {
		case 0: MPI_Comm_dup(MPI_COMM_WORLD, &c); break;
		case 1: MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &c); break;
		default: MPI_Comm_split(MPI_COMM_WORLD, world_rank / 2, -world_rank, &c); break;
		}
		uint64_t a = run_case(ti, SUM, 64 + i % 7, 0, c, "loop", 0);
		uint64_t b = run_case(td, MAX, 100, 1, c, "loop", 0);
		h = fnv(h, &a, sizeof a);
		h = fnv(h, &b, sizeof b);
		MPI_Comm_free(&c);
	}
	fprintf(out, "case loop n=%ld rank %d hash %016llx\n", n, world_rank, (unsigned long long)h);
	fprintf(stderr, "time loop rank %d: %ld communicators in %.3f s\n", world_rank, n, MPI_Wtime() - t0);
}

// part_overlap passes overlapping send and receive buffers without
// MPI_IN_PLACE: erroneous MPI, run only with the library, which reduces a
// copy of the send data (the engine never sees overlapping buffers).
static void part_overlap(void) {
	int *buf = malloc(1002 * sizeof(int));
	for (int i = 0; i < 1002; i++) buf[i] = i + world_rank;
	check_rc(MPI_Allreduce(buf, buf + 2, 1000, MPI_INT, MPI_SUM, MPI_COMM_WORLD), "overlap");
	long bad = 0;
	for (int i = 0; i < 1000; i++) {
		int want = 0;
		for (int q = 0; q < world_size; q++) want += i + q;
		if (buf[i + 2] != want) bad++;
	}
	if (bad) FAIL("overlap: %ld wrong elements", bad);
	free(buf);
}

typedef struct {
	MPI_Comm comm;
	int id;
	uint64_t hash;
} thread_arg;

static void *thread_main(void *p) {
	thread_arg *a = p;
	const char *names[] = {"MPI_INT", "MPI_DOUBLE", "MPI_FLOAT", "MPI_INT64_T"};
	uint64_t h = 0xcbf29ce484222325ULL;
	for (int i = 0; i < 200; i++) {
		const type_t *t = type_named(names[(i + a->id) % 4]);
		uint64_t x = run_case(t, i % 2 ? MAX : SUM, 1 + (i * 37) % 3000, i % 3 == 0, a->comm, "thread", 0);
		h = fnv(h, &x, sizeof x);
	}
	a->hash = h;
	return NULL;
}

static void part_threads(int provided) {
	if (provided < MPI_THREAD_MULTIPLE) {
		FAIL("threads: MPI_THREAD_MULTIPLE not provided (%d)", provided);
		return;
	}
	thread_arg a[2];
	pthread_t th[2];
	for (int i = 0; i < 2; i++) {
		MPI_Comm_dup(MPI_COMM_WORLD, &a[i].comm);
		a[i].id = i;
	}
	for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, thread_main, &a[i]);
	for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
	for (int i = 0; i < 2; i++) {
		fprintf(out, "case threads thread %d rank %d hash %016llx\n", i, world_rank, (unsigned long long)a[i].hash);
		MPI_Comm_free(&a[i].comm);
	}
}

// shm_entries counts /dev/shm entries of this job's DPML segments
// (dpml-<job>-..., leaving out dpmlrun's own "-ompi" directory).
static int shm_entries(void) {
	const char *job = getenv("DPML_JOB");
	char prefix[128];
	snprintf(prefix, sizeof prefix, "dpml-%s", job ? job : "x");
	DIR *d = opendir("/dev/shm");
	if (d == NULL) return 0;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 && !(l > 5 && strcmp(e->d_name + l - 5, "-ompi") == 0)) n++;
	}
	closedir(d);
	return n;
}

static void part_abort(void) {
	MPI_Comm c;
	MPI_Comm_dup(MPI_COMM_WORLD, &c);
	run_case(type_named("MPI_DOUBLE"), SUM, 1000, 0, MPI_COMM_WORLD, "abort", 1);
	run_case(type_named("MPI_INT"), MAX, 1000, 1, c, "abort", 1);
	fprintf(out, "shm rank %d entries %d\n", world_rank, shm_entries());
	fflush(out);
	MPI_Barrier(MPI_COMM_WORLD);
	if (world_rank == 0) MPI_Abort(MPI_COMM_WORLD, 7);
	MPI_Barrier(MPI_COMM_WORLD); // never completes: rank 0 is gone
	FAIL("survived MPI_Abort");
}

// The program's own thread (-pthread): blocked in the C library's read
// until the process exits, as a program's helper thread would be.
static volatile pid_t prog_tid;
static int prog_pipe[2];

static void *prog_thread(void *arg) {
	(void)arg;
	prog_tid = (pid_t)syscall(SYS_gettid);
	char c;
	while (read(prog_pipe[0], &c, 1) < 0) {
	}
	return NULL;
}

// part_policies prints the scheduling policy (sched_getscheduler) of the
// main thread and of -pthread's (-1 without it), and how many threads of
// the process are SCHED_IDLE.
static void part_policies(void) {
	int idle = 0, n = 0;
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.') continue;
		n++;
		if (sched_getscheduler(atoi(e->d_name)) == SCHED_IDLE) idle++;
	}
	if (d != NULL) closedir(d);
	int prog = prog_tid > 0 ? sched_getscheduler(prog_tid) : -1;
	fprintf(out, "policies rank %d main %d prog %d idle %d of %d\n", world_rank, sched_getscheduler(0), prog, idle, n);
}

// part_resident prints, for the read-only mappings of libdpml.so in this
// process (its code and read-only data: /proc/self/smaps lines "r-xp" and
// "r--p" of a path containing "libdpml"), their size and how much of it
// the process's page tables map (Rss), in KiB.
static void part_resident(void) {
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[4096];
	long size = 0, rss = 0;
	int in = 0;
	while (f != NULL && fgets(line, sizeof line, f) != NULL) {
		unsigned long lo, hi;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && strchr(line, '/') != NULL) {
			in = strstr(line, "libdpml") != NULL && perms[0] == 'r' && perms[1] == '-' && perms[3] == 'p' && strstr(line, "(deleted)") == NULL;
		} else if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3) {
			in = 0;
		} else if (in) {
			long v;
			if (sscanf(line, "Size: %ld kB", &v) == 1) size += v;
			else if (sscanf(line, "Rss: %ld kB", &v) == 1) rss += v;
		}
	}
	if (f != NULL) fclose(f);
	fprintf(out, "resident rank %d size %ld rss %ld\n", world_rank, size, rss);
}

int main(int argc, char **argv) {
	int a = 1, provided = 0;
	int required = MPI_THREAD_SINGLE;
	const char *dir = NULL;
	for (; a < argc; a++) {
		if (strcmp(argv[a], "-mt") == 0) required = MPI_THREAD_MULTIPLE;
		else if (strcmp(argv[a], "-pthread") == 0) {
			pthread_t th;
			if (pipe(prog_pipe) != 0 || pthread_create(&th, NULL, prog_thread, NULL) != 0) {
				perror("-pthread");
				return 2;
			}
			while (prog_tid == 0) sched_yield();
		}
		else if (strcmp(argv[a], "-o") == 0 && a + 1 < argc) dir = argv[++a];
		else break;
	}
	if (required == MPI_THREAD_SINGLE)
		MPI_Init(&argc, &argv);
	else
		MPI_Init_thread(&argc, &argv, required, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &world_size);
	out = stdout;
	if (dir != NULL) {
		char path[4096];
		snprintf(path, sizeof path, "%s/rank-%d.txt", dir, world_rank);
		if ((out = fopen(path, "w")) == NULL) {
			perror(path);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
	mpi_ops[SUM] = MPI_SUM, mpi_ops[PROD] = MPI_PROD, mpi_ops[MIN] = MPI_MIN, mpi_ops[MAX] = MPI_MAX;
	mpi_ops[LAND] = MPI_LAND, mpi_ops[LOR] = MPI_LOR, mpi_ops[LXOR] = MPI_LXOR;
	mpi_ops[BAND] = MPI_BAND, mpi_ops[BOR] = MPI_BOR, mpi_ops[BXOR] = MPI_BXOR;
	for (int i = 0; i < NTYPES; i++) types[i].kind = resolve_kind(&types[i]);

	for (; a < argc; a++) {
		double t0 = MPI_Wtime();
		if (strcmp(argv[a], "types") == 0) part_types();
		else if (strcmp(argv[a], "large") == 0) part_large();
		else if (strcmp(argv[a], "special") == 0) part_special();
		else if (strncmp(argv[a], "loop=", 5) == 0) part_loop(atol(argv[a] + 5));
		else if (strncmp(argv[a], "repeat=", 7) == 0) part_repeat(atol(argv[a] + 7), 0);
		else if (strncmp(argv[a], "repeat1=", 8) == 0) part_repeat(atol(argv[a] + 8), 1);
		else if (strncmp(argv[a], "alternate=", 10) == 0) part_alternate(atol(argv[a] + 10));
		else if (strncmp(argv[a], "extremes=", 9) == 0) part_extremes(atol(argv[a] + 9));
		else if (strcmp(argv[a], "threads") == 0) part_threads(provided);
		else if (strcmp(argv[a], "shm") == 0) fprintf(out, "shm rank %d entries %d\n", world_rank, shm_entries());
		else if (strcmp(argv[a], "abort") == 0) part_abort();
		else if (strcmp(argv[a], "overlap") == 0) part_overlap();
		else if (strcmp(argv[a], "policies") == 0) part_policies();
		else if (strcmp(argv[a], "resident") == 0) part_resident();
		else {
			FAIL("unknown part %s", argv[a]);
			continue;
		}
		if (world_rank == 0) fprintf(stderr, "time %s: %.3f s\n", argv[a], MPI_Wtime() - t0);
	}
	if (out != stdout) fclose(out);
	else fflush(out);
	MPI_Finalize();
	return failures ? 1 : 0;
}
