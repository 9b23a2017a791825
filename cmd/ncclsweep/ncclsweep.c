/*
 * ncclsweep: times NCCL allreduce per message size for several
 * configurations of one process driving all its GPUs (no MPI), and writes
 * a CSV that `dpmlnccl table` turns into the tuning table of
 * libdpml-nccl-tuner.so and the channel atlas. Plain C on the CUDA runtime
 * API and NCCL, no kernels: builds with nvcc or with gcc -lcudart -lnccl.
 *
 *   ncclsweep -variants nccl@dflt,nccl@8,8@min32,plugin@min32 -min 4K -max 1G -step x2 -out DIR
 *
 * A variant is POLICY@COMM. COMM is the communicator's channel setting:
 *   dflt    NCCL's (no config)
 *   N       exactly N channels: ncclConfig_t minCTAs = maxCTAs = N, the
 *           per-communicator form of NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS = N
 *           (NCCL 2.28 applies max(NCCL_MIN_NCHANNELS, minCTAs) and
 *           min(NCCL_MAX_NCHANNELS, maxCTAs) when it sets up the channels;
 *           environment variables are read once per process, so they could
 *           not differ between communicators of one process)
 *   minN    at least N channels (minCTAs = N): room for a per-call answer of up to N
 * POLICY is what the tuner plugin answers for that communicator, set by
 * DPML_NCCL_POLICY before the communicator is made (the plugin reads it at
 * each init; NCCL loads one plugin for the whole process, from
 * NCCL_TUNER_PLUGIN):
 *   nccl    off: NCCL's own choice (the same as no plugin)
 *   plugin  auto: the plugin's table (DPML_NCCL_TABLE) or model
 *   model   the plugin's channel model
 *   C[/ALGO/PROTO]  every call gets C channels (and the algorithm/protocol)
 * All variants of a size are timed in turn, round-robin, each round
 * starting one variant later, so drift touches them alike. A sample is a
 * batch of back-to-back allreduces (sized so a batch takes about -rep-us),
 * timed by CUDA events on every GPU's stream: the slowest GPU's elapsed
 * time divided by the batch length. The CSV reports the median, min and
 * max over -reps samples after -warmup untimed calls; bus bandwidth is
 * bytes / median * 2 (n - 1) / n. With -check every variant's result is
 * compared after the warm-up (the receive buffers are poisoned first).
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

#define MAXGPUS 8
#define MAXVARIANTS 64
#define MAXSIZES 64
#define MAXREPS 200

static void die(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "ncclsweep: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

#define CUDA(call)                                                                                  \
  do {                                                                                              \
    cudaError_t e_ = (call);                                                                        \
    if (e_ != cudaSuccess) die("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
  } while (0)
#define NCCL(call)                                                                                  \
  do {                                                                                              \
    ncclResult_t r_ = (call);                                                                       \
    if (r_ != ncclSuccess) die("%s:%d: %s: %s", __FILE__, __LINE__, #call, ncclGetErrorString(r_)); \
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
  int check; /* 1 ok, 0 failed, -1 not checked */
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
  if (pl == 0 || pl >= sizeof v->policy || strlen(at + 1) == 0 || strlen(at + 1) >= sizeof v->comm)
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
    if (*end || n < 1 || n > 64) die("variant %s: communicator %s: want minN, N in 1..64", spec, v->comm);
    v->min_ctas = (int)n;
  } else {
    long n = strtol(v->comm, &end, 10);
    if (*end || n < 1 || n > 64) die("variant %s: communicator %s: want dflt, N or minN (N in 1..64)", spec, v->comm);
    v->min_ctas = v->max_ctas = (int)n;
  }
  v->check = -1;
}

static void make_comms(variant* v) {
  ncclUniqueId id;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  if (v->min_ctas) cfg.minCTAs = v->min_ctas;
  if (v->max_ctas) cfg.maxCTAs = v->max_ctas;
  /* The plugin reads its policy at each communicator's init. */
  setenv("DPML_NCCL_POLICY", v->env, 1);
  NCCL(ncclGetUniqueId(&id));
  NCCL(ncclGroupStart());
  for (int g = 0; g < ngpus; g++) {
    CUDA(cudaSetDevice(g));
    NCCL(ncclCommInitRankConfig(&v->comms[g], ngpus, id, g, &cfg));
  }
  NCCL(ncclGroupEnd());
}

