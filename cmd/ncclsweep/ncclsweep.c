/*
 * ncclsweep: times NCCL allreduce, reduce-scatter and allgather per message
 * size for several configurations of one process driving all its GPUs (no
 * MPI), checks every result against values computed on the host, and
 * writes
 *
 *   DIR/sweep.csv   one row per collective, size and variant (read by
 *                   `dpmlnccl table`, `dpmlnccl fit` and `dpmlnccl report`)
 *   DIR/sweep.txt   the same in the layout of the nccl-tests tables: per
 *                   collective and variant, size, count, type, redop, time,
 *                   algbw, busbw, #wrong
 *
 * Plain C on the CUDA runtime API and NCCL, no kernels: builds with nvcc or
 * with gcc -lcudart -lnccl.
 *
 *   ncclsweep -variants nccl@dflt,nccl@32,plugin@dflt -colls allreduce,reducescatter,allgather \
 *             -min 4K -max 1G -step x2 -reps 3 -out DIR
 *
 * A variant is POLICY@COMM. COMM is the communicator's channel setting:
 *   dflt    NCCL's (no channel fields set in ncclConfig_t)
 *   N       exactly N channels: ncclConfig_t minCTAs = maxCTAs = N, the
 *           per-communicator form of NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS = N
 *   minN    at least N channels: minCTAs = N, maxCTAs = 64 (NCCL's MAXCHANNELS,
 *           its default maximum): room for a per-call answer of up to N
 * Both fields are always set together: NCCL 2.28 rejects a config whose
 * minCTAs is set and maxCTAs is not (an unset field reads as INT_MIN, and
 * it refuses min > max). The fields exist from NCCL 2.17: they are set only
 * when both the header this was built with and the library loaded at run
 * time (ncclGetVersion) are 2.17 or later; otherwise a variant that forces
 * channels is an error before anything runs.
 *
 * POLICY is what the tuner plugin answers for that communicator, set by
 * DPML_NCCL_POLICY before the communicator is made (the plugin reads it at
 * each init; NCCL loads one plugin for the whole process, from
 * NCCL_TUNER_PLUGIN):
 *   nccl    off: NCCL's own choice (the same as no plugin)
 *   plugin  auto: the plugin's table (DPML_NCCL_TABLE) or built-in data
 *   model   the plugin's channel model
 *   C[/ALGO/PROTO]  every call gets C channels (and the algorithm/protocol)
 *
 * Sizes are the nccl-tests "size": the bytes of the larger buffer (allreduce:
 * each buffer; reduce-scatter: the send buffer, each rank receives
 * size/ranks; allgather: the receive buffer, each rank sends size/ranks).
 * algbw = size / time, busbw = algbw * 2(n-1)/n for allreduce and
 * (n-1)/n for reduce-scatter and allgather (n GPUs), as nccl-tests.
 *
 * Checking: rank r's send buffer holds v(r, i), a small integer hashed from
 * (r, i), so every sum is exact in float32. After each variant's first call
 * at each size the receive buffers (poisoned with NaN before) are compared
 * with the expected values, computed here from v alone: allreduce
 * sum_k v(k, i); reduce-scatter on rank r sum_k v(k, r*rc + j); allgather
 * v(k, j) at k*sc + j. Up to 4 Mi elements per GPU every element is
 * compared, above that 256 windows of 4096 elements spread over the buffer
 * (the first and the last included); #wrong counts the elements that differ,
 * the CSV's "checked" column how many were compared. -no-check skips it.
 *
 * Communicators are created in one group, one per GPU, with
 * ncclCommInitRankConfig (-init config, the default: the only way to force
 * channels), ncclCommInitRank (-init rank: no config) or ncclCommInitAll
 * (-init all); the last two only for dflt variants. They are the entry
 * points a preloaded libdpml-nccl-tuner.so gives its channel floor.
 *
 * Timing: all variants of a size are timed in turn, round-robin, each
 * round starting one variant later, so drift touches them alike. A sample
 * is a batch of back-to-back calls (sized so a batch takes about -rep-us),
 * timed by CUDA events on every GPU's stream: the slowest GPU's elapsed
 * time divided by the batch length. The median over -reps samples is
 * reported, after -warmup untimed calls. Sizes up to -small-max take
 * -small-reps samples (at least -reps) of -small-rep-us each: their calls
 * last microseconds, so a short sample is at the mercy of every host
 * hiccup, and the median of many long samples is what stays put.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* g++ defines it already: the file also builds as C++ */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <nccl.h>

