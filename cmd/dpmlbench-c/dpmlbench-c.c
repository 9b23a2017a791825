// dpmlbench-c: MPI_Allreduce timed the way applications call it, from a C
// program, for the MPI library alone and with libdpml.so preloaded or
// linked. `make build` compiles it into bin/dpmlbench-c (mpicc -O2); see
// README.md in this directory for the method, flags and output.
//
//	mpirun -np 32 -x LD_PRELOAD=$PWD/bin/libdpml.so bin/dpmlbench-c -pattern b2b -variants native,auto,dpml:l=1 -out DIR
//	bin/dpmlrun -nodes 2 -ppn 2 -preload $PWD/bin/libdpml.so -- bin/dpmlbench-c -pattern skew -skew 20 -check
//
// Patterns (one per run, -pattern):
//   b2b      calls back to back, no barrier between them (what OSU and IMB
//            report): a barrier starts each batch; a sample is the rank's
//            average over the batch, max over ranks;
//   barrier  a barrier before every call, a sample is one call's time, max
//            over ranks;
//   skew     each rank busy-computes a seeded random 0..S us before every
//            call (CG dot products, AMR checksums); a sample is the time
//            inside MPI_Allreduce, max over ranks.
//
// Variants (-variants) are plan specs: "native" calls PMPI_Allreduce, the
// MPI library's own allreduce, bypassing libdpml.so; any other spec ("auto",
// "dpml:l=2", "pipelined:l=8,k=4", see dpmlx.h) is set on the benchmark's
// communicator with DPMLX_Set_plan and timed through MPI_Allreduce. The
// DPMLX_* functions are looked up with dlsym, so the client also runs
// without libdpml.so; then only "native" runs and the output says so.
//
// Results: rank 0 prints rows as sizes finish in the -format chosen (table,
// nccl or osu: the same rows as dpmlbench's for the same results) and writes
// results.json and results.csv in dpmlbench's Report schema
// (internal/tools/results) into -out DIR (default bench/results/local-<UTC
// time>/c-<pattern>, dpmlbench's layout), so `dpmlbench table` and
// `dpmlbench plot` read them.
// The measurement loops allocate nothing and print nothing; the client's
// own bookkeeping collectives use PMPI_Allreduce on MPI_COMM_WORLD, so they
// neither reach libdpml.so nor disturb DPMLX_Last_plan.

#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dpmlx.h"

#ifndef DPML_COMMIT
#define DPML_COMMIT ""
#endif

extern char **environ;

// ---------------------------------------------------------------------------
// Settings.

enum { PAT_B2B, PAT_BARRIER, PAT_SKEW, PAT_COLD, PAT_COLD_BARRIER, PAT_CHURN };
static const char *const pattern_names[] = {"b2b", "barrier", "skew", "cold", "cold-barrier", "churn"};
#define NPATTERNS 6

// Output formats (-format), as dpmlbench's (internal/tools/bench/format.go): the
// same bytes for the same results, so both clients' rows compare.
enum { FMT_TABLE, FMT_NCCL, FMT_OSU };
static const char *const format_names[] = {"table", "nccl", "osu"};

enum { OP_SUM, OP_MAX, OP_MIN };
static const char *const op_names[] = {"sum", "max", "min"};

static struct {
	const char *sizes_flag;
	long *sizes;
	int nsizes;
	const char *type;       // bench type name: float32, float64, int32
	MPI_Datatype dt;
	int es;
	int op;
	MPI_Op mop;
	const char *variants_flag;
	int pattern;
	double skew_us;
	uint64_t seed;
	double time_s;          // timed duration wanted per (size, variant) point
	int iters;              // fixed timed calls per point (0: from -time)
	int min_iters, max_iters, warmup, tune_calls, batches;
	int run; // barrier, skew: consecutive samples of a point per round
	int check, percall, progress, quiet, samples;
	int calls;              // cold patterns: timed calls per (size, variant), nothing untimed
	int fresh;              // cold patterns: a new communicator per (size, variant)
	int comms;              // churn: communicators made, used and freed per variant
	int uses_lo, uses_hi;   // churn: calls per communicator, lo..hi
	int reversed;           // churn: MPI_Comm_split with the ranks reversed instead of MPI_Comm_dup
	int format;             // FMT_*: how rows are printed
	const char *out;        // "" none; NULL: the default folder (default_out)
} cfg = {
	.sizes_flag = "4:64M:x4", .type = "float32", .op = OP_SUM, .variants_flag = "native,auto",
	.pattern = PAT_B2B, .skew_us = 20, .seed = 1, .time_s = 0.1, .min_iters = 10, .max_iters = 1000,
	.warmup = 3, .tune_calls = 100, .batches = 10, .run = 100, .percall = 1, .calls = 100, .comms = 1000, .uses_lo = 1, .uses_hi = 100, .out = NULL,
};

static int rank, nranks;
static MPI_Comm bcomm = MPI_COMM_NULL; // the measured calls' communicator (a dup of world)

// The libdpml.so extension, when loaded (dlsym, so no link dependency).
static DPMLX_Check_plan_fn x_check;
static DPMLX_Set_plan_fn x_set;
static DPMLX_Last_plan_fn x_last;
static DPMLX_Library_version_fn x_version;
static char dpml_library[1024]; // "PATH (VERSION)", "" without the library
static char offload_desc[1200];  // DPML_OFFLOAD and its library, "EMULATED" for the tests' fake; "" when off
// Without the extension: the object that defines MPI_Allreduce when it is
// not the MPI library (a libdpml.so older than dpmlx.h, or another
// interposer), whose own choice "auto" then times; "" when none.
static char interposer[512];

// ---------------------------------------------------------------------------
// Small helpers.

static void die(const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "dpmlbench-c: rank %d: fatal: ", rank);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	MPI_Abort(MPI_COMM_WORLD, 1);
	exit(1);
}

static void *xmalloc(size_t n) {
	void *p = NULL;
	if (posix_memalign(&p, 4096, n ? n : 1) != 0) die("out of memory (%zu bytes)", n);
	return p;
}

static double now(void) { return MPI_Wtime(); }

// The usage error of the run (flag errors): every rank parses the same
// arguments, and the ranks agree on failure before anyone exits, so a bad
// flag ends the job with status 2 instead of hanging it.
static char usage_err[512];

static int usagef(const char *fmt, ...) {
	if (usage_err[0]) return -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(usage_err, sizeof usage_err, fmt, ap);
	va_end(ap);
	return -1;
}

// parse_size reads a byte count as dpmlbench does (bench.ParseSize): a
// decimal integer with an optional suffix K, M, G, KB, MB, GB, KiB, MiB, GiB
// (all powers of 1024, any case) or B. Returns -1 when it is not one.
static long parse_size(const char *s) {
	while (isspace((unsigned char)*s)) s++;
	if (!isdigit((unsigned char)*s)) return -1;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno) return -1;
	char suf[8] = {0};
	size_t n = 0;
	for (const char *p = end; *p && !isspace((unsigned char)*p); p++) {
		if (n + 1 >= sizeof suf) return -1;
		suf[n++] = (char)toupper((unsigned char)*p);
	}
	for (const char *p = end + n; *p; p++)
		if (!isspace((unsigned char)*p)) return -1;
	unsigned long long mult = 1;
	if (n == 0 || !strcmp(suf, "B")) mult = 1;
	else if (!strcmp(suf, "K") || !strcmp(suf, "KB") || !strcmp(suf, "KIB")) mult = 1ULL << 10;
	else if (!strcmp(suf, "M") || !strcmp(suf, "MB") || !strcmp(suf, "MIB")) mult = 1ULL << 20;
	else if (!strcmp(suf, "G") || !strcmp(suf, "GB") || !strcmp(suf, "GIB")) mult = 1ULL << 30;
	else return -1;
	if (v > (1ULL << 40) / mult) return -1;
	return (long)(v * mult);
}

// format_size writes a byte count as dpmlbench does (bench.FormatSize).
static const char *format_size(long n, char *buf, size_t len) {
	if (n >= 1L << 30 && n % (1L << 30) == 0) snprintf(buf, len, "%ldG", n >> 30);
	else if (n >= 1L << 20 && n % (1L << 20) == 0) snprintf(buf, len, "%ldM", n >> 20);
	else if (n >= 1L << 10 && n % (1L << 10) == 0) snprintf(buf, len, "%ldK", n >> 10);
	else snprintf(buf, len, "%ld", n);
	return buf;
}

static int cmp_long(const void *a, const void *b) {
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

// parse_sizes parses -sizes with dpmlbench's grammar (bench.ParseSizes): a
// comma-separated list of sizes and ranges FROM:TO[:xF|:+S]; sorted, no
// duplicates, no zero.
static int parse_sizes(const char *flag) {
	char *s = strdup(flag), *save = NULL;
	long *out = NULL;
	int n = 0, cap = 0;
#define ADD(v)                                                         \
	do {                                                           \
		if (n == cap) out = realloc(out, sizeof *out * (cap = cap ? 2 * cap : 16)); \
		out[n++] = (v);                                        \
	} while (0)
	int rc = 0;
	for (char *item = strtok_r(s, ",", &save); item && rc == 0; item = strtok_r(NULL, ",", &save)) {
		char *parts[4] = {0};
		int np = 0;
		for (char *p = item, *q; np < 4; p = q + 1) {
			parts[np++] = p;
			if ((q = strchr(p, ':')) == NULL) break;
			*q = '\0';
		}
		if (np > 3) { rc = usagef("-sizes: range %s: want FROM:TO[:xF|:+S]", item); break; }
		long from = parse_size(parts[0]);
		if (from <= 0) { rc = usagef("-sizes: %s: not a positive byte count (want e.g. 4, 1K, 64KiB, 16M)", parts[0]); break; }
		if (np == 1) { ADD(from); continue; }
		long to = parse_size(parts[1]);
		if (to <= 0) { rc = usagef("-sizes: range %s:%s: %s: not a positive byte count (want e.g. 4, 1K, 64KiB, 16M)", parts[0], parts[1], parts[1]); break; }
		if (to < from) { rc = usagef("-sizes: range %s:%s: want 0 < FROM <= TO", parts[0], parts[1]); break; }
		const char *step = np == 3 ? parts[2] : "x2";
		while (isspace((unsigned char)*step)) step++;
		if (*step == 'x' || *step == 'X' || *step == '*') {
			char *end;
			long f = strtol(step + 1, &end, 10);
			if (end == step + 1 || *end != '\0' || f < 2) { rc = usagef("-sizes: step %s: want xF with integer F >= 2", step); break; }
			for (long v = from; v <= to; v *= f) {
				ADD(v);
				if (v > to / f) break;
			}
		} else if (*step == '+') {
			long inc = parse_size(step + 1);
			if (inc <= 0) { rc = usagef("-sizes: step %s: want +S with a size S > 0", step); break; }
			if ((to - from) / inc > 100000) { rc = usagef("-sizes: range %s: more than 100000 sizes", item); break; }
			for (long v = from; v <= to; v += inc) ADD(v);
		} else {
			rc = usagef("-sizes: step %s: want xF or +S", step);
		}
	}
#undef ADD
	free(s);
	if (rc == 0 && n == 0) rc = usagef("-sizes: empty list");
	if (rc != 0) { free(out); return rc; }
	qsort(out, n, sizeof *out, cmp_long);
	int m = 0;
	for (int i = 0; i < n; i++)
		if (m == 0 || out[m - 1] != out[i]) out[m++] = out[i];
	cfg.sizes = out, cfg.nsizes = m;
	return 0;
}

// parse_duration reads -time: a number with a unit s, ms, us (or a plain
// number of seconds), like Go's durations for the cases that matter.
static int parse_duration(const char *s, double *out) {
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || v < 0 || !isfinite(v)) return -1;
	if (!strcmp(end, "") || !strcmp(end, "s")) *out = v;
	else if (!strcmp(end, "ms")) *out = v * 1e-3;
	else if (!strcmp(end, "us") || !strcmp(end, "µs")) *out = v * 1e-6;
	else if (!strcmp(end, "ns")) *out = v * 1e-9;
	else if (!strcmp(end, "m")) *out = v * 60;
	else return -1;
	return 0;
}