/* One batch of n allreduces on every GPU; returns the slowest GPU's
 * elapsed microseconds per call. */
static double run_batch(variant* v, size_t count, int n) {
  for (int g = 0; g < ngpus; g++) {
    CUDA(cudaSetDevice(g));
    CUDA(cudaEventRecord(ev0[g], streams[g]));
  }
  for (int i = 0; i < n; i++) {
    NCCL(ncclGroupStart());
    for (int g = 0; g < ngpus; g++)
      NCCL(ncclAllReduce(sendbuf[g], recvbuf[g], count, ncclFloat32, ncclSum, v->comms[g], streams[g]));
    NCCL(ncclGroupEnd());
  }
  double worst = 0;
  for (int g = 0; g < ngpus; g++) {
    CUDA(cudaSetDevice(g));
    CUDA(cudaEventRecord(ev1[g], streams[g]));
  }
  for (int g = 0; g < ngpus; g++) {
    float ms = 0;
    CUDA(cudaEventSynchronize(ev1[g]));
    CUDA(cudaEventElapsedTime(&ms, ev0[g], ev1[g]));
    if (ms * 1e3 > worst) worst = ms * 1e3;
  }
  return worst / n;
}

/* The float whose four bytes are all b (what cudaMemset(b) writes). */
static float pattern(int b) {
  uint32_t u = 0x01010101u * (uint32_t)b;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static int check_result(size_t count) {
  /* Sum in GPU order: exact for two GPUs; more may round differently, so allow 1e-5. */
  float want = 0;
  for (int g = 0; g < ngpus; g++) want += pattern(0x3c + g);
  size_t n = count < 4096 ? count : 4096;
  float* host = (float*)malloc(n * sizeof(float));
  int ok = 1;
  for (int g = 0; g < ngpus && ok; g++) {
    CUDA(cudaSetDevice(g));
    for (int part = 0; part < 2 && ok; part++) { /* the first and the last n elements */
      size_t off = part == 0 ? 0 : count - n;
      CUDA(cudaMemcpy(host, recvbuf[g] + off, n * sizeof(float), cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < n; i++)
        if (!(fabsf(host[i] - want) <= 1e-5f * fabsf(want))) {
          fprintf(stderr, "ncclsweep: check failed: GPU %d element %zu = %g, want %g\n", g, off + i, host[i], want);
          ok = 0;
          break;
        }
    }
  }
  free(host);
  return ok;
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

static void usage(void) {
  fprintf(stderr,
          "usage: ncclsweep -variants LIST [-min 4K] [-max 1G] [-step x2] [-reps 20] [-warmup 5]\n"
          "                 [-rep-us 1000] [-budget-s 0] [-gpus N] [-check] [-out DIR] [-label TEXT]\n"
          "  LIST: POLICY@COMM,... (POLICY nccl|plugin|model|C[/ALGO/PROTO]; COMM dflt|N|minN)\n");
  exit(2);
}

int main(int argc, char** argv) {
  size_t minb = 4 << 10, maxb = 1u << 30;
  int step = 2, reps = 20, warmup = 5, check = 0;
  double rep_us = 1000, budget_s = 0;
  const char* out = ".";
  const char* label = "";
  const char* varlist = "nccl@dflt";
  ngpus = 0;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* val = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED() \
  do {         \
    if (!val) usage(); \
    i++;       \
  } while (0)
    if (!strcmp(a, "-min")) { NEED(); if (parse_bytes(val, &minb)) die("-min %s", val); }
    else if (!strcmp(a, "-max")) { NEED(); if (parse_bytes(val, &maxb)) die("-max %s", val); }
    else if (!strcmp(a, "-step")) { NEED(); step = atoi(val[0] == 'x' ? val + 1 : val); }
    else if (!strcmp(a, "-reps")) { NEED(); reps = atoi(val); }
    else if (!strcmp(a, "-warmup")) { NEED(); warmup = atoi(val); }
    else if (!strcmp(a, "-rep-us")) { NEED(); rep_us = atof(val); }
    else if (!strcmp(a, "-budget-s")) { NEED(); budget_s = atof(val); }
    else if (!strcmp(a, "-gpus")) { NEED(); ngpus = atoi(val); }
    else if (!strcmp(a, "-variants")) { NEED(); varlist = val; }
    else if (!strcmp(a, "-out")) { NEED(); out = val; }
    else if (!strcmp(a, "-label")) { NEED(); label = val; }
    else if (!strcmp(a, "-check")) check = 1;
    else usage();
  }
  if (step < 2 || reps < 1 || reps > MAXREPS || warmup < 0 || minb < 4 || maxb < minb || rep_us <= 0)
    die("bad -step, -reps (1..%d), -warmup, -min/-max or -rep-us", MAXREPS);
  size_t sizes[MAXSIZES];
  int nsizes = 0;
  for (size_t s = minb; s <= maxb && nsizes < MAXSIZES; s *= (size_t)step) sizes[nsizes++] = s & ~(size_t)3;

  char* list = strdup(varlist);
  for (char* tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
    if (nvars == MAXVARIANTS) die("at most %d variants", MAXVARIANTS);
    parse_variant(tok, &vars[nvars++]);
  }
  const char* plugin = getenv("NCCL_TUNER_PLUGIN");
  if (plugin != NULL && (*plugin == 0 || strcasecmp(plugin, "none") == 0)) plugin = NULL; /* NCCL: none = no plugin */
  for (int i = 0; i < nvars; i++)
    if (vars[i].needs_plugin && plugin == NULL)
      die("variant %s needs the plugin: set NCCL_TUNER_PLUGIN=/path/libdpml-nccl-tuner.so", vars[i].name);

  int have = 0;
  CUDA(cudaGetDeviceCount(&have));
  if (ngpus == 0) ngpus = have < MAXGPUS ? have : MAXGPUS;
  if (ngpus < 2 || ngpus > have || ngpus > MAXGPUS) die("%d GPUs requested, %d present: need 2..%d", ngpus, have, MAXGPUS);

  mkdir(out, 0755);
  char path[4096];
  snprintf(path, sizeof path, "%s/sweep.csv", out);
  FILE* csv = fopen(path, "w");
  if (!csv) die("%s: %s", path, strerror(errno));

  int ver = 0, rt = 0, drv = 0;
  NCCL(ncclGetVersion(&ver));
  CUDA(cudaRuntimeGetVersion(&rt));
  CUDA(cudaDriverGetVersion(&drv));
  time_t now = time(NULL);
  char date[64];
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  fprintf(csv, "# tool=ncclsweep\n# date=%s\n# host=%s\n# label=%s\n", date, host, label);
  fprintf(csv, "# nccl_version=%d\n# nccl_header_version=%d\n# cuda_runtime=%d\n# cuda_driver=%d\n", ver, NCCL_VERSION_CODE, rt, drv);
  fprintf(csv, "# gpus=%d\n", ngpus);
  for (int g = 0; g < ngpus; g++) {
    struct cudaDeviceProp prop;
    CUDA(cudaGetDeviceProperties(&prop, g));
    fprintf(csv, "# gpu%d=%s\n", g, prop.name);
  }
  fprintf(csv, "# command=");
  for (int i = 0; i < argc; i++) fprintf(csv, "%s%s", i ? " " : "", argv[i]);
  fprintf(csv, "\n# coll=allreduce\n# dtype=float32\n# op=sum\n# reps=%d\n# warmup=%d\n# rep_us=%g\n", reps, warmup, rep_us);
  extern char** environ;
  for (char** e = environ; *e; e++)
    if (!strncmp(*e, "NCCL_", 5) || !strncmp(*e, "DPML_", 5) || !strncmp(*e, "CUDA_VISIBLE", 12)) fprintf(csv, "# env %s\n", *e);
  fprintf(csv, "bytes,variant,policy,comm,ranks,nodes,reps,batch,median_us,min_us,max_us,algbw_gbs,busbw_gbs,check,tuner_calls,tuner_choice\n");
  fflush(csv);

  for (int g = 0; g < ngpus; g++) {
    CUDA(cudaSetDevice(g));
    CUDA(cudaStreamCreateWithFlags(&streams[g], cudaStreamNonBlocking));
    CUDA(cudaEventCreate(&ev0[g]));
    CUDA(cudaEventCreate(&ev1[g]));
    CUDA(cudaMalloc((void**)&sendbuf[g], sizes[nsizes - 1]));
    CUDA(cudaMalloc((void**)&recvbuf[g], sizes[nsizes - 1]));
    CUDA(cudaMemset(sendbuf[g], 0x3c + g, sizes[nsizes - 1]));
    CUDA(cudaDeviceSynchronize());
  }
  double t0 = now_s();
  for (int i = 0; i < nvars; i++) {
    double ts = now_s();
    make_comms(&vars[i]);
    fprintf(stderr, "ncclsweep: communicators of %s (DPML_NCCL_POLICY=%s) in %.2f s\n", vars[i].name, vars[i].env, now_s() - ts);
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

  int failed = 0;
  for (int si = 0; si < nsizes; si++) {
    size_t bytes = sizes[si], count = bytes / sizeof(float);
    if (budget_s > 0 && now_s() - t0 > budget_s) {
      fprintf(stderr, "ncclsweep: time budget %.0f s spent: sizes from %zu bytes skipped\n", budget_s, bytes);
      fprintf(csv, "# budget_exhausted_at=%zu\n", bytes);
      break;
    }
    for (int i = 0; i < nvars; i++) {
      variant* v = &vars[i];
      if (check)
        for (int g = 0; g < ngpus; g++) {
          CUDA(cudaSetDevice(g));
          CUDA(cudaMemset(recvbuf[g], 0xff, bytes)); /* NaN: an allreduce that writes nothing fails */
        }
      for (int g = 0; g < ngpus; g++) {
        CUDA(cudaSetDevice(g));
        CUDA(cudaDeviceSynchronize());
      }
      /* The first calls may set up connections (NCCL connects an
       * algorithm at its first use): time a few more for the batch size. */
      run_batch(v, count, warmup > 0 ? warmup : 1);
      v->warm_us = run_batch(v, count, 3);
      v->check = check ? check_result(count) : -1;
      if (v->check == 0) failed = 1;
      v->calls = v->set = 0;
      strcpy(v->choice, stats_fn ? "native" : "-");
    }
    int batch = (int)(rep_us / vars[0].warm_us + 0.5);
    if (batch < 1) batch = 1;
    if (batch > 1000) batch = 1000;
    for (int r = 0; r < reps; r++)
      for (int j = 0; j < nvars; j++) {
        variant* v = &vars[(j + r) % nvars];
        dpml_nccl_stats a, b;
        read_stats(&a);
        v->samples[r] = run_batch(v, count, batch);
        read_stats(&b);
        note_choice(v, &a, &b);
      }
    fprintf(stderr, "%10zu B:", bytes);
    for (int i = 0; i < nvars; i++) {
      variant* v = &vars[i];
      qsort(v->samples, reps, sizeof(double), cmp_double);
      double med = reps % 2 ? v->samples[reps / 2] : 0.5 * (v->samples[reps / 2 - 1] + v->samples[reps / 2]);
      double alg = bytes / (med * 1e-6) / 1e9;
      double bus = alg * 2.0 * (ngpus - 1) / ngpus;
      fprintf(csv, "%zu,%s,%s,%s,%d,1,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%s,%lld,%s\n", bytes, v->name, v->policy, v->comm,
              ngpus, reps, batch, med, v->samples[0], v->samples[reps - 1], alg, bus,
              v->check < 0 ? "skip" : v->check ? "ok" : "fail", stats_fn ? (long long)v->calls : -1LL, v->choice);
      fprintf(stderr, " %s %.1f", v->name, bus);
    }
    fprintf(stderr, " GB/s (bus, batch %d)\n", batch);
    fflush(csv);
  }
  fprintf(csv, "# elapsed_s=%.1f\n", now_s() - t0);
  fclose(csv);
  for (int i = 0; i < nvars; i++)
    for (int g = 0; g < ngpus; g++) ncclCommDestroy(vars[i].comms[g]);
  for (int g = 0; g < ngpus; g++) {
    cudaSetDevice(g);
    cudaFree(sendbuf[g]);
    cudaFree(recvbuf[g]);
  }
  fprintf(stderr, "ncclsweep: wrote %s in %.1f s%s\n", path, now_s() - t0, failed ? " (RESULT CHECKS FAILED)" : "");
  return failed ? 1 : 0;
}
