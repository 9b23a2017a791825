/*
 * tunertest: loads libdpml-nccl-tuner.so with dlopen (as NCCL does:
 * RTLD_NOW | RTLD_LOCAL), and drives every exported ABI version (v7, v6, v5
 * and v4) through init / getCollInfo / getChunkSize / finalize (destroy)
 * with fake cost tables: the answers of the fixed, table, built-in and
 * model policies, and the error paths
 * (bad, missing and inconsistent tables, bad settings, unknown
 * collectives, odd numAlgo / numProto, NULL pointers, CollNet). Run by
 * TestPluginC (plugin_test.go), which writes the tables.
 *
 *   tunertest LIB GOOD_TABLE MODEL_TABLE CONFLICT_TABLE BAD_TABLE   checks; exit 1 on a failure
 *   tunertest LIB GOOD_TABLE bench                                  timings (BENCH lines)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../dpml_nccl_tuner.h"

static int failures;
#define CHECK(cond, ...)                                                  \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "FAIL %s:%d [%s]: ", __FILE__, __LINE__, g_where);  \
      fprintf(stderr, __VA_ARGS__);                                       \
      fputc('\n', stderr);                                                \
      failures++;                                                         \
    }                                                                     \
  } while (0)

static const char* g_where = "";
static void (*g_stats_fn)(dpml_nccl_stats*); /* the plugin's, by dlsym */
static void get_stats(dpml_nccl_stats* s) {
  memset(s, 0, sizeof *s);
  if (g_stats_fn) g_stats_fn(s);
}
static char g_lastlog[1024];
static int g_lastlevel;

static void logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  (void)flags, (void)file, (void)line;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_lastlog, sizeof g_lastlog, fmt, ap);
  va_end(ap);
  g_lastlevel = (int)level;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* One ABI version, as a uniform interface. */
typedef struct {
  int version;
  const ncclTuner_v7_t* v7;
  const ncclTuner_v6_t* v6;
  const ncclTuner_v5_t* v5;
  const ncclTuner_v4_t* v4;
} api;

static ncclResult_t api_init(const api* a, void** ctx, size_t ranks, size_t nodes) {
  if (a->version == 4) return a->v4->init(ranks, nodes, logger, ctx);
  ncclNvlDomainInfo_v5_t nvl = {1, (int)ranks, (int)ranks};
  ncclResult_t r;
  if (a->version == 7) {
    ncclTunerConstants_v7_t k, before;
    memset(&k, 0x3f, sizeof k);
    memcpy(&before, &k, sizeof k);
    r = a->v7->init(ctx, 0xc0ffee, ranks, nodes, logger, &nvl, &k);
    CHECK(memcmp(&k, &before, sizeof k) == 0, "v7 init changed NCCL's tuning constants");
    return r;
  }
  ncclTunerConstants_v5_t k, before;
  memset(&k, 0x3f, sizeof k);
  memcpy(&before, &k, sizeof k);
  r = a->version == 6 ? a->v6->init(ctx, 0xc0ffee, ranks, nodes, logger, &nvl, &k)
                      : a->v5->init(ctx, 0xc0ffee, ranks, nodes, logger, &nvl, &k);
  CHECK(memcmp(&k, &before, sizeof k) == 0, "v%d init changed NCCL's tuning constants", a->version);
  return r;
}

static ncclResult_t api_fin(const api* a, void* ctx) {
  switch (a->version) {
    case 4: return a->v4->destroy(ctx);
    case 6: return a->v6->finalize(ctx);
    case 7: return a->v7->finalize(ctx);
    default: return a->v5->finalize(ctx);
  }
}

static dpml_nccl_getCollInfo_t api_get(const api* a) {
  switch (a->version) {
    case 4: return a->v4->getCollInfo;
    case 6: return a->v6->getCollInfo;
    case 7: return a->v7->getCollInfo;
    default: return a->v5->getCollInfo;
  }
}

/* getChunkSize of v6 and v7 (NULL for older versions). */
static dpml_nccl_getChunkSize_t api_chunk(const api* a) {
  return a->version == 7 ? a->v7->getChunkSize : a->version == 6 ? a->v6->getChunkSize : NULL;
}

/* A cost table as NCCL 2.28.3 builds it for two GPUs on one node: tree and
 * ring with every protocol, the rest -1 (not available). */