#ifndef NCCL_VERSION
#define NCCL_VERSION(X, Y, Z) (((X) <= 2 && (Y) <= 8) ? (X)*1000 + (Y)*100 + (Z) : (X)*10000 + (Y)*100 + (Z))
#endif
#ifndef NCCL_VERSION_CODE
#error "nccl.h defines no NCCL_VERSION_CODE"
#endif
#define HAVE_CONFIG (NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0))
#define HAVE_CTAS (NCCL_VERSION_CODE >= NCCL_VERSION(2, 17, 0))
#define HAVE_LAST_ERROR (NCCL_VERSION_CODE >= NCCL_VERSION(2, 13, 0))

#define MAXGPUS 8
#define MAXVARIANTS 32
#define MAXSIZES 40
#define MAXREPS 200
#define MAXCOLLS 3
#define MAX_CTAS 64 /* NCCL's MAXCHANNELS: its default maxCTAs */
#define FULL_CHECK (4u << 20)
#define WINDOWS 256
#define WINDOW 4096

static void die(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "ncclsweep: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

static const char* last_error(void) {
#if HAVE_LAST_ERROR
  const char* s = ncclGetLastError(NULL);
  return s ? s : "";
#else
  return "";
#endif
}

#define CUDA(call)                                                                                  \
  do {                                                                                              \
    cudaError_t e_ = (call);                                                                        \
    if (e_ != cudaSuccess) die("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
  } while (0)
#define NCCL(call)                                                                                    \
  do {                                                                                                \
    ncclResult_t r_ = (call);                                                                         \
    if (r_ != ncclSuccess)                                                                            \
      die("%s:%d: %s: %s (%s)", __FILE__, __LINE__, #call, ncclGetErrorString(r_), last_error());     \
  } while (0)

/* The plugin's statistics (dpml_nccl_tuner.h of nccl/plugin; declared
 * here so the tool builds without the repository's headers). */
typedef struct {
  uint64_t inits, failed_inits, calls, set_channels, set_algo, last_bytes;
  int32_t last_coll, last_channels, last_algo, last_proto;
} dpml_nccl_stats;
static void (*stats_fn)(dpml_nccl_stats*);

static const char* algo_names[] = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
static const char* proto_names[] = {"ll", "ll128", "simple"};

enum { COLL_ALLREDUCE, COLL_REDUCESCATTER, COLL_ALLGATHER };
static const char* coll_names[] = {"allreduce", "reducescatter", "allgather"};

typedef struct {
  double median, lo, hi, alg, bus;
  long long wrong, checked;
  int batch, done, reps;
  long long calls;
  char choice[48];
} result;

typedef struct {
  char name[64];
  char policy[32]; /* as given: nccl, plugin, model, C[/A/P] */
  char comm[16];   /* dflt, N, minN */
  const char* env; /* DPML_NCCL_POLICY value */
  int needs_plugin;
  int min_ctas, max_ctas; /* 0: unset */
  ncclComm_t comms[MAXGPUS];
  double samples[MAXREPS];
  double warm_us;
  uint64_t calls, set;
  char choice[48];
  result res[MAXCOLLS][MAXSIZES];
} variant;

static int ngpus;
static variant vars[MAXVARIANTS];
static int nvars;
static cudaStream_t streams[MAXGPUS];
static cudaEvent_t ev0[MAXGPUS], ev1[MAXGPUS];
static float* sendbuf[MAXGPUS];
static float* recvbuf[MAXGPUS];

static int parse_bytes(const char* s, size_t* out) {
  char* end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) return -1;
  switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
  }
  if (*end == 'i' || *end == 'B') end++;
  if (*end == 'B') end++;
  if (*end) return -1;
  *out = (size_t)v;
  return 0;
}

static void parse_variant(const char* spec, variant* v) {
  const char* at = strchr(spec, '@');
  if (at == NULL) die("variant %s: want POLICY@COMM (e.g. nccl@dflt, 8@min32)", spec);
  size_t pl = (size_t)(at - spec);
  if (pl == 0 || pl >= sizeof v->policy || strlen(at + 1) == 0 || strlen(at + 1) >= sizeof v->comm ||
      strlen(spec) >= sizeof v->name)
    die("variant %s: bad policy or communicator part", spec);
  memset(v, 0, sizeof *v);
  snprintf(v->name, sizeof v->name, "%s", spec);
  memcpy(v->policy, spec, pl);
  snprintf(v->comm, sizeof v->comm, "%s", at + 1);
  if (strcmp(v->policy, "nccl") == 0) {
    v->env = "off";
  } else if (strcmp(v->policy, "plugin") == 0) {
    v->env = "auto", v->needs_plugin = 1;
  } else if (strcmp(v->policy, "model") == 0) {
    v->env = "model", v->needs_plugin = 1;
  } else if (v->policy[0] >= '0' && v->policy[0] <= '9') {
    v->env = v->policy, v->needs_plugin = 1; /* the plugin checks the syntax */
  } else {
    die("variant %s: policy %s: want nccl, plugin, model or C[/ALGO/PROTO]", spec, v->policy);
  }
  char* end;
  if (strcmp(v->comm, "dflt") == 0) {
  } else if (strncmp(v->comm, "min", 3) == 0) {
    long n = strtol(v->comm + 3, &end, 10);
    if (*end || n < 1 || n > MAX_CTAS) die("variant %s: communicator %s: want minN, N in 1..%d", spec, v->comm, MAX_CTAS);
    v->min_ctas = (int)n;
    v->max_ctas = MAX_CTAS;
  } else {
    long n = strtol(v->comm, &end, 10);
    if (*end || n < 1 || n > MAX_CTAS)
      die("variant %s: communicator %s: want dflt, N or minN (N in 1..%d)", spec, v->comm, MAX_CTAS);
    v->min_ctas = v->max_ctas = (int)n;
  }
}

static int nccl_runtime_version;
enum { INIT_CONFIG, INIT_RANK, INIT_ALL };
static int init_mode = INIT_CONFIG;
static const char* init_names[] = {"config", "rank", "all"};

static void make_comms(variant* v) {
  ncclUniqueId id;
  /* The plugin reads its policy at each communicator's init. */
  setenv("DPML_NCCL_POLICY", v->env, 1);
  NCCL(ncclGetUniqueId(&id));
#if HAVE_CONFIG
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  if (v->min_ctas || v->max_ctas) {
#if HAVE_CTAS
    if (nccl_runtime_version < NCCL_VERSION(2, 17, 0))
      die("variant %s: the NCCL library loaded (%d) predates ncclConfig_t minCTAs/maxCTAs (2.17)", v->name, nccl_runtime_version);
    /* Always both: a set minCTAs with maxCTAs unset is rejected. */
    cfg.minCTAs = v->min_ctas;
    cfg.maxCTAs = v->max_ctas;
#else
    die("variant %s: built against NCCL %d, whose ncclConfig_t has no minCTAs/maxCTAs (2.17)", v->name, NCCL_VERSION_CODE);
#endif
  }
#else
  if (v->min_ctas || v->max_ctas) die("variant %s: built against NCCL %d, which has no ncclConfig_t (2.14)", v->name, NCCL_VERSION_CODE);
#endif
  if (init_mode == INIT_ALL) {
    NCCL(ncclCommInitAll(v->comms, ngpus, NULL));
    return;
  }
  NCCL(ncclGroupStart());
  for (int g = 0; g < ngpus; g++) {
    CUDA(cudaSetDevice(g));
#if HAVE_CONFIG
    if (init_mode == INIT_CONFIG)
      NCCL(ncclCommInitRankConfig(&v->comms[g], ngpus, id, g, &cfg));
    else
#endif
      NCCL(ncclCommInitRank(&v->comms[g], ngpus, id, g));
  }
  NCCL(ncclGroupEnd());
}

/* Element counts of a size: total (the larger buffer) and per rank part. */
static size_t elems(size_t bytes) { return bytes / sizeof(float); }
static size_t part(size_t bytes) { return elems(bytes) / (size_t)ngpus; }

static void launch(int coll, variant* v, int g, size_t bytes) {
  switch (coll) {
    case COLL_ALLREDUCE:
      NCCL(ncclAllReduce(sendbuf[g], recvbuf[g], elems(bytes), ncclFloat32, ncclSum, v->comms[g], streams[g]));
      break;
    case COLL_REDUCESCATTER:
      NCCL(ncclReduceScatter(sendbuf[g], recvbuf[g], part(bytes), ncclFloat32, ncclSum, v->comms[g], streams[g]));
      break;
    default:
      NCCL(ncclAllGather(sendbuf[g], recvbuf[g], part(bytes), ncclFloat32, v->comms[g], streams[g]));
      break;
  }
}

/* One batch of n calls on every GPU; returns the slowest GPU's elapsed
 * microseconds per call. */
static double run_batch(int coll, variant* v, size_t bytes, int n) {
  for (int g = 0; g < ngpus; g++) {
    CUDA(cudaSetDevice(g));
    CUDA(cudaEventRecord(ev0[g], streams[g]));
  }
  for (int i = 0; i < n; i++) {
    NCCL(ncclGroupStart());
    for (int g = 0; g < ngpus; g++) launch(coll, v, g, bytes);
    NCCL(ncclGroupEnd());
  }
  for (int g = 0; g < ngpus; g++) {
    CUDA(cudaSetDevice(g));
    CUDA(cudaEventRecord(ev1[g], streams[g]));
  }
  double worst = 0;
  for (int g = 0; g < ngpus; g++) {
    float ms = 0;
    CUDA(cudaEventSynchronize(ev1[g]));
    CUDA(cudaEventElapsedTime(&ms, ev0[g], ev1[g]));
    if (ms * 1e3 > worst) worst = ms * 1e3;
  }
  return worst / n;
}

/* v(r, i): rank r's send element i, an integer in -32..31 (so sums over up
 * to 8 ranks are exact in float32), hashed so that a misplaced block
 * differs. */
static float sendval(int r, uint64_t i) {
  uint64_t x = i * 0x9E3779B97F4A7C15ull + (uint64_t)(r + 1) * 0xD1B54A32D192ED03ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return (float)((int)(x & 63) - 32);
}

/* The expected receive element e of GPU g after collective coll of bytes. */
static float expected(int coll, int g, size_t bytes, uint64_t e) {
  float s = 0;
  switch (coll) {
    case COLL_ALLREDUCE:
      for (int k = 0; k < ngpus; k++) s += sendval(k, e);
      return s;
    case COLL_REDUCESCATTER:
      for (int k = 0; k < ngpus; k++) s += sendval(k, (uint64_t)g * part(bytes) + e);
      return s;
    default:
      return sendval((int)(e / part(bytes)), e % part(bytes));
  }
}

static size_t recv_elems(int coll, size_t bytes) { return coll == COLL_REDUCESCATTER ? part(bytes) : part(bytes) * (size_t)ngpus; }

/* check compares the receive buffers with the expected values; returns
 * the elements that differ and adds the elements compared to *checked. */
static long long check_result(int coll, size_t bytes, long long* checked) {
  size_t n = recv_elems(coll, bytes);
  size_t cap = n <= FULL_CHECK ? n : (size_t)WINDOW;
  float* host = (float*)malloc(cap * sizeof(float));
  if (!host) die("out of host memory");
  long long wrong = 0;
  for (int g = 0; g < ngpus; g++) {
    CUDA(cudaSetDevice(g));
    int windows = n <= FULL_CHECK ? 1 : WINDOWS;
    for (int w = 0; w < windows; w++) {
      size_t off = windows == 1 ? 0 : (n - WINDOW) / (WINDOWS - 1) * (size_t)w;
      if (w == windows - 1 && windows > 1) off = n - WINDOW;
      size_t len = windows == 1 ? n : (size_t)WINDOW;
      CUDA(cudaMemcpy(host, recvbuf[g] + off, len * sizeof(float), cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < len; i++) {
        float want = expected(coll, g, bytes, off + i);
        if (!(host[i] == want)) {
          if (wrong < 3)
            fprintf(stderr, "ncclsweep: %s %zu B: GPU %d element %zu = %g, want %g\n", coll_names[coll], bytes, g, off + i,
                    host[i], want);
          wrong++;
        }
      }
      *checked += (long long)len;
    }
  }
  free(host);
  return wrong;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static void read_stats(dpml_nccl_stats* s) {
  memset(s, 0, sizeof *s);
  if (stats_fn) stats_fn(s);
}

static void note_choice(variant* v, const dpml_nccl_stats* a, const dpml_nccl_stats* b) {
  v->calls += b->calls - a->calls;
  uint64_t set = (b->set_channels - a->set_channels) + (b->set_algo - a->set_algo);
  v->set += set;
  if (set == 0) return;
  int n = snprintf(v->choice, sizeof v->choice, "%d", b->last_channels);
  if (b->last_algo >= 0 && b->last_algo < 7 && b->last_proto >= 0 && b->last_proto < 3)
    snprintf(v->choice + n, sizeof v->choice - n, "/%s/%s", algo_names[b->last_algo], proto_names[b->last_proto]);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* The redop column: allgather reduces nothing. */
static const char* redop(int coll) { return coll == COLL_ALLGATHER ? "none" : "sum"; }

static double busfactor(int coll) {
  double n = ngpus;
  return coll == COLL_ALLREDUCE ? 2.0 * (n - 1) / n : (n - 1) / n;
}

static void usage(void) {
  fprintf(stderr,
          "usage: ncclsweep -variants LIST [-colls allreduce,reducescatter,allgather] [-min 4K] [-max 1G] [-step x2]\n"
          "                 [-reps 3] [-warmup 2] [-rep-us 1000] [-small-max 0] [-small-reps 15] [-small-rep-us 2000]\n"
          "                 [-init config|rank|all] [-budget-s 0] [-gpus N] [-no-check] [-out DIR] [-label TEXT]\n"
          "  LIST: POLICY@COMM,... (POLICY nccl|plugin|model|C[/ALGO/PROTO]; COMM dflt|N|minN)\n");
  exit(2);
}

int main(int argc, char** argv) {
  size_t minb = 4 << 10, maxb = 1u << 30;
  int step = 2, reps = 3, warmup = 2, check = 1;
  double rep_us = 1000, budget_s = 0, small_rep_us = 2000;
  size_t small_max = 0;
  int small_reps = 15;
  const char* out = ".";
  const char* label = "";
  const char* varlist = "nccl@dflt";
  const char* colllist = "allreduce,reducescatter,allgather";
  ngpus = 0;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* val = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED()         \
  do {                 \
    if (!val) usage(); \
    i++;               \
  } while (0)
    if (!strcmp(a, "-min")) { NEED(); if (parse_bytes(val, &minb)) die("-min %s", val); }
    else if (!strcmp(a, "-max")) { NEED(); if (parse_bytes(val, &maxb)) die("-max %s", val); }
    else if (!strcmp(a, "-step")) { NEED(); step = atoi(val[0] == 'x' ? val + 1 : val); }
    else if (!strcmp(a, "-reps")) { NEED(); reps = atoi(val); }
    else if (!strcmp(a, "-warmup")) { NEED(); warmup = atoi(val); }
    else if (!strcmp(a, "-rep-us")) { NEED(); rep_us = atof(val); }
    else if (!strcmp(a, "-budget-s")) { NEED(); budget_s = atof(val); }
    else if (!strcmp(a, "-small-max")) { NEED(); if (parse_bytes(val, &small_max)) die("-small-max %s", val); }
    else if (!strcmp(a, "-small-reps")) { NEED(); small_reps = atoi(val); }
    else if (!strcmp(a, "-small-rep-us")) { NEED(); small_rep_us = atof(val); }
    else if (!strcmp(a, "-init")) {
      NEED();
      init_mode = -1;
      for (int k = 0; k < 3; k++)
        if (!strcmp(val, init_names[k])) init_mode = k;
      if (init_mode < 0) die("-init %s: want config, rank or all", val);
    }
    else if (!strcmp(a, "-gpus")) { NEED(); ngpus = atoi(val); }
    else if (!strcmp(a, "-variants")) { NEED(); varlist = val; }
    else if (!strcmp(a, "-colls")) { NEED(); colllist = val; }
    else if (!strcmp(a, "-out")) { NEED(); out = val; }
    else if (!strcmp(a, "-label")) { NEED(); label = val; }
    else if (!strcmp(a, "-check")) check = 1;
    else if (!strcmp(a, "-no-check")) check = 0;
    else usage();
  }
  if (step < 2 || reps < 1 || reps > MAXREPS || warmup < 0 || rep_us <= 0 || maxb < minb || small_reps < 1 ||
      small_reps > MAXREPS || small_rep_us <= 0)
    die("bad -step, -reps or -small-reps (1..%d), -warmup, -min/-max, -rep-us or -small-rep-us", MAXREPS);

  int colls[MAXCOLLS], ncolls = 0;
  {
    char* list = strdup(colllist);
    for (char* tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
      int c = -1;
      for (int k = 0; k < MAXCOLLS; k++)
        if (!strcasecmp(tok, coll_names[k])) c = k;
      if (c < 0) die("-colls: %s: want allreduce, reducescatter or allgather", tok);
      for (int k = 0; k < ncolls; k++)
        if (colls[k] == c) c = -1;
      if (c >= 0) colls[ncolls++] = c;
    }
    free(list);
    if (ncolls == 0) die("-colls: empty");
  }
  {
    char* list = strdup(varlist);
    for (char* tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
      if (nvars == MAXVARIANTS) die("at most %d variants", MAXVARIANTS);
      parse_variant(tok, &vars[nvars++]);
    }
    free(list);
    if (nvars == 0) die("-variants: empty");
  }
  const char* plugin = getenv("NCCL_TUNER_PLUGIN");
  if (plugin != NULL && (*plugin == 0 || strcasecmp(plugin, "none") == 0)) plugin = NULL; /* NCCL: none = no plugin */
  for (int i = 0; i < nvars; i++) {
    if (vars[i].needs_plugin && plugin == NULL)
      die("variant %s needs the plugin: set NCCL_TUNER_PLUGIN=/path/libdpml-nccl-tuner.so", vars[i].name);
    if ((vars[i].min_ctas || vars[i].max_ctas) && init_mode != INIT_CONFIG)
      die("variant %s sets the communicator's channels: only -init config passes a config", vars[i].name);
  }

  int have = 0;
  CUDA(cudaGetDeviceCount(&have));
  if (ngpus == 0) ngpus = have < MAXGPUS ? have : MAXGPUS;
  if (ngpus < 2 || ngpus > have || ngpus > MAXGPUS) die("%d GPUs requested, %d present: need 2..%d", ngpus, have, MAXGPUS);

  /* Sizes: multiples of 4 bytes x GPUs, so every rank's part is whole. */
  size_t unit = sizeof(float) * (size_t)ngpus;
  size_t sizes[MAXSIZES];
  int nsizes = 0;
  for (size_t s = minb; s <= maxb && nsizes < MAXSIZES; s *= (size_t)step) {
    size_t b = s / unit * unit;
    if (b > 0 && (nsizes == 0 || sizes[nsizes - 1] != b)) sizes[nsizes++] = b;
  }
  if (nsizes == 0) die("no size between -min and -max holds %zu bytes (4 per GPU)", unit);
  size_t maxbytes = sizes[nsizes - 1];

  NCCL(ncclGetVersion(&nccl_runtime_version));
  for (int i = 0; i < nvars; i++)
    if ((vars[i].min_ctas || vars[i].max_ctas) && (!HAVE_CTAS || nccl_runtime_version < NCCL_VERSION(2, 17, 0)))
      die("variant %s forces channels (ncclConfig_t minCTAs/maxCTAs, NCCL 2.17 and later): header %d, library %d",
          vars[i].name, NCCL_VERSION_CODE, nccl_runtime_version);

  mkdir(out, 0755);
  char path[4096], tpath[4096];
  snprintf(path, sizeof path, "%s/sweep.csv", out);
  snprintf(tpath, sizeof tpath, "%s/sweep.txt", out);
  FILE* csv = fopen(path, "w");
  if (!csv) die("%s: %s", path, strerror(errno));

  int rt = 0, drv = 0;
  CUDA(cudaRuntimeGetVersion(&rt));
  CUDA(cudaDriverGetVersion(&drv));
  time_t now = time(NULL);
  char date[64];
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  char gpu0[256] = "";
  fprintf(csv, "# tool=ncclsweep\n# date=%s\n# host=%s\n# label=%s\n", date, host, label);
  fprintf(csv, "# nccl_version=%d\n# nccl_header_version=%d\n# cuda_runtime=%d\n# cuda_driver=%d\n", nccl_runtime_version,
          NCCL_VERSION_CODE, rt, drv);
  fprintf(csv, "# gpus=%d\n", ngpus);
  for (int g = 0; g < ngpus; g++) {
    struct cudaDeviceProp prop;
    CUDA(cudaGetDeviceProperties(&prop, g));
    fprintf(csv, "# gpu%d=%s\n", g, prop.name);
    if (g == 0) snprintf(gpu0, sizeof gpu0, "%s", prop.name);
  }
  fprintf(csv, "# command=");
  for (int i = 0; i < argc; i++) fprintf(csv, "%s%s", i ? " " : "", argv[i]);
  fprintf(csv, "\n# colls=");
  for (int k = 0; k < ncolls; k++) fprintf(csv, "%s%s", k ? "," : "", coll_names[colls[k]]);
  fprintf(csv, "\n# dtype=float32\n# op=sum\n# reps=%d\n# warmup=%d\n# rep_us=%g\n", reps, warmup, rep_us);
  if (small_max > 0) fprintf(csv, "# small_max=%zu\n# small_reps=%d\n# small_rep_us=%g\n", small_max, small_reps, small_rep_us);
  fprintf(csv, "# init=%s\n", init_names[init_mode]);
  extern char** environ;
  for (char** e = environ; *e; e++)
    if (!strncmp(*e, "NCCL_", 5) || !strncmp(*e, "DPML_", 5) || !strncmp(*e, "CUDA_VISIBLE", 12)) fprintf(csv, "# env %s\n", *e);
  fprintf(csv,
          "coll,bytes,count,type,redop,variant,policy,comm,ranks,nodes,reps,batch,median_us,min_us,max_us,algbw_gbs,busbw_gbs,"
          "wrong,checked,check,tuner_calls,tuner_choice\n");
  fflush(csv);

  /* Send buffers: v(r, i) for every i below the largest size's count. */
  {
    size_t n = elems(maxbytes);
    float* hostv = (float*)malloc(n * sizeof(float));
    if (!hostv) die("out of host memory (%zu bytes)", n * sizeof(float));
    for (int g = 0; g < ngpus; g++) {
      for (size_t i = 0; i < n; i++) hostv[i] = sendval(g, i);
      CUDA(cudaSetDevice(g));
      CUDA(cudaStreamCreateWithFlags(&streams[g], cudaStreamNonBlocking));
      CUDA(cudaEventCreate(&ev0[g]));
      CUDA(cudaEventCreate(&ev1[g]));
      CUDA(cudaMalloc((void**)&sendbuf[g], maxbytes));
      CUDA(cudaMalloc((void**)&recvbuf[g], maxbytes));
      CUDA(cudaMemcpy(sendbuf[g], hostv, n * sizeof(float), cudaMemcpyHostToDevice));
      CUDA(cudaDeviceSynchronize());
    }
    free(hostv);
  }
  double t0 = now_s();
  for (int i = 0; i < nvars; i++) {
    double ts = now_s();
    make_comms(&vars[i]);
    fprintf(stderr, "ncclsweep: communicators of %s (DPML_NCCL_POLICY=%s, minCTAs %d, maxCTAs %d) in %.2f s\n", vars[i].name,
            vars[i].env, vars[i].min_ctas, vars[i].max_ctas, now_s() - ts);
  }
  if (plugin) {
    /* NCCL opened the plugin (RTLD_LOCAL); find the same instance. */
    void* h = dlopen(plugin, RTLD_NOW | RTLD_NOLOAD);
    if (h) stats_fn = (void (*)(dpml_nccl_stats*))dlsym(h, "dpml_nccl_tuner_stats");
    if (!stats_fn)
      fprintf(stderr, "ncclsweep: WARNING: NCCL_TUNER_PLUGIN=%s is not loaded in this process (or is not DPML's): tuner columns are -1\n", plugin);
  }
  dpml_nccl_stats st;
  read_stats(&st);
  if (stats_fn)
    fprintf(csv, "# plugin_inits=%llu\n# plugin_failed_inits=%llu\n", (unsigned long long)st.inits,
            (unsigned long long)st.failed_inits);
  if (stats_fn && st.failed_inits)
    fprintf(stderr, "ncclsweep: WARNING: %llu plugin inits fell back to NCCL's default (see the plugin's message above)\n", (unsigned long long)st.failed_inits);

  long long wrong_total = 0;
  int measured = 0;
  for (int si = 0; si < nsizes; si++) {
    size_t bytes = sizes[si];
    if (budget_s > 0 && now_s() - t0 > budget_s) {
      fprintf(stderr, "ncclsweep: time budget %.0f s spent: sizes from %zu bytes skipped\n", budget_s, bytes);
      fprintf(csv, "# budget_exhausted_at=%zu\n", bytes);
      break;
    }
    int nreps = reps;
    double sample_us = rep_us;
    if (bytes <= small_max) {
      nreps = small_reps > reps ? small_reps : reps;
      sample_us = small_rep_us;
    }
    for (int ci = 0; ci < ncolls; ci++) {
      int coll = colls[ci];
      for (int i = 0; i < nvars; i++) {
        variant* v = &vars[i];
        result* r = &v->res[ci][si];
        memset(r, 0, sizeof *r);
        r->wrong = -1;
        if (check) {
          for (int g = 0; g < ngpus; g++) {
            CUDA(cudaSetDevice(g));
            CUDA(cudaMemset(recvbuf[g], 0xff, bytes)); /* NaN: a call that writes nothing fails */
          }
          for (int g = 0; g < ngpus; g++) {
            CUDA(cudaSetDevice(g));
            CUDA(cudaDeviceSynchronize());
          }
          run_batch(coll, v, bytes, 1);
          r->wrong = check_result(coll, bytes, &r->checked);
          wrong_total += r->wrong;
        }
        /* The first calls may set up connections (NCCL connects an
         * algorithm at its first use): time a few more for the batch size. */
        if (warmup > 0) run_batch(coll, v, bytes, warmup);
        v->warm_us = run_batch(coll, v, bytes, 2);
        v->calls = v->set = 0;
        strcpy(v->choice, stats_fn ? "native" : "-");
      }
      double wmin = vars[0].warm_us;
      for (int i = 1; i < nvars; i++)
        if (vars[i].warm_us < wmin) wmin = vars[i].warm_us;
      int batch = (int)(sample_us / wmin + 0.5);
      if (batch < 1) batch = 1;
      if (batch > 1000) batch = 1000;
      for (int rep = 0; rep < nreps; rep++)
        for (int j = 0; j < nvars; j++) {
          variant* v = &vars[(j + rep) % nvars];
          dpml_nccl_stats a, b;
          read_stats(&a);
          v->samples[rep] = run_batch(coll, v, bytes, batch);
          read_stats(&b);
          note_choice(v, &a, &b);
        }
      fprintf(stderr, "%-13s %10zu B:", coll_names[coll], bytes);
      for (int i = 0; i < nvars; i++) {
        variant* v = &vars[i];
        result* r = &v->res[ci][si];
        qsort(v->samples, nreps, sizeof(double), cmp_double);
        r->median = nreps % 2 ? v->samples[nreps / 2] : 0.5 * (v->samples[nreps / 2 - 1] + v->samples[nreps / 2]);
        r->lo = v->samples[0];
        r->hi = v->samples[nreps - 1];
        r->reps = nreps;
        r->alg = bytes / (r->median * 1e-6) / 1e9;
        r->bus = r->alg * busfactor(coll);
        r->batch = batch;
        r->calls = stats_fn ? (long long)v->calls : -1LL;
        snprintf(r->choice, sizeof r->choice, "%s", v->choice);
        r->done = 1;
        fprintf(csv, "%s,%zu,%zu,float,%s,%s,%s,%s,%d,1,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%lld,%lld,%s,%lld,%s\n", coll_names[coll],
                bytes, elems(bytes), redop(coll), v->name, v->policy, v->comm, ngpus, nreps, batch, r->median, r->lo, r->hi, r->alg, r->bus,
                r->wrong < 0 ? 0 : r->wrong, r->checked, r->wrong < 0 ? "skip" : r->wrong == 0 ? "ok" : "fail", r->calls,
                r->choice);
        fprintf(stderr, " %s %.1f%s", v->name, r->bus, r->wrong > 0 ? " WRONG" : "");
      }
      fprintf(stderr, " GB/s (bus, batch %d)\n", batch);
      fflush(csv);
    }
    measured = si + 1;
  }
  fprintf(csv, "# elapsed_s=%.1f\n", now_s() - t0);
  fclose(csv);

  /* The nccl-tests layout, one block per collective and variant. */
  FILE* txt = fopen(tpath, "w");
  if (!txt) die("%s: %s", tpath, strerror(errno));
  for (int ci = 0; ci < ncolls; ci++)
    for (int i = 0; i < nvars; i++) {
      variant* v = &vars[i];
      int coll = colls[ci];
      if (small_max > 0 && small_reps > reps)
        fprintf(txt, "# %s, variant %s: %d x %s, NCCL %d, out-of-place, median of %d samples (%d up to %zu bytes)\n", coll_names[coll],
                v->name, ngpus, gpu0, nccl_runtime_version, reps, small_reps, small_max);
      else
        fprintf(txt, "# %s, variant %s: %d x %s, NCCL %d, out-of-place, median of %d samples\n", coll_names[coll], v->name, ngpus,
                gpu0, nccl_runtime_version, reps);
      fprintf(txt, "#%11s %13s %9s %7s %10s %8s %8s %7s\n", "size", "count", "type", "redop", "time", "algbw", "busbw", "#wrong");
      fprintf(txt, "#%11s %13s %9s %7s %10s %8s %8s %7s\n", "(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "");
      double sum = 0;
      int n = 0;
      for (int si = 0; si < measured; si++) {
        result* r = &v->res[ci][si];
        if (!r->done) continue;
        char wr[32];
        if (r->wrong < 0)
          snprintf(wr, sizeof wr, "N/A");
        else
          snprintf(wr, sizeof wr, "%lld", r->wrong);
        fprintf(txt, " %11zu %13zu %9s %7s %10.2f %8.2f %8.2f %7s\n", sizes[si], elems(sizes[si]), "float", redop(coll), r->median,
                r->alg, r->bus, wr);
        sum += r->bus;
        n++;
      }
      fprintf(txt, "# Avg bus bandwidth    : %g\n\n", n ? sum / n : 0.0);
    }
  fclose(txt);

  for (int i = 0; i < nvars; i++)
    for (int g = 0; g < ngpus; g++) ncclCommDestroy(vars[i].comms[g]);
  for (int g = 0; g < ngpus; g++) {
    cudaSetDevice(g);
    cudaFree(sendbuf[g]);
    cudaFree(recvbuf[g]);
  }
  fprintf(stderr, "ncclsweep: wrote %s and %s in %.1f s%s\n", path, tpath, now_s() - t0,
          wrong_total ? " (RESULTS WRONG: see #wrong)" : "");
  return wrong_total ? 1 : 0;
}