static int parse_int(const char *name, const char *s, int lo, int *out) {
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < lo || v > 1000000000L) return usagef("-%s %s: want an integer >= %d", name, s, lo);
	*out = (int)v;
	return 0;
}

// ---------------------------------------------------------------------------
// Variants.

typedef struct {
	char spec[DPMLX_MAX_SPEC]; // canonical plan spec; "native" for the MPI library
	const char *kind;          // bench variant: "native", "auto" or "dpml"
	int native;                // PMPI_Allreduce, no libdpml.so
	int tune;                  // exactly "auto": untimed tuner calls first
	int leaders, pipeline;     // the spec's l and k (0: not forced)
	char skip[320];            // not run, and why
} variant;

static variant *vars;
static int nvars;

// spec_int returns the value of key (e.g. "l") in a canonical spec, 0 if
// absent.
static int spec_int(const char *spec, const char *key) {
	const char *p = strchr(spec, ':');
	size_t kl = strlen(key);
	while (p != NULL) {
		p++;
		if (strncmp(p, key, kl) == 0 && p[kl] == '=') return atoi(p + kl + 1);
		p = strchr(p, ',');
	}
	return 0;
}

// parse_variants splits -variants into specs. Specs contain commas
// ("pipelined:l=8,k=4"), so a comma-separated item that is only a setting
// (has '=' but no ':') continues the previous spec; ';' and spaces also
// separate specs. "l=max" is replaced by the smallest ppn. Each spec is
// checked by libdpml.so (DPMLX_Check_plan) when it is loaded; without it,
// only the variant names are checked and everything but native is skipped.
static int parse_variants(int ppn_min) {
	char *s = strdup(cfg.variants_flag), *save = NULL;
	char specs[64][DPMLX_MAX_SPEC];
	int n = 0, rc = 0;
	for (char *tok = strtok_r(s, ",; \t", &save); tok; tok = strtok_r(NULL, ",; \t", &save)) {
		if (strchr(tok, '=') && !strchr(tok, ':') && n > 0) {
			size_t l = strlen(specs[n - 1]);
			if (l + 1 + strlen(tok) >= DPMLX_MAX_SPEC) { rc = usagef("-variants: spec too long"); break; }
			snprintf(specs[n - 1] + l, DPMLX_MAX_SPEC - l, ",%s", tok);
			continue;
		}
		if (n == 64) { rc = usagef("-variants: more than 64 variants"); break; }
		if (strlen(tok) >= DPMLX_MAX_SPEC) { rc = usagef("-variants: spec too long"); break; }
		strcpy(specs[n++], tok);
	}
	free(s);
	if (rc) return rc;
	if (n == 0) return usagef("-variants: empty list");
	vars = calloc((size_t)n, sizeof *vars);
	for (int i = 0; i < n && rc == 0; i++) {
		char spec[DPMLX_MAX_SPEC * 2];
		// l=max: the smallest ppn (the engine's limit).
		char *m = strstr(specs[i], "l=max");
		if (m && (m[5] == '\0' || m[5] == ',') && (m == specs[i] || m[-1] == ':' || m[-1] == ',')) {
			snprintf(spec, sizeof spec, "%.*sl=%d%s", (int)(m - specs[i]), specs[i], ppn_min, m + 5);
		} else {
			snprintf(spec, sizeof spec, "%.*s", DPMLX_MAX_SPEC - 1, specs[i]);
		}
		variant v = {0};
		char canon[DPMLX_MAX_SPEC];
		if (x_check != NULL) {
			if (x_check(spec, canon, sizeof canon) != MPI_SUCCESS) {
				rc = usagef("-variants: %s", canon);
				break;
			}
		} else {
			// Without the library: only the variant name can be checked.
			size_t k = strcspn(spec, ":");
			snprintf(canon, sizeof canon, "%.*s", DPMLX_MAX_SPEC - 1, spec);
			for (char *c = canon; *c && (size_t)(c - canon) < k; c++) *c = (char)tolower((unsigned char)*c);
			if (strncmp(canon, "native", k) && strncmp(canon, "auto", k) && strncmp(canon, "dpml", k) && strncmp(canon, "pipelined", k)) {
				rc = usagef("-variants: %s: unknown variant (want native, auto, dpml or pipelined)", spec);
				break;
			}
			if (!strcmp(canon, "native:")) canon[6] = '\0';
		}
		snprintf(v.spec, sizeof v.spec, "%s", canon);
		v.native = !strcmp(v.spec, "native");
		v.tune = !strcmp(v.spec, "auto");
		v.kind = v.native ? "native" : v.tune ? "auto" : "dpml";
		v.leaders = spec_int(v.spec, "l");
		v.pipeline = spec_int(v.spec, "k");
		if (!v.native && !v.tune && v.pipeline == 0 && !strncmp(v.spec, "dpml", 4)) v.pipeline = 1;
		if (!v.native && x_set == NULL) {
			if (v.tune && interposer[0]) {
				// MPI_Allreduce as the interposer serves it.
			} else if (interposer[0]) {
				snprintf(v.skip, sizeof v.skip, "no DPMLX_Set_plan in %.100s (a libdpml.so without dpmlx.h?): only native and auto run",
					 interposer);
			} else {
				snprintf(v.skip, sizeof v.skip, "libdpml.so not loaded");
			}
		}
		int dup = 0;
		for (int j = 0; j < nvars; j++) dup |= !strcmp(vars[j].spec, v.spec);
		if (dup) {
			if (rank == 0) fprintf(stderr, "dpmlbench-c: -variants: %s given twice (after l=max); running it once\n", v.spec);
			continue;
		}
		vars[nvars++] = v;
	}
	return rc;
}

// ---------------------------------------------------------------------------
// Inputs and the oracle. Element i of rank r is h(i) + (r+1)*g(i) with
// h in 0..255 and g in 0..3 from a hash of i: small integers, exact in
// float, double and int, so every reduction order gives the same result,
// and the expected result has a closed form computed here independently of
// any MPI library: sum P*h + g*P*(P+1)/2, max h + P*g, min h + g. A missing
// or doubled rank changes the sum wherever g > 0; a shifted element changes
// h. Sums stay exact in float up to about 3000 ranks.

static inline uint32_t mix(long i) {
	uint32_t h = (uint32_t)i * 2654435761u;
	h ^= h >> 15;
	h *= 2246822519u;
	h ^= h >> 13;
	return h;
}

static inline long input_value(int r, long i) {
	uint32_t x = mix(i);
	return (long)(x >> 24) + (long)(r + 1) * (long)((x >> 8) & 3);
}

static inline long expected_value(long i) {
	uint32_t x = mix(i);
	long h = (long)(x >> 24), g = (long)((x >> 8) & 3), P = nranks;
	switch (cfg.op) {
	case OP_MAX: return h + P * g;
	case OP_MIN: return h + g;
	}
	return P * h + g * P * (P + 1) / 2;
}

static void fill_inputs(void *buf, long count) {
	for (long i = 0; i < count; i++) {
		long v = input_value(rank, i);
		if (cfg.dt == MPI_FLOAT) ((float *)buf)[i] = (float)v;
		else if (cfg.dt == MPI_DOUBLE) ((double *)buf)[i] = (double)v;
		else ((int *)buf)[i] = (int)v;
	}
}

// poison makes every element wrong (NaN for float and double, -1 for int:
// the expected values are non-negative integers).
static void poison(void *buf, long count) { memset(buf, 0xff, (size_t)count * (size_t)cfg.es); }

// verify compares every element with the oracle and returns the number of
// wrong ones; the first is described in where (if where[0] is empty).
static long verify(const void *buf, long count, char *where, size_t wlen, const char *what) {
	long bad = 0, first = -1;
	double got = 0;
	for (long i = 0; i < count; i++) {
		long w = expected_value(i);
		int ok;
		double g;
		if (cfg.dt == MPI_FLOAT) g = ((const float *)buf)[i], ok = ((const float *)buf)[i] == (float)w;
		else if (cfg.dt == MPI_DOUBLE) g = ((const double *)buf)[i], ok = ((const double *)buf)[i] == (double)w;
		else g = ((const int *)buf)[i], ok = ((const int *)buf)[i] == (int)w;
		if (!ok) {
			if (bad++ == 0) first = i, got = g;
		}
	}
	if (bad && where[0] == '\0')
		snprintf(where, wlen, "rank %d, %.160s: element %ld of %ld is %g, want %ld", rank, what, first, count, got, expected_value(first));
	return bad;
}

// ---------------------------------------------------------------------------
// Skew: the busy compute between calls. Delays come from splitmix64 seeded
// by -seed and the rank, one draw per call in call order, uniform in
// [0, S] us.

static uint64_t rng_state;