static void fake_table(float t[7][3]) {
  for (int a = 0; a < 7; a++)
    for (int p = 0; p < 3; p++) t[a][p] = -1.0f;
  for (int p = 0; p < 3; p++) {
    t[0][p] = 10.0f + p;
    t[1][p] = 5.0f + p;
  }
}

/* Calls getCollInfo on a fresh fake table; returns the channels (the
 * sentinel -7 if untouched) and the table in *out. */
static int ask(const api* a, void* ctx, int coll, size_t bytes, float out[7][3]) {
  float t[7][3];
  fake_table(t);
  int ch = -7;
  ncclResult_t r = api_get(a)(ctx, (ncclFunc_t)coll, bytes, 1, (float**)t, 7, 3, 0, &ch);
  CHECK(r == ncclSuccess, "getCollInfo(coll %d, %zu) = %d, want ncclSuccess", coll, bytes, (int)r);
  if (out) memcpy(out, t, sizeof t);
  return ch;
}

/* The number of table entries that differ from the fake table, and the
 * one that does (if exactly one). */
static int changed(float t[7][3], int* algo, int* proto) {
  float f[7][3];
  fake_table(f);
  int n = 0;
  for (int a = 0; a < 7; a++)
    for (int p = 0; p < 3; p++)
      if (t[a][p] != f[a][p]) {
        n++;
        *algo = a, *proto = p;
      }
  return n;
}

static void* open_ctx(const api* a, const char* policy, const char* table, size_t ranks, size_t nodes) {
  if (policy) setenv("DPML_NCCL_POLICY", policy, 1); else unsetenv("DPML_NCCL_POLICY");
  if (table) setenv("DPML_NCCL_TABLE", table, 1); else unsetenv("DPML_NCCL_TABLE");
  void* ctx = (void*)0x1;
  g_lastlog[0] = 0;
  g_lastlevel = -1;
  ncclResult_t r = api_init(a, &ctx, ranks, nodes);
  CHECK(r == ncclSuccess, "init(%s, %s) = %d, want ncclSuccess (a failing init fails the communicator)", policy ? policy : "-", table ? table : "-", (int)r);
  CHECK(ctx != (void*)0x1, "init did not set the context");
  return ctx;
}

static void expect_native(const api* a, void* ctx, const char* what) {
  static const size_t sizes[] = {0, 1, 8, 4096, 65536, 1 << 20, 16 << 20, 1ull << 30, (size_t)-1};
  for (int coll = 0; coll < 5; coll++)
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      float t[7][3];
      int ch = ask(a, ctx, coll, sizes[i], t), al, pr;
      CHECK(ch == -7 && changed(t, &al, &pr) == 0, "%s: coll %d %zu bytes: channels %d, %d table entries changed; want NCCL's default", what, coll, sizes[i], ch, changed(t, &al, &pr));
    }
}

static void expect(const api* a, void* ctx, int coll, size_t bytes, int want_ch, int want_algo, int want_proto) {
  float t[7][3];
  int ch = ask(a, ctx, coll, bytes, t), al = -1, pr = -1;
  int n = changed(t, &al, &pr);
  if (want_algo < 0) {
    CHECK(n == 0, "coll %d %zu bytes: %d table entries changed, want none", coll, bytes, n);
  } else {
    CHECK(n == 1 && al == want_algo && pr == want_proto && t[al][pr] == 0.0f,
          "coll %d %zu bytes: table changed %d entries (last [%d][%d]), want [%d][%d] lowered to 0", coll, bytes, n, al, pr, want_algo, want_proto);
  }
  CHECK(ch == (want_ch ? want_ch : -7), "coll %d %zu bytes: channels %d, want %d", coll, bytes, ch, want_ch ? want_ch : -7);
}