static uint64_t splitmix64(void) {
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static volatile double busy_sink;

static void busy(void) {
	double d = cfg.skew_us * 1e-6 * (double)(splitmix64() >> 11) * 0x1.0p-53;
	double end = now() + d, x = busy_sink;
	do {
		for (int i = 0; i < 64; i++) x = x * 1.0000001 + 1e-9;
	} while (now() < end);
	busy_sink = x;
}

// ---------------------------------------------------------------------------
// Statistics, as internal/tools/bench.Summarize: sorted samples, percentiles by
// linear interpolation between closest ranks, sample stddev.

typedef struct {
	int n;
	double min, max, mean, median, p25, p75, p99, stddev;
} summary;

static double quantile_sorted(const double *s, int n, double q) {
	if (n == 1) return s[0];
	double pos = q * (n - 1);
	int lo = (int)floor(pos);
	if (lo >= n - 1) return s[n - 1];
	double f = pos - lo;
	return s[lo] + f * (s[lo + 1] - s[lo]);
}

// summarize sorts xs in place.
static summary summarize(double *xs, int n) {
	summary s = {0};
	if (n <= 0) return s;
	double sum = 0;
	for (int i = 0; i < n; i++) sum += xs[i];
	qsort(xs, (size_t)n, sizeof *xs, cmp_double);
	double mean = sum / n, ss = 0;
	for (int i = 0; i < n; i++) ss += (xs[i] - mean) * (xs[i] - mean);
	s.n = n;
	s.min = xs[0], s.max = xs[n - 1], s.mean = mean;
	s.median = quantile_sorted(xs, n, 0.5);
	s.p25 = quantile_sorted(xs, n, 0.25);
	s.p75 = quantile_sorted(xs, n, 0.75);
	s.p99 = quantile_sorted(xs, n, 0.99);
	s.stddev = n > 1 ? sqrt(ss / (n - 1)) : 0;
	return s;
}

static summary scale(summary s, double f) {
	s.min *= f, s.max *= f, s.mean *= f, s.median *= f, s.p25 *= f, s.p75 *= f, s.p99 *= f, s.stddev *= f;
	return s;
}

// ---------------------------------------------------------------------------
// Results (rank 0), in the Report schema.

typedef struct {
	char variant[16];
	int leaders, pipeline, segments, cma, stream, radix;
	char intra[8];
	char passed[32];
	// The tuner's state of the key (auto): "frozen" or "exploring", and
	// its counters of settled-plan switches and of calls that ran another
	// plan than the call before; switches < 0: not reported.
	char tuner[16];
	long long switches, changes;
	char offload[8]; // "sharp" or "host" when the spec says (an offload configured or forced)
} planinfo;

typedef struct {
	long bytes, count;
	const variant *v;
	int warmup, iters, batches;
	summary us;
	int has_percall;
	summary percall;
	char check[12];
	long long mismatches;
	char mismatch_at[256];
	char skipped[400];
	int has_plan;
	planinfo plan;
	double *samples; // -samples: the per-sample maxima in us
} result;

static result *results;
static int nresults, capresults;

// parse_plan reads DPMLX_Last_plan's text: "native reason=WHY", "native",
// or "VARIANT:l=L,k=K,intra=I,r=R,seg=S segments=N [stream]
// [tuner=STATE switches=S changes=C calls=N]".
static planinfo parse_plan(const char *text) {
	planinfo p = {0};
	p.switches = p.changes = -1;
	const char *tu = strstr(text, " tuner=");
	if (tu) {
		snprintf(p.tuner, sizeof p.tuner, "%.*s", (int)strcspn(tu + 7, " "), tu + 7);
		const char *sw = strstr(tu, " switches="), *ch = strstr(tu, " changes=");
		if (sw) p.switches = atoll(sw + 10);
		if (ch) p.changes = atoll(ch + 9);
	}
	size_t k = strcspn(text, ": ");
	snprintf(p.variant, sizeof p.variant, "%.*s", (int)k, text);
	const char *r = strstr(text, "reason=");
	if (r) snprintf(p.passed, sizeof p.passed, "%.*s", (int)strcspn(r + 7, " "), r + 7);
	if (!strcmp(p.variant, "native")) {
		p.leaders = p.pipeline = 1;
		return p;
	}
	char head[DPMLX_MAX_SPEC];
	snprintf(head, sizeof head, "%.*s", (int)strcspn(text, " "), text);
	p.leaders = spec_int(head, "l");
	p.pipeline = spec_int(head, "k");
	p.cma = strstr(head, "intra=cma") != NULL;
	p.radix = spec_int(head, "r");
	const char *in = strstr(head, "intra=");
	if (in) snprintf(p.intra, sizeof p.intra, "%.*s", (int)strcspn(in + 6, ","), in + 6);
	const char *of = strstr(head, "offload=");
	if (of) snprintf(p.offload, sizeof p.offload, "%.*s", (int)strcspn(of + 8, ", "), of + 8);
	const char *sg = strstr(text, " segments=");
	if (sg) p.segments = atoi(sg + 10);
	const char *st = strstr(text, " stream");
	p.stream = st != NULL && (st[7] == '\0' || st[7] == ' ');
	return p;
}

// ---------------------------------------------------------------------------
// Layout and metadata.

// describe_offload records what DPML_OFFLOAD asks libdpml.so for, and
// whether its libsharp_coll is the tests' EMULATED switch (the fake exports
// dpml_fakesharp_emulated), so that results on it say so.
static void describe_offload(void) {
	const char *mode = getenv("DPML_OFFLOAD");
	if (!mode || !*mode || !strcmp(mode, "off")) return;
	const char *lib = getenv("DPML_SHARP_LIB");
	if (!lib || !*lib) lib = "libsharp_coll.so";
	const char *what = "not loadable here";
	void *h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
	if (h) what = dlsym(h, "dpml_fakesharp_emulated") ? "EMULATED switch (the tests' fake libsharp_coll), not SHArP" : "loads";
	snprintf(offload_desc, sizeof offload_desc, "DPML_OFFLOAD=%s, %s: %s", mode, lib, what);
}

#define HOSTLEN 256
static char *rank_hosts; // nranks x HOSTLEN
static int nodes, ppn_min, ppn_max;

static void gather_layout(void) {
	char mine[HOSTLEN] = {0};
	int len = 0;
	MPI_Get_processor_name(mine, &len);
	rank_hosts = calloc((size_t)nranks, HOSTLEN);
	MPI_Allgather(mine, HOSTLEN, MPI_CHAR, rank_hosts, HOSTLEN, MPI_CHAR, MPI_COMM_WORLD);
	nodes = 0, ppn_min = nranks, ppn_max = 0;
	for (int r = 0; r < nranks; r++) {
		const char *h = rank_hosts + (size_t)r * HOSTLEN;
		int first = 1, cnt = 0;
		for (int q = 0; q < nranks; q++) {
			if (!strcmp(h, rank_hosts + (size_t)q * HOSTLEN)) {
				if (q < r) first = 0;
				cnt++;
			}
		}
		if (!first) continue;
		nodes++;
		if (cnt < ppn_min) ppn_min = cnt;
		if (cnt > ppn_max) ppn_max = cnt;
	}
}

static int num_cpu(void) {
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) != 0) return (int)sysconf(_SC_NPROCESSORS_ONLN);
	return CPU_COUNT(&set);
}

static long llc_bytes(void) {
	FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
	if (!f) return 0;
	char buf[64] = {0};
	long v = 0;
	if (fgets(buf, sizeof buf, f)) {
		buf[strcspn(buf, "\n")] = '\0';
		v = parse_size(buf);
	}
	fclose(f);
	return v > 0 ? v : 0;
}

// machine_name writes rank 0's CPU model and CPUs online as dpmlbench's
// bench.Machine does ("AMD EPYC 9654 96-Core Processor, 32 CPUs"); 0 when
// the model is unknown.
static int machine_name(char *buf, size_t len) {
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f) return 0;
	char line[512];
	int found = 0;
	while (!found && fgets(line, sizeof line, f)) {
		char *colon = strchr(line, ':');
		if (!colon || strncmp(line, "model name", 10) != 0) continue;
		// The value's words, single-spaced (strings.Fields).
		size_t o = 0;
		buf[0] = '\0';
		for (char *p = colon + 1, *save = NULL, *w; (w = strtok_r(p, " \t\n", &save)) != NULL; p = NULL)
			o += snprintf(buf + o, o < len ? len - o : 0, "%s%s", o ? " " : "", w);
		found = o > 0;
	}
	fclose(f);
	if (found) {
		size_t o = strlen(buf);
		snprintf(buf + o, len - o, ", %ld CPUs", sysconf(_SC_NPROCESSORS_ONLN));
	}
	return found;
}

static char date_buf[40];
static char default_out[128]; // bench/results/local-<UTC time>/c-<pattern>, as dpmlbench's bench.DefaultOutDir

static void format_date(void) {
	time_t t = time(NULL);
	struct tm tm, utc;
	gmtime_r(&t, &utc);
	// bench.DirTimeFormat; the pattern is appended once the flags are read.
	strftime(default_out, sizeof default_out, "bench/results/local-%Y%m%dT%H%M%SZ/c-", &utc);
	localtime_r(&t, &tm);
	size_t n = strftime(date_buf, sizeof date_buf, "%Y-%m-%dT%H:%M:%S", &tm);
	long off = tm.tm_gmtoff;
	if (off == 0) {
		snprintf(date_buf + n, sizeof date_buf - n, "Z");
	} else {
		char sign = off < 0 ? '-' : '+';
		if (off < 0) off = -off;
		snprintf(date_buf + n, sizeof date_buf - n, "%c%02ld:%02ld", sign, off / 3600, off / 60 % 60);
	}
}

// ---------------------------------------------------------------------------
// The measurement.

static char *sendbuf, *recvbuf;
static const variant *cur_plan; // the plan set on bcomm (NULL: none yet)

typedef struct {
	variant *v;
	long count;
	int skip;
	char why[256];
	int n;            // samples: calls (barrier, skew) or batches (b2b)
	int m;            // calls per sample (b2b; 1 otherwise)
	double *local;    // this rank's n samples (seconds)
	double *percall;  // b2b: this rank's n*m per-call times
	long long mism;
	char first[256];
	char plan[DPMLX_MAX_SPEC];
} point;

static void use_plan(const variant *v) {
	if (v->native || v == cur_plan || x_set == NULL) return;
	int rc = x_set(bcomm, v->spec);
	if (rc != MPI_SUCCESS) die("DPMLX_Set_plan(%s) failed with MPI error class %d", v->spec, rc);
	cur_plan = v;
}

static inline void call(const point *p) {
	if (p->v->native) PMPI_Allreduce(sendbuf, recvbuf, (int)p->count, cfg.dt, cfg.mop, bcomm);
	else MPI_Allreduce(sendbuf, recvbuf, (int)p->count, cfg.dt, cfg.mop, bcomm);
}

static void check_result(point *p, const char *what, int j) {
	char label[DPMLX_MAX_SPEC + 64];
	snprintf(label, sizeof label, "%.*s, %.32s %d", DPMLX_MAX_SPEC - 1, p->v->spec, what, j);
	p->mism += verify(recvbuf, p->count, p->first, sizeof p->first, label);
}

static void last_plan(point *p) {
	if (p->v->native || x_last == NULL) return;
	if (x_last(bcomm, p->plan, sizeof p->plan) != MPI_SUCCESS && p->plan[0] == '\0') snprintf(p->plan, sizeof p->plan, "none");
}

// barrier_call is one untimed-pattern call for warm-up: barrier, timed
// call, check. Returns this rank's time.
static double barrier_call(point *p, int j) {
	use_plan(p->v);
	if (cfg.check) poison(recvbuf, p->count);
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = now();
	call(p);
	double t = now() - t0;
	if (cfg.check) check_result(p, "warm-up call", j);
	return t;
}

static int policy_iters(double est) {
	if (cfg.iters > 0) return cfg.iters;
	if (!(est > 0)) return cfg.max_iters;
	double n = ceil(cfg.time_s / est);
	if (n < cfg.min_iters) return cfg.min_iters;
	if (n > cfg.max_iters) return cfg.max_iters;
	return (int)n;
}