static void test_api(const api* a, char** tables) {
  const char *good = tables[0], *withmodel = tables[1], *conflict = tables[2], *bad = tables[3];
  char where[64];
  snprintf(where, sizeof where, "v%d", a->version);
  g_where = where;

  /* off: NCCL's default everywhere. */
  void* ctx = open_ctx(a, "off", good, 2, 1);
  expect_native(a, ctx, "policy off");
  CHECK(api_fin(a, ctx) == ncclSuccess, "finalize");

  /* fixed 8: every collective and size; unknown collectives untouched. */
  ctx = open_ctx(a, "8", NULL, 2, 1);
  expect(a, ctx, 4, 4096, 8, -1, -1);
  expect(a, ctx, 4, 1ull << 30, 8, -1, -1);
  expect(a, ctx, 0, 1 << 20, 8, -1, -1);
  expect(a, ctx, 4, 0, 8, -1, -1);
  expect(a, ctx, 4, (size_t)-1, 8, -1, -1);
  for (int coll = -1; coll <= 15; coll += 16) { /* -1 and 15: not collectives NCCL tunes */
    float t[7][3];
    int ch = ask(a, ctx, coll, 1 << 20, t), al, pr;
    CHECK(ch == -7 && changed(t, &al, &pr) == 0, "unknown collective %d: channels %d", coll, ch);
  }
  {
    float t[7][3];
    fake_table(t);
    t[2][2] = 3.0f; /* CollNet may run: NCCL would not cap our count */
    int ch = -7;
    api_get(a)(ctx, ncclFuncAllReduce, 1 << 20, 1, (float**)t, 7, 3, 0, &ch);
    CHECK(ch == -7, "CollNet allowed: channels %d, want untouched", ch);
    /* NULL pointers: no crash, nothing written. */
    CHECK(api_get(a)(ctx, ncclFuncAllReduce, 1 << 20, 1, (float**)t, 7, 3, 0, NULL) == ncclSuccess, "NULL nChannels");
    ch = -7;
    CHECK(api_get(a)(ctx, ncclFuncAllReduce, 1 << 20, 1, NULL, 7, 3, 0, &ch) == ncclSuccess && ch == -7, "NULL table: channels %d, want untouched", ch);
    ch = -7;
    CHECK(api_get(a)(NULL, ncclFuncAllReduce, 1 << 20, 1, (float**)t, 7, 3, 0, &ch) == ncclSuccess && ch == -7, "NULL context: channels %d", ch);
    /* Odd geometries: a table of numAlgo x numProto floats, nothing outside it. */
    for (int na = -1; na <= 70; na += 71) {
      ch = -7;
      api_get(a)(ctx, ncclFuncAllReduce, 1 << 20, 1, (float**)t, na, 3, 0, &ch);
      CHECK(ch == -7, "numAlgo %d: channels %d, want untouched", na, ch);
      ch = -7;
      api_get(a)(ctx, ncclFuncAllReduce, 1 << 20, 1, (float**)t, 7, na, 0, &ch);
      CHECK(ch == -7, "numProto %d: channels %d, want untouched", na, ch);
    }
  }
  CHECK(api_fin(a, ctx) == ncclSuccess, "finalize");

  /* fixed 16/ring/simple: the [ring][simple] entry is lowered, channels set. */
  ctx = open_ctx(a, "16/ring/simple", NULL, 2, 1);
  expect(a, ctx, 4, 1 << 20, 16, 1, 2);
  {
    float t[7][3], small[2 * 3];
    int ch;
    fake_table(t);
    t[1][2] = -1.0f; /* not allowed: left alone, channels still set */
    ch = -7;
    api_get(a)(ctx, ncclFuncAllReduce, 1 << 20, 1, (float**)t, 7, 3, 0, &ch);
    CHECK(t[1][2] == -1.0f && ch == 16, "disallowed entry: [1][2] = %g, channels %d", t[1][2], ch);
    /* numAlgo 2 x numProto 3: ring/simple is element 1*3+2. */
    for (int i = 0; i < 6; i++) small[i] = 1.0f;
    ch = -7;
    api_get(a)(ctx, ncclFuncAllReduce, 1 << 20, 1, (float**)small, 2, 3, 0, &ch);
    CHECK(small[5] == 0.0f && small[4] == 1.0f && ch == 16, "2x3 table: element 5 = %g, channels %d", small[5], ch);
    /* numAlgo 1: ring is outside the table; numProto 2: simple is. */
    for (int i = 0; i < 6; i++) small[i] = 1.0f;
    ch = -7;
    api_get(a)(ctx, ncclFuncAllReduce, 1 << 20, 1, (float**)small, 1, 3, 0, &ch);
    CHECK(small[0] == 1.0f && small[1] == 1.0f && small[2] == 1.0f && ch == 16, "1x3 table written or channels %d", ch);
    for (int i = 0; i < 6; i++) small[i] = 1.0f;
    small[4] = small[5] = -1.0f; /* row 2 is CollNet direct: not available */
    ch = -7;
    api_get(a)(ctx, ncclFuncAllReduce, 1 << 20, 1, (float**)small, 3, 2, 0, &ch);
    int untouched = small[4] == -1.0f && small[5] == -1.0f;
    for (int i = 0; i < 4; i++) untouched &= small[i] == 1.0f;
    CHECK(untouched && ch == 16, "3x2 table written or channels %d", ch);
    small[4] = 2.0f; /* CollNet direct available in a 3x2 table: no count */
    ch = -7;
    api_get(a)(ctx, ncclFuncAllReduce, 1 << 20, 1, (float**)small, 3, 2, 0, &ch);
    CHECK(ch == -7, "3x2 table with CollNet: channels %d, want untouched", ch);
    /* NULL nChannels: the table is still steered. */
    fake_table(t);
    api_get(a)(ctx, ncclFuncAllReduce, 1 << 20, 1, (float**)t, 7, 3, 0, NULL);
    CHECK(t[1][2] == 0.0f, "NULL nChannels: table not steered");
    /* A forced ring makes CollNet impossible: the count is set. */
    fake_table(t);
    t[2][2] = 3.0f;
    ch = -7;
    api_get(a)(ctx, ncclFuncAllReduce, 1 << 20, 1, (float**)t, 7, 3, 0, &ch);
    CHECK(ch == 16 && t[1][2] == 0.0f, "ring forced, CollNet allowed: channels %d", ch);
  }
  CHECK(api_fin(a, ctx) == ncclSuccess, "finalize");

  ctx = open_ctx(a, "8/collnet_direct/simple", NULL, 2, 1);
  {
    float t[7][3];
    fake_table(t);
    t[2][2] = 3.0f;
    int ch = -7;
    api_get(a)(ctx, ncclFuncAllReduce, 1 << 20, 1, (float**)t, 7, 3, 0, &ch);
    CHECK(ch == -7 && t[2][2] == 0.0f, "CollNet forced: channels %d (want untouched), entry %g", ch, t[2][2]);
  }
  CHECK(api_fin(a, ctx) == ncclSuccess, "finalize");

  /* The good table (plugin_test.go): allreduce 1x2: 2^12 native, 2^13 2,
   * 2^16 4, 2^20 16/ring/ll128, 2^24 32; allgather 1x2: 2^20 2;
   * allreduce 1x4: 2^20 8. No model: other collectives are NCCL's. */
  ctx = open_ctx(a, "auto", good, 2, 1);
  CHECK(g_lastlevel == NCCL_LOG_INFO && strstr(g_lastlog, "table") != NULL, "init log: level %d: %s", g_lastlevel, g_lastlog);
  expect(a, ctx, 4, 1024, 0, -1, -1);    /* below the smallest entry */
  expect(a, ctx, 4, 8191, 0, -1, -1);    /* 2^12: native */
  expect(a, ctx, 4, 8192, 2, -1, -1);    /* 2^13: the bucket starts exactly here */
  expect(a, ctx, 4, 16383, 2, -1, -1);
  expect(a, ctx, 4, 32768, 4, -1, -1);   /* 2^15: nearer 2^16 */
  expect(a, ctx, 4, 65536, 4, -1, -1);
  expect(a, ctx, 4, 131071, 4, -1, -1);
  expect(a, ctx, 4, 1 << 20, 16, 1, 1);  /* ring/ll128 */
  expect(a, ctx, 4, 2 << 20, 16, 1, 1);  /* 2^21: nearer 2^20 */
  expect(a, ctx, 4, 4 << 20, 16, 1, 1);  /* 2^22: a tie, the smaller */
  expect(a, ctx, 4, 8 << 20, 32, -1, -1);
  expect(a, ctx, 4, 1ull << 30, 32, -1, -1); /* above the largest: its answer */
  expect(a, ctx, 4, (size_t)-1, 32, -1, -1);
  expect(a, ctx, 2, 1 << 20, 2, -1, -1);  /* allgather */
  expect(a, ctx, 0, 1 << 20, 0, -1, -1);  /* broadcast: no entries, no model */
  CHECK(api_fin(a, ctx) == ncclSuccess, "finalize");
  ctx = open_ctx(a, "auto", good, 4, 1); /* another layout: its own entries */
  expect(a, ctx, 4, 1 << 20, 8, -1, -1);
  expect(a, ctx, 4, 65536, 0, -1, -1);
  CHECK(api_fin(a, ctx) == ncclSuccess, "finalize");
  ctx = open_ctx(a, "auto", good, 2, 2); /* no entries for 2 nodes x 1 */
  expect_native(a, ctx, "layout without entries");
  CHECK(api_fin(a, ctx) == ncclSuccess, "finalize");
  ctx = open_ctx(a, "model", good, 2, 1); /* model: the table is ignored */
  {
    int small = ask(a, ctx, 4, 4096, NULL), big = ask(a, ctx, 4, 1ull << 30, NULL);
    CHECK(small >= 1 && small <= 2 && big >= 16 && big <= 64, "model: 4 KiB -> %d, 1 GiB -> %d channels", small, big);
  }
  CHECK(api_fin(a, ctx) == ncclSuccess, "finalize");

  /* A table with a model: uncovered collectives take the model's answer
   * (the test's model makes every extra channel expensive: 1 channel). */
  ctx = open_ctx(a, "auto", withmodel, 2, 1);
  expect(a, ctx, 4, 1 << 20, 16, -1, -1);
  expect(a, ctx, 0, 1 << 20, 1, -1, -1);
  CHECK(api_fin(a, ctx) == ncclSuccess, "finalize");

  /* Errors: NCCL's default for every call, init still succeeds, a warning. */
  const char* errs[][2] = {{"auto", bad}, {"auto", "/nonexistent/dpml-table.json"}, {"auto", conflict},
                           {"banana", NULL}, {"65", NULL}, {"8/ring", NULL}, {"8/ring/fast", NULL}, {"auto", "/"}};
  for (unsigned i = 0; i < sizeof errs / sizeof errs[0]; i++) {
    dpml_nccl_stats st0, st1;
    get_stats(&st0);
    ctx = open_ctx(a, errs[i][0], errs[i][1], 2, 1);
    get_stats(&st1);
    CHECK(ctx != NULL, "error case %u: want a context (answering NCCL's default)", i);
    CHECK(g_lastlevel == NCCL_LOG_WARN, "error case %u (%s, %s): log level %d, want WARN: %s", i, errs[i][0], errs[i][1] ? errs[i][1] : "-", g_lastlevel, g_lastlog);
    CHECK(st1.failed_inits == st0.failed_inits + 1, "error case %u: failed_inits not counted", i);
    expect_native(a, ctx, errs[i][0]);
    CHECK(api_fin(a, ctx) == ncclSuccess, "finalize");
  }

  /* The built-in data (nccl/builtin_*.json) for 2 x NVIDIA H200 on NVLink:
   * allreduce gets 2 channels at 2^15 and 32 from 2^21 to 2^30, NCCL's
   * choice at the other buckets; reduce-scatter and allgather 32 at 32 MiB;
   * for 4 x H200 allreduce 32 at 2^22..2^25 and NCCL's above. The machine
   * comes from DPML_NCCL_GPU / DPML_NCCL_LINK here (NVML is pointed at a
   * missing library by main). */
  setenv("DPML_NCCL_GPU", "nvidia  H200", 1); /* case and spaces do not matter */
  setenv("DPML_NCCL_LINK", "NVLink", 1);
  ctx = open_ctx(a, NULL, NULL, 2, 1);
  CHECK(g_lastlevel == NCCL_LOG_INFO && strstr(g_lastlog, "built-in data for 2 x NVIDIA H200 (nvlink") != NULL, "built-in init log: %s", g_lastlog);
  expect(a, ctx, 4, (2 << 20) - 1, 0, -1, -1); /* below 2 MiB: NCCL's */
  expect(a, ctx, 4, 2 << 20, 32, -1, -1);
  expect(a, ctx, 4, 32 << 20, 32, -1, -1);
  expect(a, ctx, 4, (2ull << 30) - 1, 32, -1, -1); /* the 2^30 bucket */
  expect(a, ctx, 4, 2ull << 30, 0, -1, -1);        /* not measured above it */
  expect(a, ctx, 4, 1 << 15, 2, -1, -1);
  expect(a, ctx, 4, 1 << 16, 0, -1, -1);
  expect(a, ctx, 3, 32 << 20, 32, -1, -1); /* reduce-scatter */
  expect(a, ctx, 2, 32 << 20, 32, -1, -1); /* allgather */
  expect(a, ctx, 0, 32 << 20, 0, -1, -1);  /* broadcast: not measured */
  CHECK(api_fin(a, ctx) == ncclSuccess, "finalize");
  ctx = open_ctx(a, "auto", NULL, 4, 1);
  CHECK(strstr(g_lastlog, "built-in data for 4 x NVIDIA H200 (nvlink") != NULL, "4 GPUs: %s", g_lastlog);
  expect(a, ctx, 4, 4 << 20, 32, -1, -1);
  expect(a, ctx, 4, 1ull << 30, 0, -1, -1);
  CHECK(api_fin(a, ctx) == ncclSuccess, "finalize");
  ctx = open_ctx(a, "auto", NULL, 3, 1); /* 3 GPUs: no data */
  CHECK(strstr(g_lastlog, "no built-in data for 3 x nvidia H200 (nvlink") != NULL, "3 GPUs: %s", g_lastlog);
  expect_native(a, ctx, "3 x H200");
  CHECK(api_fin(a, ctx) == ncclSuccess, "finalize");
  ctx = open_ctx(a, "auto", NULL, 2, 2); /* 2 nodes: no data */
  expect_native(a, ctx, "2 nodes x 1 H200");
  CHECK(api_fin(a, ctx) == ncclSuccess, "finalize");
  setenv("DPML_NCCL_LINK", "pcie", 1);
  ctx = open_ctx(a, NULL, NULL, 2, 1);
  expect_native(a, ctx, "2 x H200 on PCIe");
  CHECK(api_fin(a, ctx) == ncclSuccess, "finalize");
  setenv("DPML_NCCL_GPU", "NVIDIA A100-SXM4-80GB", 1);
  setenv("DPML_NCCL_LINK", "nvlink", 1);
  ctx = open_ctx(a, NULL, NULL, 2, 1);
  expect_native(a, ctx, "2 x A100");
  CHECK(api_fin(a, ctx) == ncclSuccess, "finalize");
  unsetenv("DPML_NCCL_GPU");
  unsetenv("DPML_NCCL_LINK");
  ctx = open_ctx(a, NULL, NULL, 2, 1); /* unknown machine (no NVML): NCCL's default, not an error */
  CHECK(g_lastlevel == NCCL_LOG_INFO && strstr(g_lastlog, "no built-in data") != NULL, "unknown machine: level %d: %s", g_lastlevel, g_lastlog);
  expect_native(a, ctx, "unknown machine");
  CHECK(api_fin(a, ctx) == ncclSuccess, "finalize");

  /* getChunkSize (v6, v7): NCCL's chunk size stays; never an error. */
  if (api_chunk(a) != NULL) {
    ctx = open_ctx(a, "8", NULL, 2, 1);
    for (int coll = -1; coll <= 5; coll++) {
      size_t chunk = 131072;
      CHECK(api_chunk(a)(ctx, (ncclFunc_t)coll, 1 << 20, 1, 2, 8, &chunk) == ncclSuccess && chunk == 131072, "getChunkSize coll %d: chunk %zu", coll, chunk);
    }
    size_t chunk = 4096;
    CHECK(api_chunk(a)(NULL, ncclFuncAllReduce, 1 << 20, 1, 2, 8, &chunk) == ncclSuccess && chunk == 4096, "getChunkSize NULL context");
    CHECK(api_chunk(a)(ctx, ncclFuncAllReduce, 1 << 20, 1, 2, 8, NULL) == ncclSuccess, "getChunkSize NULL chunk");
    CHECK(api_chunk(a)(ctx, ncclFuncAllReduce, 0, -1, -1, 0, &chunk) == ncclSuccess && chunk == 4096, "getChunkSize odd arguments");
    CHECK(api_fin(a, ctx) == ncclSuccess, "finalize");
  } else {
    CHECK(a->version <= 5, "v%d has no getChunkSize", a->version);
  }

  /* NULL context pointer and NULL context. */
  if (a->version == 4) {
    CHECK(a->v4->init(2, 1, logger, NULL) == ncclSuccess, "init(NULL ctx)");
  } else {
    ncclResult_t (*init5)(void**, uint64_t, size_t, size_t, ncclDebugLogger_t, ncclNvlDomainInfo_v5_t*, void*) =
        a->version == 7 ? (void*)a->v7->init : a->version == 6 ? (void*)a->v6->init : (void*)a->v5->init;
    CHECK(init5(NULL, 1, 2, 1, NULL, NULL, NULL) == ncclSuccess, "init(NULL ctx)");
    void* c2 = (void*)0x1;
    setenv("DPML_NCCL_POLICY", "8", 1);
    CHECK(init5(&c2, 1, 2, 1, NULL, NULL, NULL) == ncclSuccess && c2 != NULL, "init without logger and constants");
    CHECK(ask(a, c2, 4, 1 << 20, NULL) == 8, "context made without logger");
    api_fin(a, c2);
  }
  CHECK(api_fin(a, NULL) == ncclSuccess, "finalize(NULL)");
  g_where = "";
}

/* Several threads make communicators at once (NCCL's grouped init runs
 * one thread per communicator). */
static const api* g_api;
static void* worker(void* arg) {
  (void)arg;
  for (int i = 0; i < 100; i++) {
    void* ctx = NULL;
    ncclResult_t r = g_api->v5->init(&ctx, i, 2, 1, NULL, NULL, NULL);
    int ch = -7;
    float t[7][3];
    fake_table(t);
    g_api->v5->getCollInfo(ctx, ncclFuncAllReduce, 1 << 20, 1, (float**)t, 7, 3, 0, &ch);
    if (r != ncclSuccess || ch != 16) __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
    g_api->v5->finalize(ctx);
  }
  return NULL;
}

/* load opens the library and finds every version: apis[0..3] = v7, v6, v5, v4. */
static int load_all(const char* lib, void** h, api apis[4], double* dt) {
  double t0 = now_s();
  *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  *dt = now_s() - t0;
  if (*h == NULL) {
    fprintf(stderr, "dlopen %s: %s\n", lib, dlerror());
    return -1;
  }
  memset(apis, 0, 4 * sizeof(api));
  apis[0].version = 7;
  apis[0].v7 = (const ncclTuner_v7_t*)dlsym(*h, "ncclTunerPlugin_v7");
  apis[1].version = 6;
  apis[1].v6 = (const ncclTuner_v6_t*)dlsym(*h, "ncclTunerPlugin_v6");
  apis[2].version = 5;
  apis[2].v5 = (const ncclTuner_v5_t*)dlsym(*h, "ncclTunerPlugin_v5");
  apis[3].version = 4;
  apis[3].v4 = (const ncclTuner_v4_t*)dlsym(*h, "ncclTunerPlugin_v4");
  if (!apis[0].v7 || !apis[1].v6 || !apis[2].v5 || !apis[3].v4) {
    fprintf(stderr, "missing a symbol: ncclTunerPlugin_v7 %p, _v6 %p, _v5 %p, _v4 %p\n", (void*)apis[0].v7, (void*)apis[1].v6,
            (void*)apis[2].v5, (void*)apis[3].v4);
    return -1;
  }
  if (dlsym(*h, "ncclTunerPlugin_v8") != NULL || dlsym(*h, "ncclTunerPlugin_v3") != NULL) {
    fprintf(stderr, "exports a tuner version it does not implement (v8 or v3)\n");
    return -1;
  }
  return 0;
}