// prepare: the tuner's settling calls (auto), the warm-up (barrier before
// each call, checked), the agreed number of timed calls.
static void prepare(point *p) {
	if (p->skip) return;
	if (p->v->tune) {
		for (int j = 0; j < cfg.tune_calls; j++) {
			use_plan(p->v);
			int last = j == cfg.tune_calls - 1;
			if (cfg.check && j == 0) poison(recvbuf, p->count);
			if (cfg.pattern != PAT_B2B) {
				if (cfg.check) poison(recvbuf, p->count);
				if (cfg.pattern == PAT_BARRIER) MPI_Barrier(MPI_COMM_WORLD);
				else busy();
			}
			call(p);
			if (cfg.check && (last || cfg.pattern != PAT_B2B)) check_result(p, "tuning call", j);
		}
	}
	double warm[64];
	int nw = cfg.warmup < 64 ? cfg.warmup : 64;
	for (int j = 0; j < cfg.warmup; j++) {
		double t = barrier_call(p, j);
		if (j < 64) warm[j] = t;
	}
	// A fixed plan that libdpml.so passed to the MPI library would be
	// timed under a false name: skip it (decided on all ranks alike).
	int passed = 0;
	if (!p->v->native && !p->v->tune) {
		last_plan(p);
		passed = strstr(p->plan, "reason=") != NULL || !strcmp(p->plan, "none");
	}
	int any = 0;
	PMPI_Allreduce(&passed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (any) {
		p->skip = 1;
		snprintf(p->why, sizeof p->why, "libdpml.so did not run the plan: %s", passed ? p->plan : "(on another rank)");
		return;
	}
	int n = 0;
	if (rank == 0) {
		// bench.WarmupEstimate: the median of all but the first call.
		double est = nw == 0 ? 0 : nw <= 2 ? warm[nw - 1] : 0;
		if (nw > 2) {
			double *w = warm + 1;
			qsort(w, (size_t)(nw - 1), sizeof *w, cmp_double);
			est = quantile_sorted(w, nw - 1, 0.5);
		}
		n = policy_iters(est);
	}
	MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
	p->m = 1;
	if (cfg.pattern == PAT_B2B) {
		int nb = cfg.batches < n ? cfg.batches : n;
		p->m = (n + nb - 1) / nb;
		n = nb;
	}
	p->n = n;
	p->local = xmalloc(sizeof(double) * (size_t)n);
	if (cfg.pattern == PAT_B2B && cfg.percall) p->percall = xmalloc(sizeof(double) * (size_t)n * (size_t)p->m);
}

// round_order fills order[0..np) with round j's order of the points: a
// permutation drawn from splitmix64 seeded by the round alone, so every rank
// draws the same one without communicating. A rotation (each round starting
// one point later) keeps the points' cyclic order, and a variant listed
// after native then follows native's batches in most rounds: whatever a
// switch from the MPI library's path costs lands on that one variant.
static void round_order(int *order, int np, int j) {
	uint64_t st = (uint64_t)(j + 1) * 0xD6E8FEB86659FD93ULL;
	for (int i = 0; i < np; i++) order[i] = i;
	for (int i = np - 1; i > 0; i--) {
		uint64_t z = (st += 0x9E3779B97F4A7C15ULL);
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
		z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
		z ^= z >> 31;
		int k = (int)(z % (uint64_t)(i + 1));
		int t = order[i];
		order[i] = order[k], order[k] = t;
	}
}

// time_all runs the timed calls of one size's points round by round: round
// j runs sample j of every point (b2b: a batch), or under barrier and skew
// the next -run samples (calls) of every point, in round_order's order for
// j, so no variant always follows the same one and drift of the machine
// touches all alike. A program runs one plan for many calls: switching
// plans on every call (-run 1) sends every call of libdpml.so through its
// Go engine (DPMLX_Set_plan ends the C layer's clearance), which the
// program never pays. Every rank makes the same calls (the counts were
// broadcast).
static void time_all(point *pts, int np) {
	int most = 0;
	for (int i = 0; i < np; i++)
		if (!pts[i].skip && pts[i].n > most) most = pts[i].n;
	int *order = xmalloc(sizeof(int) * (size_t)np);
	MPI_Barrier(MPI_COMM_WORLD);
	// DPMLBENCH_ORDER_TRACE=1: rank 0 prints each round's order to stderr
	// (for the tests).
	const char *tr = getenv("DPMLBENCH_ORDER_TRACE");
	int trace_order = rank == 0 && tr != NULL && strcmp(tr, "1") == 0;
	int step = cfg.pattern == PAT_B2B ? 1 : cfg.run;
	for (int j0 = 0; j0 < most; j0 += step) {
		round_order(order, np, j0 / step);
		if (trace_order) {
			fprintf(stderr, "dpmlbench-c: order %ld %d:", pts[0].count, j0 / step);
			for (int i = 0; i < np; i++) fprintf(stderr, " %d", order[i]);
			fputc('\n', stderr);
		}
		for (int i = 0; i < np; i++) {
			for (int j = j0; j < j0 + step; j++) {
				point *p = &pts[order[i]];
				if (p->skip || j >= p->n) break;
				use_plan(p->v);
				if (cfg.check) poison(recvbuf, p->count);
				if (cfg.pattern == PAT_B2B) {
					MPI_Barrier(MPI_COMM_WORLD);
					double *pc = p->percall ? p->percall + (size_t)j * (size_t)p->m : NULL;
					double t0 = now(), prev = t0;
					if (pc) {
						for (int c = 0; c < p->m; c++) {
							call(p);
							double t = now();
							pc[c] = t - prev;
							prev = t;
						}
					} else {
						for (int c = 0; c < p->m; c++) call(p);
						prev = now();
					}
					p->local[j] = (prev - t0) / p->m;
					if (cfg.check) check_result(p, "last call of batch", j);
				} else {
					if (cfg.pattern == PAT_BARRIER) MPI_Barrier(MPI_COMM_WORLD);
					else busy();
					double t0 = now();
					call(p);
					p->local[j] = now() - t0;
					if (cfg.check) check_result(p, "call", j);
				}
				if (j == p->n - 1) last_plan(p);
			}
		}
	}
	free(order);
}

// finish reduces a point over ranks and (rank 0) records its result.
static void finish(point *p, long bytes) {
	result r = {0};
	r.bytes = bytes, r.count = p->count, r.v = p->v, r.warmup = cfg.warmup;
	if (p->v->skip[0]) snprintf(r.skipped, sizeof r.skipped, "%s", p->v->skip);
	else if (p->skip) snprintf(r.skipped, sizeof r.skipped, "%s", p->why);
	if (!p->skip) {
		double *maxed = xmalloc(sizeof(double) * (size_t)p->n);
		PMPI_Allreduce(p->local, maxed, p->n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
		if (p->percall) {
			// Each rank's own distribution over its calls, then the
			// largest value over ranks of each statistic.
			summary s = summarize(p->percall, p->n * p->m);
			double mine[8] = {s.min, s.max, s.mean, s.median, s.p25, s.p75, s.p99, s.stddev}, all[8];
			PMPI_Allreduce(mine, all, 8, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
			r.has_percall = 1;
			r.percall = (summary){p->n * p->m, all[0], all[1], all[2], all[3], all[4], all[5], all[6], all[7]};
			r.percall = scale(r.percall, 1e6);
		}
		if (cfg.check) {
			long long tot = 0;
			PMPI_Allreduce(&p->mism, &tot, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
			r.mismatches = tot;
			snprintf(r.check, sizeof r.check, "%s", tot ? "mismatch" : "ok");
			if (tot) {
				// The first wrong element of the lowest rank that saw one.
				int mine = p->mism ? rank : nranks, lowest = nranks;
				PMPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
				snprintf(r.mismatch_at, sizeof r.mismatch_at, "%s", p->first);
				if (lowest > 0 && lowest < nranks) {
					if (rank == lowest) MPI_Send(p->first, (int)sizeof p->first, MPI_CHAR, 0, 12, MPI_COMM_WORLD);
					if (rank == 0) MPI_Recv(r.mismatch_at, (int)sizeof r.mismatch_at, MPI_CHAR, lowest, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				}
			}
			if (tot && rank == 0)
				fprintf(stderr, "dpmlbench-c: CHECK FAILED: size %ld, %s: %lld wrong elements over all ranks; first %s\n",
					bytes, p->v->spec, tot, r.mismatch_at);
		}
		r.iters = p->n * p->m;
		r.batches = cfg.pattern == PAT_B2B ? p->n : 0;
		if (cfg.samples) {
			r.samples = malloc(sizeof(double) * (size_t)p->n);
			for (int j = 0; j < p->n; j++) r.samples[j] = maxed[j] * 1e6;
		}
		r.us = scale(summarize(maxed, p->n), 1e6);
		free(maxed);
		if (!p->v->native && p->plan[0]) {
			r.has_plan = 1;
			r.plan = parse_plan(p->plan);
		}
	}
	free(p->local);
	free(p->percall);
	if (rank != 0) {
		free(r.samples);
		return;
	}
	if (nresults == capresults) results = realloc(results, sizeof *results * (size_t)(capresults = capresults ? 2 * capresults : 64));
	results[nresults++] = r;
}

// ---------------------------------------------------------------------------
// Output: table (stdout), progress (stderr), JSON and CSV (-out).

static int progress_on;

static void progress(const char *fmt, ...) {
	if (!progress_on) return;
	char buf[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\r\033[K%s", buf);
	fflush(stderr);
}

static void progress_clear(void) {
	if (progress_on) fprintf(stderr, "\r\033[K"), fflush(stderr);
}

static const result *native_of(long bytes) {
	for (int i = 0; i < nresults; i++)
		if (results[i].bytes == bytes && results[i].v->native && !results[i].skipped[0] && results[i].iters > 0) return &results[i];
	return NULL;
}

static void fmt_us(double x, char *buf, size_t len) {
	if (!isfinite(x)) snprintf(buf, len, "-");
	else if (fabs(x) < 100) snprintf(buf, len, "%.2f", x);
	else if (fabs(x) < 100000) snprintf(buf, len, "%.1f", x);
	else snprintf(buf, len, "%.0f", x);
}

#define ROWFMT "%8s  %-26s %4s %3s %6s %10s %10s %10s %10s %10s %7s %7s  %s\n"

// wrong_cell is a result's #wrong: the wrong elements -check counted (0:
// it passed), N/A when results were not checked (bench.wrongCell).
static const char *wrong_cell(const result *r, char *buf, size_t len) {
	if (!r->check[0]) return "N/A";
	snprintf(buf, len, "%lld", r->mismatches);
	return buf;
}

// print_nccl and print_osu print the rows of the nccl and osu formats,
// byte for byte as dpmlbench's bench.NewRowWriter does for the same results.
static void print_nccl(int from) {
	static int header;
	if (!header) {
		header = 1;
		printf("# busbw = algbw x 2(n-1)/n, n = %d ranks; time = median per call; #wrong: wrong elements (N/A: not checked)\n", nranks);
		printf("#       size        count     type  redop  variant                            time    algbw    busbw  #wrong\n");
		printf("#        (B)   (elements)                                                     (us)   (GB/s)   (GB/s)\n");
	}
	double n = nranks;
	for (int i = from; i < nresults; i++) {
		const result *r = &results[i];
		char w[32];
		if (r->skipped[0]) {
			printf("# %ld %s: skipped: %s\n", r->bytes, r->v->spec, r->skipped);
			continue;
		}
		if (!(r->us.median > 0)) continue;
		double alg = (double)r->bytes / (r->us.median * 1e-6) / 1e9;
		double bus = alg * 2 * (n - 1) / n;
		printf("%12ld %12ld %8s %6s  %-28s %10.2f %8.2f %8.2f %7s\n", r->bytes, r->count, cfg.type, op_names[cfg.op], r->v->spec,
			r->us.median, alg, bus, wrong_cell(r, w, sizeof w));
	}
}

static void print_osu(int from) {
	static int header;
	if (!header) {
		header = 1;
		printf("# Avg, Min and Max Latency over the samples of the pattern (us); Iterations: timed calls\n");
		printf("# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations  Variant\n");
	}
	for (int i = from; i < nresults; i++) {
		const result *r = &results[i];
		if (r->skipped[0]) {
			printf("# %ld %s: skipped: %s\n", r->bytes, r->v->spec, r->skipped);
			continue;
		}
		if (r->iters < 1) continue;
		printf("%-10ld%18.2f%18.2f%18.2f%12d  %s\n", r->bytes, r->us.mean, r->us.min, r->us.max, r->iters, r->v->spec);
	}
}

static void print_rows(int from) {
	static int header;
	if (cfg.format == FMT_NCCL) {
		print_nccl(from);
		fflush(stdout);
		return;
	}
	if (cfg.format == FMT_OSU) {
		print_osu(from);
		fflush(stdout);
		return;
	}
	if (!header) {
		header = 1;
		printf("# ratio = median / the MPI library's (native) median, lower is better; #wrong: wrong elements (N/A: not checked)\n");
		printf(ROWFMT, "size", "variant", "l", "k", "iters", "min_us", "median_us", "mean_us", "p99_us", "iqr_us", "ratio", "#wrong", "");
	}
	for (int i = from; i < nresults; i++) {
		const result *r = &results[i];
		char sz[32], l[16] = "-", k[16] = "-", it[16], a[5][32], ratio[32] = "-", notes[400] = "", w[32];
		format_size(r->bytes, sz, sizeof sz);
		if (r->v->leaders) snprintf(l, sizeof l, "%d", r->v->leaders);
		if (r->v->pipeline) snprintf(k, sizeof k, "%d", r->v->pipeline);
		if (r->has_plan && r->v->tune) snprintf(l, sizeof l, "%d", r->plan.leaders), snprintf(k, sizeof k, "%d", r->plan.pipeline);
		if (r->skipped[0]) {
			char why[420];
			snprintf(why, sizeof why, "skipped: %s", r->skipped);
			printf(ROWFMT, sz, r->v->spec, l, k, "-", "-", "-", "-", "-", "-", "-", "-", why);
			continue;
		}
		snprintf(it, sizeof it, "%d", r->iters);
		fmt_us(r->us.min, a[0], 32), fmt_us(r->us.median, a[1], 32), fmt_us(r->us.mean, a[2], 32);
		fmt_us(r->us.p99, a[3], 32), fmt_us(r->us.p75 - r->us.p25, a[4], 32);
		const result *nat = native_of(r->bytes);
		if (nat && nat->us.median > 0) snprintf(ratio, sizeof ratio, "%.3f", r->us.median / nat->us.median);
		size_t o = 0;
		if (r->mismatches) o += snprintf(notes + o, sizeof notes - o, "CHECK FAILED (%lld elements) ", r->mismatches);
		if (r->has_plan && (r->v->tune || r->plan.passed[0] || r->plan.leaders != r->v->leaders)) {
			o += snprintf(notes + o, sizeof notes - o, "plan %s", r->plan.variant);
			if (strcmp(r->plan.variant, "native")) o += snprintf(notes + o, sizeof notes - o, " l=%d k=%d%s", r->plan.leaders, r->plan.pipeline, r->plan.cma ? "+cma" : "");
			if (r->plan.passed[0]) o += snprintf(notes + o, sizeof notes - o, " (passed: %s)", r->plan.passed);
			o += snprintf(notes + o, sizeof notes - o, " ");
		}
		if (r->has_percall) {
			char x[32], y[32];
			fmt_us(r->percall.min, x, sizeof x), fmt_us(r->percall.median, y, sizeof y);
			o += snprintf(notes + o, sizeof notes - o, "per call min %s median %s", x, y);
		}
		printf(ROWFMT, sz, r->v->spec, l, k, it, a[0], a[1], a[2], a[3], a[4], ratio, wrong_cell(r, w, sizeof w), notes);
	}
	fflush(stdout);
}

// JSON writing.
static void jstr(FILE *f, const char *s) {
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\t': fputs("\\t", f); break;
		case '\r': fputs("\\r", f); break;
		default:
			if (*p < 0x20) fprintf(f, "\\u%04x", *p);
			else fputc(*p, f);
		}
	}
	fputc('"', f);
}

// jnum writes a finite number (JSON has no NaN or Inf: 0, as bench.WriteJSON).
static void jnum(FILE *f, double x) { fprintf(f, "%.17g", isfinite(x) ? x : 0.0); }

static void jsummary(FILE *f, const summary *s) {
	fprintf(f, "{\"n\": %d, \"min\": ", s->n);
	jnum(f, s->min), fputs(", \"max\": ", f), jnum(f, s->max), fputs(", \"mean\": ", f), jnum(f, s->mean);
	fputs(", \"median\": ", f), jnum(f, s->median), fputs(", \"p25\": ", f), jnum(f, s->p25);
	fputs(", \"p75\": ", f), jnum(f, s->p75), fputs(", \"p99\": ", f), jnum(f, s->p99);
	fputs(", \"stddev\": ", f), jnum(f, s->stddev), fputc('}', f);
}

static char *shell_quote(int argc, char **argv) {
	size_t cap = 16;
	for (int i = 0; i < argc; i++) cap += 4 * strlen(argv[i]) + 3;
	char *out = malloc(cap), *o = out;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (i) *o++ = ' ';
		int plain = *a != '\0';
		for (const char *c = a; *c && plain; c++)
			plain = isalnum((unsigned char)*c) || strchr("-_./:=,+@%", *c) != NULL;
		if (plain) {
			o += sprintf(o, "%s", a);
			continue;
		}
		*o++ = '\'';
		for (const char *c = a; *c; c++) {
			if (*c == '\'') o += sprintf(o, "'\\''");
			else *o++ = *c;
		}
		*o++ = '\'';
	}
	*o = '\0';
	return out;
}

static int has_prefix(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static int write_json(const char *path, int argc, char **argv, double elapsed, const char *mpilib) {
	FILE *f = fopen(path, "w");
	if (!f) return -1;
	fputs("{\n  \"meta\": {\n    \"tool\": \"dpmlbench-c\",\n    \"format\": 1,\n    \"command\": [", f);
	for (int i = 0; i < argc; i++) {
		if (i) fputs(", ", f);
		jstr(f, argv[i]);
	}
	fputs("],\n    \"command_line\": ", f);
	char *cl = shell_quote(argc, argv);
	jstr(f, cl);
	free(cl);
	fputs(",\n    \"date\": ", f), jstr(f, date_buf);
	fputs(",\n    \"go_version\": \"\"", f);
	if (DPML_COMMIT[0]) fputs(",\n    \"git_commit\": ", f), jstr(f, DPML_COMMIT);
	fputs(",\n    \"mpi_library\": ", f), jstr(f, mpilib);
	fputs(",\n    \"hosts\": [", f);
	int first = 1;
	for (int r = 0; r < nranks; r++) {
		const char *h = rank_hosts + (size_t)r * HOSTLEN;
		int seen = 0;
		for (int q = 0; q < r; q++) seen |= !strcmp(h, rank_hosts + (size_t)q * HOSTLEN);
		if (seen) continue;
		if (!first) fputs(", ", f);
		first = 0;
		jstr(f, h);
	}
	fputs("],\n    \"rank_hosts\": [", f);
	for (int r = 0; r < nranks; r++) {
		if (r) fputs(", ", f);
		jstr(f, rank_hosts + (size_t)r * HOSTLEN);
	}
	fprintf(f, "],\n    \"nodes\": %d,\n    \"ppn\": %d,\n    \"ppn_max\": %d,\n    \"world_size\": %d,\n", nodes, ppn_min, ppn_max, nranks);
	fprintf(f, "    \"num_cpu\": %d,\n    \"host_cpus\": %ld,\n", num_cpu(), sysconf(_SC_NPROCESSORS_ONLN));
	char machine[256];
	if (machine_name(machine, sizeof machine)) fputs("    \"machine\": ", f), jstr(f, machine), fputs(",\n", f);
	long llc = llc_bytes();
	if (llc) fprintf(f, "    \"llc_bytes\": %ld,\n", llc);
	fputs("    \"type\": ", f), jstr(f, cfg.type);
	fprintf(f, ",\n    \"elem_size\": %d,\n    \"op\": ", cfg.es), jstr(f, op_names[cfg.op]);
	fputs(",\n    \"sizes\": ", f), jstr(f, cfg.sizes_flag);
	fputs(",\n    \"variants\": [", f);
	for (int i = 0; i < nvars; i++) {
		if (i) fputs(", ", f);
		jstr(f, vars[i].spec);
	}
	fputs("]", f);
	// The fixed l and k values run, ascending, without duplicates.
	for (int which = 0; which < 2; which++) {
		int vals[64], nv = 0;
		for (int i = 0; i < nvars; i++) {
			int x = which ? vars[i].pipeline : vars[i].leaders;
			if (strcmp(vars[i].kind, "dpml") || x == 0 || vars[i].skip[0]) continue;
			int dup = 0;
			for (int q = 0; q < nv; q++) dup |= vals[q] == x;
			if (!dup && nv < 64) vals[nv++] = x;
		}
		if (nv == 0) continue;
		for (int a = 1; a < nv; a++)
			for (int b = a; b > 0 && vals[b - 1] > vals[b]; b--) { int t = vals[b]; vals[b] = vals[b - 1]; vals[b - 1] = t; }
		fprintf(f, ",\n    \"%s\": [", which ? "pipelines" : "leaders");
		for (int q = 0; q < nv; q++) fprintf(f, "%s%d", q ? ", " : "", vals[q]);
		fputs("]", f);
	}
	fputs(",\n    \"target_s\": ", f), jnum(f, cfg.iters > 0 ? 0 : cfg.time_s);
	fprintf(f, ",\n    \"min_iters\": %d,\n    \"max_iters\": %d,\n    \"warmup\": %d,\n    \"rotate\": false,\n    \"check\": %s",
		cfg.iters > 0 ? cfg.iters : cfg.min_iters, cfg.iters > 0 ? cfg.iters : cfg.max_iters, cfg.warmup, cfg.check ? "true" : "false");
	fputs(",\n    \"env\": {", f);
	first = 1;
	for (char **e = environ; *e; e++) {
		if (!has_prefix(*e, "DPML_") && !has_prefix(*e, "OMPI_MCA_") && !has_prefix(*e, "MPICH_") && !has_prefix(*e, "UCX_") &&
		    !has_prefix(*e, "LD_PRELOAD="))
			continue;
		const char *eq = strchr(*e, '=');
		if (!eq) continue;
		char key[256];
		snprintf(key, sizeof key, "%.*s", (int)(eq - *e), *e);
		fputs(first ? "\n      " : ",\n      ", f);
		first = 0;
		jstr(f, key), fputs(": ", f), jstr(f, eq + 1);
	}
	fputs(first ? "}" : "\n    }", f);
	fputs(",\n    \"elapsed_s\": ", f), jnum(f, elapsed);
	fputs(",\n    \"client\": \"c\",\n    \"pattern\": ", f), jstr(f, pattern_names[cfg.pattern]);
	if (cfg.pattern == PAT_SKEW) fputs(",\n    \"skew_us\": ", f), jnum(f, cfg.skew_us);
	if (cfg.pattern != PAT_B2B) fprintf(f, ",\n    \"run\": %d", cfg.run);
	if (cfg.pattern == PAT_SKEW) fprintf(f, ",\n    \"seed\": %llu", (unsigned long long)cfg.seed);
	if (cfg.pattern == PAT_B2B) fprintf(f, ",\n    \"batches\": %d,\n    \"per_call\": %s", cfg.batches, cfg.percall ? "true" : "false");
	if (dpml_library[0]) fputs(",\n    \"dpml_library\": ", f), jstr(f, dpml_library);
	if (offload_desc[0]) fputs(",\n    \"offload\": ", f), jstr(f, offload_desc);
	fputs("\n  },\n  \"results\": [", f);
	for (int i = 0; i < nresults; i++) {
		const result *r = &results[i];
		fputs(i ? ",\n    {" : "\n    {", f);
		fprintf(f, "\"bytes\": %ld, \"count\": %ld, \"variant\": \"%s\", \"leaders\": %d, \"pipeline\": %d, \"warmup\": %d, \"iters\": %d, \"us\": ",
			r->bytes, r->count, r->v->kind, r->v->leaders, r->v->pipeline, r->warmup, r->iters);
		jsummary(f, &r->us);
		if (r->check[0]) {
			fputs(", \"check\": ", f), jstr(f, r->check);
			if (r->mismatches) fprintf(f, ", \"mismatches\": %lld", r->mismatches);
			if (r->mismatch_at[0]) fputs(", \"mismatch_at\": ", f), jstr(f, r->mismatch_at);
		}
		if (r->skipped[0]) fputs(", \"skipped\": ", f), jstr(f, r->skipped);
		if (r->has_plan) {
			fputs(", \"plan\": {\"variant\": ", f), jstr(f, r->plan.variant);
			fprintf(f, ", \"leaders\": %d, \"pipeline\": %d, \"segments\": %d", r->plan.leaders, r->plan.pipeline, r->plan.segments);
			if (r->plan.cma) fputs(", \"cma\": true", f);
			if (r->plan.stream) fputs(", \"stream\": true", f);
			if (r->plan.intra[0]) fputs(", \"intra\": ", f), jstr(f, r->plan.intra);
			if (r->plan.radix > 0) fprintf(f, ", \"radix\": %d", r->plan.radix);
			if (r->plan.tuner[0]) fputs(", \"tuner\": ", f), jstr(f, r->plan.tuner);
			if (r->plan.switches >= 0) fprintf(f, ", \"switches\": %lld, \"changes\": %lld", r->plan.switches, r->plan.changes);
			if (r->plan.offload[0]) fputs(", \"offload\": ", f), jstr(f, r->plan.offload);
			if (r->plan.passed[0]) fputs(", \"passed\": ", f), jstr(f, r->plan.passed);
			fputc('}', f);
		}
		if (r->samples) {
			fputs(", \"samples_us\": [", f);
			for (int j = 0; j < r->us.n; j++) {
				if (j) fputs(", ", f);
				jnum(f, r->samples[j]);
			}
			fputc(']', f);
		}
		fputs(", \"spec\": ", f), jstr(f, r->v->spec);
		if (r->batches) fprintf(f, ", \"batches\": %d", r->batches);
		if (r->has_percall) fputs(", \"per_call_us\": ", f), jsummary(f, &r->percall);
		fputc('}', f);
	}
	fputs(nresults ? "\n  ]\n}\n" : "]\n}\n", f);
	return fclose(f);
}

// CSV, with internal/tools/results.WriteCSV's columns and number format (%.6g is
// strconv's 'g' with precision 6).
static void csv_num(FILE *f, double x) {
	if (isfinite(x)) fprintf(f, "%.6g", x);
}

static void csv_str(FILE *f, const char *s) {
	if (strpbrk(s, ",\"\n\r") == NULL && s[0] != ' ') {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"') fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static int write_csv(const char *path) {
	FILE *f = fopen(path, "w");
	if (!f) return -1;
	fputs("bytes,size,count,type,op,nodes,ppn,variant,label,leaders,pipeline,warmup,iters,min_us,median_us,mean_us,p25_us,p75_us,iqr_us,"
	      "p99_us,max_us,stddev_us,ratio_vs_native,check,mismatches,skipped,plan_variant,plan_leaders,plan_pipeline,"
	      "plan_segments,plan_cma,plan_stream,membw_floor_us,client,pattern,spec,batches,call_min_us,call_median_us\n", f);
	for (int i = 0; i < nresults; i++) {
		const result *r = &results[i];
		char sz[32];
		fprintf(f, "%ld,%s,%ld,%s,%s,%d,%d,%s,", r->bytes, format_size(r->bytes, sz, sizeof sz), r->count, cfg.type, op_names[cfg.op],
			nodes, ppn_min, r->v->kind);
		csv_str(f, r->v->spec);
		fprintf(f, ",%d,%d,%d,%d,", r->v->leaders, r->v->pipeline, r->warmup, r->iters);
		if (!r->skipped[0] && r->iters > 0) {
			const summary *s = &r->us;
			double v[] = {s->min, s->median, s->mean, s->p25, s->p75, s->p75 - s->p25, s->p99, s->max, s->stddev};
			for (int k = 0; k < 9; k++) csv_num(f, v[k]), fputc(',', f);
			const result *nat = native_of(r->bytes);
			if (nat && nat->us.median > 0) csv_num(f, s->median / nat->us.median);
			fputc(',', f);
		} else {
			fputs(",,,,,,,,,,", f);
		}
		fprintf(f, "%s,%lld,", r->check, r->mismatches);
		csv_str(f, r->skipped);
		fputc(',', f);
		if (r->has_plan)
			fprintf(f, "%s,%d,%d,%d,%s,%s,", r->plan.variant, r->plan.leaders, r->plan.pipeline, r->plan.segments,
				r->plan.cma ? "true" : "false", r->plan.stream ? "true" : "false");
		else
			fputs(",,,,,,", f);
		fprintf(f, ",c,%s,", pattern_names[cfg.pattern]); // no membw floor
		csv_str(f, r->v->spec);
		fputc(',', f);
		if (r->batches) fprintf(f, "%d", r->batches);
		fputc(',', f);
		if (r->has_percall) csv_num(f, r->percall.min);
		fputc(',', f);
		if (r->has_percall) csv_num(f, r->percall.median);
		fputc('\n', f);
	}
	return fclose(f);
}

static int mkdir_p(const char *dir) {
	char buf[4096];
	snprintf(buf, sizeof buf, "%s", dir);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/') continue;
		*p = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
		*p = '/';
	}
	return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

// ---------------------------------------------------------------------------
// Flags.

static void usage(FILE *f) {
	fprintf(f,
		"usage: mpirun -np N [-x LD_PRELOAD=.../libdpml.so] dpmlbench-c [flags]\n\n"
		"Times MPI_Allreduce as applications call it, for the MPI library and libdpml.so's plans in one run.\n\n"
		"flags:\n"
		"  -sizes LIST        message sizes per rank in bytes: 4,1K,64K and/or ranges FROM:TO[:xF|:+S] (default 4:64M:x4)\n"
		"  -type T            float, double or int (also float32, float64, int32; default float)\n"
		"  -op OP             sum, max or min (default sum)\n"
		"  -variants LIST     plan specs: native (PMPI_Allreduce, the MPI library) and with libdpml.so auto, dpml:l=2,\n"
		"                     pipelined:l=8,k=4, ...,intra=shm|cma, ...,seg=64K; l=max is the smallest ppn (default native,auto)\n"
		"  -pattern P         b2b (back to back, batches), barrier (a barrier before each call), skew, or cold and\n"
		"                     cold-barrier: each size's first -calls calls of each variant timed, with no untimed call\n"
		"                     before them (back to back, or a barrier before each) (default b2b)\n"
		"  -calls N           cold patterns: timed calls per (size, variant) (default 100)\n"
		"  -fresh             cold patterns: a new communicator (MPI_Comm_dup) for each (size, variant)\n"
		"  -pattern churn     -comms communicators per variant, each duplicated, used -uses times (communicator\n"
		"                     i: LO + 37i mod (HI-LO+1) calls, its size from -sizes in turn) and freed; total time per\n"
		"                     variant; with -check also each result and this process's descriptors, mappings and RSS\n"
		"  -comms N           churn: communicators per variant (default 1000)\n"
		"  -uses LO:HI        churn: calls per communicator, from LO to HI (default 1:100)\n"
		"  -churn-comm C      churn: dup (MPI_Comm_dup of MPI_COMM_WORLD) or reversed (MPI_Comm_split of it, one\n"
		"                     colour, the ranks in reverse order: the same size, another rank order) (default dup)\n"
		"  -skew US           skew: each rank's busy compute before a call is uniform in 0..US microseconds (default 20)\n"
		"  -seed N            skew: seed of the delays (default 1)\n"
		"  -time D            timed duration wanted per (size, variant): 100ms, 0.5s, ... (default 100ms)\n"
		"  -iters N           timed calls per (size, variant), instead of -time (default 0: from -time)\n"
		"  -min-iters N       at least N timed calls per point (default 10)\n"
		"  -max-iters N       at most N timed calls per point (default 1000)\n"
		"  -batches N         b2b: the timed calls of a point run in N batches, each a sample (default 10)\n"
		"  -percall=false     b2b: do not time each call of a batch (one MPI_Wtime per call)\n"
		"  -run N             barrier, skew: consecutive calls of a variant per round, as a program runs one plan (default 100; 1: switch plans every call)\n"
		"  -warmup N          warm-up calls per point, barrier before each (default 3)\n"
		"  -tune-calls N      untimed calls of auto before its warm-up, so the engine's tuner settles (default 100)\n"
		"  -check             verify results against an independent oracle (see README.md)\n"
		"  -samples           store every sample in results.json\n"
		"  -format F          how rows are printed as sizes finish: table (min, median, mean, p99, IQR, ratio to the\n"
		"                     MPI library, #wrong), nccl (nccl-tests' columns: size, count, type, redop, time, algbw,\n"
		"                     busbw, #wrong) or osu (OSU's: size, avg, min, max latency, iterations) (default table)\n"
		"  -out DIR           write results.json and results.csv into DIR; none: write nothing\n"
		"                     (default bench/results/local-<UTC time>/c-<pattern>, as dpmlbench's go-<pattern>)\n"
		"  -progress          show the progress line even when stderr is not a terminal\n"
		"  -quiet             print only the closing table\n");
}

// parse_flags parses argv like Go's flag package: -name value, -name=value,
// --name; booleans take no value or =true/=false. Returns 1 for -h.
static int parse_flags(int argc, char **argv) {
	for (int i = 1; i < argc; i++) {
		char *a = argv[i];
		if (a[0] != '-' || a[1] == '\0') return usagef("unexpected argument %s (see -h)", a);
		const char *name = a + (a[1] == '-' ? 2 : 1);
		char nbuf[64];
		const char *val = NULL;
		const char *eq = strchr(name, '=');
		if (eq) {
			snprintf(nbuf, sizeof nbuf, "%.*s", (int)(eq - name), name);
			name = nbuf, val = eq + 1;
		}
		if (!strcmp(name, "h") || !strcmp(name, "help")) return 1;
		int *bflag = !strcmp(name, "check") ? &cfg.check : !strcmp(name, "progress") ? &cfg.progress
			   : !strcmp(name, "quiet") ? &cfg.quiet : !strcmp(name, "samples") ? &cfg.samples
			   : !strcmp(name, "percall") ? &cfg.percall : !strcmp(name, "fresh") ? &cfg.fresh : NULL;
		if (bflag) {
			if (val == NULL || !strcmp(val, "true") || !strcmp(val, "1")) *bflag = 1;
			else if (!strcmp(val, "false") || !strcmp(val, "0")) *bflag = 0;
			else return usagef("-%s=%s: want true or false", name, val);
			continue;
		}
		static const char *const known[] = {"sizes", "type", "op", "variants", "pattern", "skew", "seed", "time", "iters",
			"min-iters", "max-iters", "batches", "run", "warmup", "tune-calls", "calls", "comms", "uses", "churn-comm", "out", "format", NULL};
		int ok = 0;
		for (int k = 0; known[k]; k++) ok |= !strcmp(name, known[k]);
		if (!ok) return usagef("flag provided but not defined: -%s (see -h)", name);
		if (val == NULL) {
			if (i + 1 >= argc) return usagef("flag needs an argument: -%s", name);
			val = argv[++i];
		}
		int rc = 0;
		if (!strcmp(name, "sizes")) cfg.sizes_flag = val;
		else if (!strcmp(name, "variants")) cfg.variants_flag = val;
		else if (!strcmp(name, "out")) cfg.out = !strcmp(val, "none") ? "" : val;
		else if (!strcmp(name, "type")) {
			if (!strcmp(val, "float") || !strcmp(val, "float32")) cfg.type = "float32";
			else if (!strcmp(val, "double") || !strcmp(val, "float64")) cfg.type = "float64";
			else if (!strcmp(val, "int") || !strcmp(val, "int32")) cfg.type = "int32";
			else rc = usagef("-type %s: want float, double or int", val);
		} else if (!strcmp(name, "op")) {
			int o = -1;
			for (int k = 0; k < 3; k++)
				if (!strcasecmp(val, op_names[k])) o = k;
			if (o < 0) rc = usagef("-op %s: want sum, max or min", val);
			else cfg.op = o;
		} else if (!strcmp(name, "pattern")) {
			int p = -1;
			for (int k = 0; k < NPATTERNS; k++)
				if (!strcasecmp(val, pattern_names[k])) p = k;
			if (p < 0) rc = usagef("-pattern %s: want b2b, barrier, skew, cold, cold-barrier or churn", val);
			else cfg.pattern = p;
		} else if (!strcmp(name, "format")) {
			int fm = -1;
			for (int k = 0; k < 3; k++)
				if (!strcasecmp(val, format_names[k])) fm = k;
			if (fm < 0) rc = usagef("-format %s: want table, nccl or osu", val);
			else cfg.format = fm;
		} else if (!strcmp(name, "skew")) {
			char *end;
			double v = strtod(val, &end);
			if (end == val || *end || !(v >= 0) || v > 1e7) rc = usagef("-skew %s: want microseconds >= 0", val);
			else cfg.skew_us = v;
		} else if (!strcmp(name, "seed")) {
			char *end;
			errno = 0;
			unsigned long long v = strtoull(val, &end, 10);
			if (end == val || *end || errno || val[0] == '-') rc = usagef("-seed %s: want a non-negative integer", val);
			else cfg.seed = v;
		} else if (!strcmp(name, "time")) {
			if (parse_duration(val, &cfg.time_s) != 0) rc = usagef("-time %s: want a duration such as 100ms or 0.5s", val);
		} else if (!strcmp(name, "iters")) rc = parse_int(name, val, 0, &cfg.iters);
		else if (!strcmp(name, "min-iters")) rc = parse_int(name, val, 1, &cfg.min_iters);
		else if (!strcmp(name, "max-iters")) rc = parse_int(name, val, 1, &cfg.max_iters);
		else if (!strcmp(name, "batches")) rc = parse_int(name, val, 1, &cfg.batches);
		else if (!strcmp(name, "run")) rc = parse_int(name, val, 1, &cfg.run);
		else if (!strcmp(name, "warmup")) rc = parse_int(name, val, 1, &cfg.warmup);
		else if (!strcmp(name, "tune-calls")) rc = parse_int(name, val, 0, &cfg.tune_calls);
		else if (!strcmp(name, "calls")) rc = parse_int(name, val, 1, &cfg.calls);
		else if (!strcmp(name, "comms")) rc = parse_int(name, val, 1, &cfg.comms);
		else if (!strcmp(name, "uses")) {
			char *colon = strchr(val, ':');
			if (colon == NULL) rc = usagef("-uses %s: want LO:HI", val);
			else {
				*colon = 0;
				rc = parse_int(name, val, 1, &cfg.uses_lo);
				if (rc == 0) rc = parse_int(name, colon + 1, cfg.uses_lo, &cfg.uses_hi);
				*colon = ':';
			}
		}
		else if (!strcmp(name, "churn-comm")) {
			if (!strcmp(val, "dup")) cfg.reversed = 0;
			else if (!strcmp(val, "reversed")) cfg.reversed = 1;
			else rc = usagef("-churn-comm %s: want dup or reversed", val);
		}
		if (rc) return rc;
	}
	if (cfg.max_iters < cfg.min_iters) return usagef("-max-iters %d < -min-iters %d", cfg.max_iters, cfg.min_iters);
	return parse_sizes(cfg.sizes_flag);
}

// ---------------------------------------------------------------------------

// alloc_buffers allocates the send and receive buffers for the largest
// size, fills the inputs and touches the receive pages (poisoned), so
// that no timed call pays a first-touch page fault.
static void alloc_buffers(void) {
	long maxcount = 0;
	for (int i = 0; i < cfg.nsizes; i++) {
		long c = (cfg.sizes[i] + cfg.es - 1) / cfg.es;
		if (c > maxcount) maxcount = c;
	}
	if (maxcount > 0x7fffffffL) die("size %ld bytes: more than 2^31-1 elements", cfg.sizes[cfg.nsizes - 1]);
	sendbuf = xmalloc((size_t)maxcount * (size_t)cfg.es);
	recvbuf = xmalloc((size_t)maxcount * (size_t)cfg.es);
	fill_inputs(sendbuf, maxcount);
	poison(recvbuf, maxcount);
}

// ---------------------------------------------------------------------------
// Cold patterns: what a program's first calls of a size cost. No call of a
// variant comes before its timed ones (no warm-up, no tuning calls, no
// DPMLX_Set_plan on the communicator before "auto" runs), so libdpml.so's
// setup and its learner's first decisions are inside the times. The
// variants of a size take turns going first (native first at even size
// indices). cold: back to back, one barrier before the variant's calls;
// the time to the end of call k is the largest over ranks, and the means
// are those ends over k. cold-barrier: a barrier before every call, each
// call's time the largest over ranks.

static int run_cold(int argc, char **argv, const char *mpilib, double start) {
	int barrier = cfg.pattern == PAT_COLD_BARRIER, n = cfg.calls;
	double *loc = xmalloc(sizeof(double) * (size_t)n), *mx = xmalloc(sizeof(double) * (size_t)n);
	alloc_buffers();
	FILE *csv = NULL;
	if (rank == 0 && cfg.out[0]) {
		char pc[4096];
		snprintf(pc, sizeof pc, "%s/cold.csv", cfg.out);
		if (mkdir_p(cfg.out) != 0 || (csv = fopen(pc, "w")) == NULL) die("cold: open %s: %s", pc, strerror(errno));
		fputs("bytes,count,type,op,variant,pattern,calls,fresh,first_us,mean10_us,mean_us,median_us,plan,wrong\n", csv);
	}
	if (rank == 0) {
		char *cl = shell_quote(argc, argv);
		printf("# %s\n# %s  %d node(s) x %d ranks (%d ranks), pattern %s, %d timed calls per size and variant, no untimed call%s\n", cl,
			date_buf, nodes, ppn_min, nranks, pattern_names[cfg.pattern], n, cfg.fresh ? ", a new communicator each" : "");
		printf("# type %s, op %s, check %s, commit %s\n# MPI: %s\n", cfg.type, op_names[cfg.op], cfg.check ? "true" : "false",
			DPML_COMMIT[0] ? DPML_COMMIT : "-", mpilib);
		printf("# libdpml: %s\n", dpml_library[0] ? dpml_library : "not loaded");
		printf("# times in us, max over ranks; ratio = variant / native (lower is better)\n");
		printf("%12s %10s %-10s %10s %10s %10s %10s %7s %7s %7s %6s  %s\n", "bytes", "count", "variant", "first", "mean10", "mean",
			"median", "r.first", "r.10", "r.mean", "#wrong", "plan");
	}
	long long wrong_total = 0;
	long prev = -1;
	for (int s = 0; s < cfg.nsizes; s++) {
		long count = (cfg.sizes[s] + cfg.es - 1) / cfg.es;
		if (count < 1) count = 1;
		if (count == prev) continue;
		prev = count;
		// This size's rows, printed once every variant has run.
		double row[nvars][4];
		char plan[nvars][DPMLX_MAX_SPEC];
		long long wrong[nvars];
		int ran[nvars], nat = -1;
		memset(ran, 0, sizeof ran);
		for (int t = 0; t < nvars; t++) {
			int vi = (s % 2 == 0) ? t : nvars - 1 - t;
			variant *v = &vars[vi];
			if (v->skip[0]) continue;
			MPI_Comm comm = bcomm;
			if (cfg.fresh) MPI_Comm_dup(MPI_COMM_WORLD, &comm);
			if (!v->native && strcmp(v->spec, "auto") != 0 && x_set && x_set(comm, v->spec) != MPI_SUCCESS)
				die("DPMLX_Set_plan(%s) failed", v->spec);
			PMPI_Barrier(MPI_COMM_WORLD);
			double t0 = now();
			for (int j = 0; j < n; j++) {
				if (barrier) PMPI_Barrier(MPI_COMM_WORLD), t0 = now();
				if (v->native) PMPI_Allreduce(sendbuf, recvbuf, (int)count, cfg.dt, cfg.mop, comm);
				else MPI_Allreduce(sendbuf, recvbuf, (int)count, cfg.dt, cfg.mop, comm);
				loc[j] = now() - t0; // barrier: this call; back to back: since the first call's start
			}
			long long w = 0;
			if (cfg.check) {
				char where[256] = "";
				w = verify(recvbuf, count, where, sizeof where, v->spec);
			}
			PMPI_Allreduce(loc, mx, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
			long long wsum = 0;
			PMPI_Allreduce(&w, &wsum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
			char pl[DPMLX_MAX_SPEC] = "-";
			if (!v->native && x_last && x_last(comm, pl, sizeof pl) != MPI_SUCCESS) snprintf(pl, sizeof pl, "?");
			if (v->native) snprintf(pl, sizeof pl, "native");
			if (cfg.fresh) MPI_Comm_free(&comm);
			if (rank != 0) continue;
			double first, m10, mean, per[n > 0 ? n : 1];
			int k10 = n < 10 ? n : 10;
			if (barrier) {
				double a = 0, b = 0;
				for (int j = 0; j < n; j++) b += mx[j], a += j < k10 ? mx[j] : 0, per[j] = mx[j];
				first = mx[0], m10 = a / k10, mean = b / n;
			} else {
				first = mx[0], m10 = mx[k10 - 1] / k10, mean = mx[n - 1] / n;
				for (int j = 0; j < n; j++) per[j] = mx[j] - (j ? mx[j - 1] : 0);
			}
			qsort(per, (size_t)n, sizeof(double), cmp_double);
			double med = n % 2 ? per[n / 2] : (per[n / 2 - 1] + per[n / 2]) / 2;
			if (v->native) nat = vi;
			row[vi][0] = first, row[vi][1] = m10, row[vi][2] = mean, row[vi][3] = med;
			snprintf(plan[vi], sizeof plan[vi], "%s", pl);
			wrong[vi] = wsum, ran[vi] = 1;
			wrong_total += wsum;
			if (csv) {
				fprintf(csv, "%ld,%ld,%s,%s,", count * cfg.es, count, cfg.type, op_names[cfg.op]);
				csv_str(csv, v->spec); // a plan spec's parameters are separated by commas
				fprintf(csv, ",%s,%d,%d,%.4f,%.4f,%.4f,%.4f,", pattern_names[cfg.pattern], n, cfg.fresh, first * 1e6, m10 * 1e6,
					mean * 1e6, med * 1e6);
				csv_str(csv, pl);
				fprintf(csv, ",%lld\n", wsum);
			}
		}
		for (int vi = 0; rank == 0 && vi < nvars; vi++) {
			if (!ran[vi]) continue;
			double *r = row[vi];
			printf("%12ld %10ld %-10.10s %10.2f %10.2f %10.2f %10.2f", count * cfg.es, count, vars[vi].spec, r[0] * 1e6, r[1] * 1e6,
				r[2] * 1e6, r[3] * 1e6);
			if (vi != nat && nat >= 0) printf(" %7.3f %7.3f %7.3f", r[0] / row[nat][0], r[1] / row[nat][1], r[2] / row[nat][2]);
			else printf(" %7s %7s %7s", "-", "-", "-");
			printf(" %6lld  %s\n", wrong[vi], plan[vi]);
		}
		if (rank == 0) fflush(stdout);
	}
	int status = 0;
	if (rank == 0) {
		printf("\n%d sizes in %.1f s\n", cfg.nsizes, MPI_Wtime() - start);
		if (csv) {
			fclose(csv);
			printf("wrote %s/cold.csv\n", cfg.out);
		}
		if (wrong_total) {
			fprintf(stderr, "dpmlbench-c: -check: %lld wrong elements\n", wrong_total);
			status = 1;
		}
	}
	PMPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
	free(loc), free(mx), free(sendbuf), free(recvbuf);
	return status;
}

// ---------------------------------------------------------------------------
// Churn: communicators made, used a few times and freed, as programs that
// split or duplicate per phase do. Per variant the total time of -comms
// communicators (max over ranks); with -check every communicator's last
// result is verified, and the process's open descriptors, mappings and
// resident memory are compared between the end of the first tenth of the
// communicators and the end: a library that keeps something per freed
// communicator shows there.

static long count_lines(const char *path) {
	FILE *f = fopen(path, "r");
	if (f == NULL) return -1;
	long n = 0;
	int c;
	while ((c = fgetc(f)) != EOF) n += c == '\n';
	fclose(f);
	return n;
}

static long count_fds(void) {
	long n = 0;
	DIR *d = opendir("/proc/self/fd");
	if (d == NULL) return -1;
	while (readdir(d) != NULL) n++;
	closedir(d);
	return n;
}

static long rss_kib(void) {
	FILE *f = fopen("/proc/self/status", "r");
	if (f == NULL) return -1;
	char line[256];
	long v = -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmRSS: %ld", &v) == 1) break;
	fclose(f);
	return v;
}

static int run_churn(int argc, char **argv, const char *mpilib, double start) {
	alloc_buffers();
	if (rank == 0) {
		char *cl = shell_quote(argc, argv);
		printf("# %s\n# %s  %d node(s) x %d ranks (%d ranks), pattern churn: %d communicators per variant, each %s, used %d-%d times and freed\n",
			cl, date_buf, nodes, ppn_min, nranks, cfg.comms, cfg.reversed ? "split with the ranks reversed" : "duplicated", cfg.uses_lo, cfg.uses_hi);
		free(cl);
		printf("# type %s, op %s, check %s, commit %s\n# MPI: %s\n# libdpml: %s\n", cfg.type, op_names[cfg.op], cfg.check ? "true" : "false",
			DPML_COMMIT[0] ? DPML_COMMIT : "-", mpilib, dpml_library[0] ? dpml_library : "not loaded");
	}
	double total[2] = {0, 0};
	int status = 0;
	for (int v = 0; v < nvars && v < 2; v++) {
		variant *var = &vars[v];
		long long wrong = 0, calls = 0;
		long res[2][3] = {{0}}; // fds, maps, rss at the first tenth and at the end
		PMPI_Barrier(MPI_COMM_WORLD);
		double t0 = now();
		for (int i = 0; i < cfg.comms; i++) {
			MPI_Comm c;
			if (cfg.reversed) MPI_Comm_split(MPI_COMM_WORLD, 0, nranks - rank, &c);
			else MPI_Comm_dup(MPI_COMM_WORLD, &c);
			long count = (cfg.sizes[i % cfg.nsizes] + cfg.es - 1) / cfg.es;
			if (count < 1) count = 1;
			int uses = cfg.uses_lo + (int)((37L * i) % (cfg.uses_hi - cfg.uses_lo + 1));
			for (int j = 0; j < uses; j++) {
				if (var->native) PMPI_Allreduce(sendbuf, recvbuf, (int)count, cfg.dt, cfg.mop, c);
				else MPI_Allreduce(sendbuf, recvbuf, (int)count, cfg.dt, cfg.mop, c);
			}
			calls += uses;
			if (cfg.check) {
				char where[256] = "";
				wrong += verify(recvbuf, count, where, sizeof where, var->spec);
				poison(recvbuf, count);
			}
			MPI_Comm_free(&c);
			if (cfg.check && (i + 1 == cfg.comms / 10 || i + 1 == cfg.comms)) {
				int k = i + 1 == cfg.comms;
				res[k][0] = count_fds(), res[k][1] = count_lines("/proc/self/maps"), res[k][2] = rss_kib();
			}
		}
		double t = now() - t0, tmax = 0;
		PMPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
		long long wsum = 0;
		PMPI_Allreduce(&wrong, &wsum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
		long grow[3] = {res[1][0] - res[0][0], res[1][1] - res[0][1], res[1][2] - res[0][2]}, gmax[3] = {0, 0, 0};
		PMPI_Allreduce(grow, gmax, 3, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
		total[v] = tmax;
		if (wsum) status = 1;
		if (rank == 0) {
			printf("%-10s %8d comms %10lld calls %12.3f ms total %10.2f us per comm", var->spec, cfg.comms, calls, tmax * 1e3, tmax / cfg.comms * 1e6);
			if (v > 0 && total[0] > 0) printf("  ratio %.3f", tmax / total[0]);
			printf("  #wrong %lld\n", wsum);
			if (cfg.check)
				printf("resources %s: after the first tenth to the end, largest growth over ranks: fds %+ld, mappings %+ld, rss %+ld KiB\n",
					var->spec, gmax[0], gmax[1], gmax[2]);
		}
	}
	if (rank == 0) printf("\nchurn in %.1f s\n", MPI_Wtime() - start);
	if (rank == 0 && status) fprintf(stderr, "dpmlbench-c: -check: wrong results\n");
	PMPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
	free(sendbuf), free(recvbuf);
	return status;
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	double start = MPI_Wtime();
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	format_date();

	x_check = (DPMLX_Check_plan_fn)dlsym(RTLD_DEFAULT, "DPMLX_Check_plan");
	x_set = (DPMLX_Set_plan_fn)dlsym(RTLD_DEFAULT, "DPMLX_Set_plan");
	x_last = (DPMLX_Last_plan_fn)dlsym(RTLD_DEFAULT, "DPMLX_Last_plan");
	x_version = (DPMLX_Library_version_fn)dlsym(RTLD_DEFAULT, "DPMLX_Library_version");
	// Every rank must have the library for its plans to run.
	int have = x_check && x_set && x_last && x_version, all = 0;
	PMPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (!all) x_check = NULL, x_set = NULL, x_last = NULL, x_version = NULL;
	if (x_set) {
		Dl_info info;
		const char *path = dladdr((void *)x_set, &info) && info.dli_fname ? info.dli_fname : "libdpml.so";
		snprintf(dpml_library, sizeof dpml_library, "%s (%s)", path, x_version());
	} else {
		// Is MPI_Allreduce defined elsewhere than PMPI_Allreduce (the
		// MPI library)? Then an interposer without the extension serves
		// the program's calls. All ranks must see one.
		void *ma = dlsym(RTLD_DEFAULT, "MPI_Allreduce"), *pa = dlsym(RTLD_DEFAULT, "PMPI_Allreduce");
		Dl_info ia, ib;
		int other = ma && pa && dladdr(ma, &ia) && dladdr(pa, &ib) && ia.dli_fname && ib.dli_fname && strcmp(ia.dli_fname, ib.dli_fname) != 0;
		int every = 0;
		PMPI_Allreduce(&other, &every, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
		if (every) {
			snprintf(interposer, sizeof interposer, "%s", ia.dli_fname);
			snprintf(dpml_library, sizeof dpml_library, "%s (no DPMLX entry points)", interposer);
		}
	}
	gather_layout();
	describe_offload();

	int rc = parse_flags(argc, argv);
	if (cfg.out == NULL) {
		size_t n = strlen(default_out);
		snprintf(default_out + n, sizeof default_out - n, "%s", pattern_names[cfg.pattern]);
		cfg.out = default_out;
	}
	if (rc == 0) {
		cfg.dt = !strcmp(cfg.type, "float32") ? MPI_FLOAT : !strcmp(cfg.type, "float64") ? MPI_DOUBLE : MPI_INT;
		cfg.es = cfg.dt == MPI_DOUBLE ? 8 : 4;
		cfg.mop = cfg.op == OP_SUM ? MPI_SUM : cfg.op == OP_MAX ? MPI_MAX : MPI_MIN;
		rc = parse_variants(ppn_min);
	}
	if (rc == 0 && cfg.check && cfg.dt == MPI_FLOAT && nranks > 3000)
		rc = usagef("-check with -type float: sums are exact up to 3000 ranks only; use -type double or int");
	// Agree: a rank that saw a bad flag must not leave the others waiting.
	int bad = rc < 0, anybad = 0;
	PMPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (anybad || rc == 1) {
		if (rank == 0 && anybad) fprintf(stderr, "dpmlbench-c: %s\n", usage_err[0] ? usage_err : "bad flags on another rank");
		else if (rank == 0) usage(stdout);
		MPI_Finalize();
		return anybad ? 2 : 0;
	}

	char mpilib[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
	int ml = 0;
	MPI_Get_library_version(mpilib, &ml);
	mpilib[strcspn(mpilib, "\n")] = '\0';
	progress_on = rank == 0 && (cfg.progress || isatty(2));
	rng_state = cfg.seed * 0x9E3779B97F4A7C15ULL ^ (uint64_t)(rank + 1) * 0xD1B54A32D192ED03ULL;

	MPI_Comm_dup(MPI_COMM_WORLD, &bcomm);
	if (cfg.pattern == PAT_CHURN) {
		int st = run_churn(argc, argv, mpilib, start);
		MPI_Comm_free(&bcomm);
		MPI_Finalize();
		return st;
	}
	if (cfg.pattern == PAT_COLD || cfg.pattern == PAT_COLD_BARRIER) {
		int st = run_cold(argc, argv, mpilib, start);
		MPI_Comm_free(&bcomm);
		MPI_Finalize();
		return st;
	}
	// Can each plan be set here? Not when the library is disabled
	// (DPML_DISABLE), or on one rank (a singleton): skip those plans with
	// libdpml.so's reason instead of aborting in the timed loop.
	for (int i = 0; x_set && i < nvars; i++) {
		if (vars[i].native || vars[i].skip[0]) continue;
		int prc = x_set(bcomm, vars[i].spec), failed = prc != MPI_SUCCESS, anyfail = 0;
		PMPI_Allreduce(&failed, &anyfail, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
		if (!anyfail) continue;
		char msg[MPI_MAX_ERROR_STRING] = "failed on another rank";
		int ml = 0;
		if (failed) MPI_Error_string(prc, msg, &ml);
		snprintf(vars[i].skip, sizeof vars[i].skip, "DPMLX_Set_plan(%.100s): %.120s", vars[i].spec, msg);
	}
	if (x_set) x_set(bcomm, "auto");
	alloc_buffers();

	if (rank == 0 && !cfg.quiet) {
		char *cl = shell_quote(argc, argv);
		printf("# %s\n", cl);
		free(cl);
		printf("# %s  %d node(s) x %d ranks (%d ranks), pattern %s", date_buf, nodes, ppn_min, nranks, pattern_names[cfg.pattern]);
		if (cfg.pattern == PAT_SKEW) printf(" (0..%g us busy compute before each call, seed %llu)", cfg.skew_us, (unsigned long long)cfg.seed);
		if (cfg.pattern != PAT_B2B) printf(" (%d calls of a variant per round)", cfg.run);
		if (cfg.pattern == PAT_B2B) printf(" (%d batches per point, avg per call then max over ranks)", cfg.batches);
		printf("\n# type %s, op %s, check %s, commit %s\n# MPI: %s\n", cfg.type, op_names[cfg.op], cfg.check ? "true" : "false",
			DPML_COMMIT[0] ? DPML_COMMIT : "-", mpilib);
		if (offload_desc[0]) printf("# offload: %s\n", offload_desc);
		if (x_set) printf("# libdpml: %s\n", dpml_library);
		else if (interposer[0]) printf("# libdpml: %s: MPI_Allreduce is interposed without plan control: only native and auto (its own choice) run\n", dpml_library);
		else printf("# libdpml.so not loaded: only the native variant runs (MPI_Allreduce is the MPI library's)\n");
	}
	if (rank == 0 && !x_set) {
		for (int i = 0; i < nvars; i++)
			if (vars[i].skip[0]) {
				if (interposer[0]) fprintf(stderr, "dpmlbench-c: %s has no DPMLX_Set_plan: skipping every variant but native and auto\n", interposer);
				else fprintf(stderr, "dpmlbench-c: libdpml.so is not loaded (preload or link it): skipping every variant but native\n");
				break;
			}
	}

	// Remove duplicate counts (sizes rounded up to whole elements).
	long *counts = malloc(sizeof(long) * (size_t)cfg.nsizes);
	int ncounts = 0;
	for (int i = 0; i < cfg.nsizes; i++) {
		long c = (cfg.sizes[i] + cfg.es - 1) / cfg.es;
		if (c < 1) c = 1;
		if (ncounts == 0 || counts[ncounts - 1] != c) counts[ncounts++] = c;
	}
	point *pts = calloc((size_t)nvars, sizeof *pts);
	long long mism_total = 0;
	for (int s = 0; s < ncounts; s++) {
		long count = counts[s], bytes = count * cfg.es;
		char sz[32];
		format_size(bytes, sz, sizeof sz);
		memset(pts, 0, sizeof *pts * (size_t)nvars);
		for (int i = 0; i < nvars; i++) {
			pts[i].v = &vars[i], pts[i].count = count, pts[i].skip = vars[i].skip[0] != '\0';
			progress("dpmlbench-c: size %s (%d/%d), preparing %s", sz, s + 1, ncounts, vars[i].spec);
			prepare(&pts[i]);
		}
		progress("dpmlbench-c: size %s (%d/%d), timing %d variants (%s)", sz, s + 1, ncounts, nvars, pattern_names[cfg.pattern]);
		time_all(pts, nvars);
		int from = nresults;
		for (int i = 0; i < nvars; i++) finish(&pts[i], bytes);
		if (rank == 0) {
			for (int i = from; i < nresults; i++) mism_total += results[i].mismatches;
			progress_clear();
			if (!cfg.quiet) print_rows(from);
		}
	}
	progress_clear();
	double elapsed = MPI_Wtime() - start;
	int status = 0;
	if (rank == 0) {
		if (cfg.quiet) print_rows(0);
		printf("\n%d points in %.1f s\n", nresults, elapsed);
		if (cfg.out[0]) {
			char pj[4096], pc[4096];
			snprintf(pj, sizeof pj, "%s/results.json", cfg.out);
			snprintf(pc, sizeof pc, "%s/results.csv", cfg.out);
			if (mkdir_p(cfg.out) != 0 || write_json(pj, argc, argv, elapsed, mpilib) != 0 || write_csv(pc) != 0) {
				fprintf(stderr, "dpmlbench-c: writing results into %s: %s\n", cfg.out, strerror(errno));
				status = 1;
			} else {
				printf("wrote %s\nwrote %s\n", pj, pc);
			}
		}
		// A passed check shows as such (bench.CheckLine), not as silence.
		int checked = 0;
		for (int i = 0; i < nresults; i++) checked += results[i].check[0] != '\0';
		if (checked) printf("-check: %d points checked, %lld wrong elements\n", checked, mism_total);
		if (mism_total) {
			fprintf(stderr, "dpmlbench-c: -check: %lld wrong elements (see the CHECK FAILED lines)\n", mism_total);
			status = 1;
		}
	}
	MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (x_set) x_set(bcomm, "auto");
	MPI_Comm_free(&bcomm);
	free(sendbuf), free(recvbuf), free(counts), free(pts);
	MPI_Finalize();
	return status;
}