static int load(const char* lib, void** h, api* v5, api* v4, double* dt) {
  api apis[4];
  if (load_all(lib, h, apis, dt) != 0) return -1;
  *v5 = apis[2];
  *v4 = apis[3];
  return 0;
}

static int bench(const char* lib, const char* table) {
  void* h;
  api v5, v4;
  double tl;
  if (load(lib, &h, &v5, &v4, &tl) != 0) return 1;
  setenv("DPML_NCCL_POLICY", "auto", 1);
  setenv("DPML_NCCL_TABLE", table, 1);
  void* ctx = NULL;
  double t0 = now_s();
  v5.v5->init(&ctx, 1, 2, 1, NULL, NULL, NULL); /* the first call into Go: the runtime is up by now */
  double tfirst = now_s() - t0;
  v5.v5->finalize(ctx);
  int n = 200;
  t0 = now_s();
  for (int i = 0; i < n; i++) {
    v5.v5->init(&ctx, i, 2, 1, NULL, NULL, NULL);
    v5.v5->finalize(ctx);
  }
  double tinit = (now_s() - t0) / n;
  setenv("DPML_NCCL_POLICY", "model", 1);
  t0 = now_s();
  for (int i = 0; i < n; i++) {
    v5.v5->init(&ctx, i, 2, 1, NULL, NULL, NULL);
    v5.v5->finalize(ctx);
  }
  double tmodel = (now_s() - t0) / n;
  setenv("DPML_NCCL_POLICY", "auto", 1);
  v5.v5->init(&ctx, 1, 2, 1, NULL, NULL, NULL);
  float t[7][3];
  fake_table(t);
  int ch = 0;
  long calls = 20 * 1000 * 1000;
  long sum = 0;
  t0 = now_s();
  for (long i = 0; i < calls; i++) {
    ch = 0;
    v5.v5->getCollInfo(ctx, ncclFuncAllReduce, (size_t)1 << (i & 31), 1, (float**)t, 7, 3, 0, &ch);
    sum += ch;
  }
  double tcall = (now_s() - t0) / calls;
  v5.v5->finalize(ctx);
  printf("BENCH dlopen_us=%.0f first_init_us=%.0f init_table_us=%.1f init_model_us=%.1f getcollinfo_ns=%.1f (checksum %ld)\n",
         tl * 1e6, tfirst * 1e6, tinit * 1e6, tmodel * 1e6, tcall * 1e9, sum);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 4 && strcmp(argv[3], "bench") == 0) return bench(argv[1], argv[2]);
  if (argc != 6) {
    fprintf(stderr, "usage: tunertest LIB GOOD MODEL CONFLICT BAD | tunertest LIB GOOD bench\n");
    return 2;
  }
  void* h;
  api v5, v4, apis[4];
  double tl;
  setenv("DPML_NCCL_NVML", "/nonexistent/libnvidia-ml.so.1", 1); /* no machine detection here */
  unsetenv("DPML_NCCL_GPU");
  unsetenv("DPML_NCCL_LINK");
  if (load_all(argv[1], &h, apis, &tl) != 0) return 1;
  v5 = apis[2];
  v4 = apis[3];
  CHECK(strcmp(apis[0].v7->name, "dpml") == 0 && strcmp(apis[1].v6->name, "dpml") == 0 && strcmp(v5.v5->name, "dpml") == 0 &&
            strcmp(v4.v4->name, "dpml") == 0,
        "names %s, %s, %s, %s", apis[0].v7->name, apis[1].v6->name, v5.v5->name, v4.v4->name);
  g_stats_fn = (void (*)(dpml_nccl_stats*))dlsym(h, "dpml_nccl_tuner_stats");
  CHECK(g_stats_fn != NULL, "dpml_nccl_tuner_stats not exported");
  dpml_nccl_stats s0, s1;
  get_stats(&s0);
  for (int i = 0; i < 4; i++) test_api(&apis[i], argv + 2);
  {
    get_stats(&s1);
    CHECK(s1.calls > s0.calls + 100 && s1.set_channels > 0 && s1.set_algo > 0 && s1.inits > s0.inits,
          "stats: calls %llu -> %llu, set_channels %llu, set_algo %llu", (unsigned long long)s0.calls,
          (unsigned long long)s1.calls, (unsigned long long)s1.set_channels, (unsigned long long)s1.set_algo);
  }

  /* Threads. */
  g_api = &v5;
  setenv("DPML_NCCL_POLICY", "auto", 1);
  setenv("DPML_NCCL_TABLE", argv[2], 1);
  pthread_t th[8];
  for (int i = 0; i < 8; i++) pthread_create(&th[i], NULL, worker, NULL);
  for (int i = 0; i < 8; i++) pthread_join(th[i], NULL);

  /* NCCL closes the library when its last communicator goes and opens it
   * again for the next one. */
  dlclose(h);
  if (load(argv[1], &h, &v5, &v4, &tl) != 0) return 1;
  g_stats_fn = (void (*)(dpml_nccl_stats*))dlsym(h, "dpml_nccl_tuner_stats");
  g_where = "reopened";
  void* ctx = open_ctx(&v5, "8", NULL, 2, 1);
  expect(&v5, ctx, 4, 1 << 20, 8, -1, -1);
  api_fin(&v5, ctx);

  if (failures) {
    fprintf(stderr, "%d failures\n", failures);
    return 1;
  }
  printf("PASS tunertest\n");
  return 0;
}
