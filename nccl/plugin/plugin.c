/*
 * The C half of libdpml-nccl-tuner.so: the symbols NCCL looks up, and the
 * per-call path. init hands the layout and the settings to Go once
 * (dpmlNcclFill computes one answer per collective and size bucket); every
 * getCollInfo after that is a table lookup here, in C, without entering
 * the Go runtime. Nothing here ever fails a communicator or a collective:
 * see doc.go for why every error answers "NCCL's default" with ncclSuccess.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpml_nccl_tuner.h"
#include "_cgo_export.h"

/* The layouts of NCCL 2.28.3's headers (dpml_nccl_tuner.h says which). */
_Static_assert(sizeof(ncclResult_t) == sizeof(int), "ncclResult_t is int-sized");
_Static_assert(sizeof(ncclFunc_t) == sizeof(int), "ncclFunc_t is int-sized");
_Static_assert(sizeof(ncclNvlDomainInfo_v5_t) == 12, "ncclNvlDomainInfo_v5_t: 3 ints");
_Static_assert(sizeof(ncclTunerConstants_v5_t) == 1152, "ncclTunerConstants_v5_t of NCCL 2.28.3");
_Static_assert(offsetof(ncclTuner_v5_t, init) == 8 && offsetof(ncclTuner_v5_t, getCollInfo) == 16 &&
                   offsetof(ncclTuner_v5_t, finalize) == 24 && sizeof(ncclTuner_v5_t) == 32,
               "ncclTuner_v5_t: name, init, getCollInfo, finalize");
_Static_assert(offsetof(ncclTuner_v4_t, init) == 8 && offsetof(ncclTuner_v4_t, getCollInfo) == 16 &&
                   offsetof(ncclTuner_v4_t, destroy) == 24 && sizeof(ncclTuner_v4_t) == 32,
               "ncclTuner_v4_t: name, init, getCollInfo, destroy");
_Static_assert(sizeof(size_t) == sizeof(unsigned long long), "64-bit size_t (the bucket uses clzll)");
_Static_assert(sizeof(dpml_nccl_choice) == 4, "dpml_nccl_choice is 4 bytes");

#define RELAXED __ATOMIC_RELAXED

/* count adds one to a statistics counter without a locked instruction: a
 * relaxed load and store. Two threads counting at once may lose an
 * increment; the counters are diagnostics, and a locked add on every call
 * would cost more than the rest of the call. */
#define count(field) __atomic_store_n(&(field), __atomic_load_n(&(field), RELAXED) + 1, RELAXED)

static dpml_nccl_stats g_stats;
static int g_warned; /* one stderr line per process for a failed init */

void dpml_nccl_tuner_stats(dpml_nccl_stats* out) {
  if (out == NULL) return;
  out->inits = __atomic_load_n(&g_stats.inits, RELAXED);
  out->failed_inits = __atomic_load_n(&g_stats.failed_inits, RELAXED);
  out->calls = __atomic_load_n(&g_stats.calls, RELAXED);
  out->set_channels = __atomic_load_n(&g_stats.set_channels, RELAXED);
  out->set_algo = __atomic_load_n(&g_stats.set_algo, RELAXED);
  out->last_bytes = __atomic_load_n(&g_stats.last_bytes, RELAXED);
  out->last_coll = __atomic_load_n(&g_stats.last_coll, RELAXED);
  out->last_channels = __atomic_load_n(&g_stats.last_channels, RELAXED);
  out->last_algo = __atomic_load_n(&g_stats.last_algo, RELAXED);
  out->last_proto = __atomic_load_n(&g_stats.last_proto, RELAXED);
}

static void set_native(dpml_nccl_ctx* c) {
  for (int f = 0; f < DPML_NCCL_NUM_FUNCS; f++)
    for (int b = 0; b < DPML_NCCL_BUCKETS; b++) {
      c->choice[f][b].algo = -1;
      c->choice[f][b].proto = -1;
      c->choice[f][b].channels = 0;
      c->choice[f][b].pad = 0;
    }
}

/* The environment is read here with getenv, not by Go: Go's os.Getenv
 * sees a copy of the environment taken when the library was loaded, and a
 * program (the sweep tool) may change the settings between communicators. */
static ncclResult_t init_common(void** context, uint64_t commId, size_t nRanks, size_t nNodes,
                                ncclDebugLogger_t log, int version) {
  count(g_stats.inits);
  if (context == NULL) return ncclSuccess; /* nowhere to put a context: NCCL's default */
  *context = NULL;
  dpml_nccl_ctx* c = (dpml_nccl_ctx*)calloc(1, sizeof *c);
  if (c == NULL) return ncclSuccess; /* a NULL context answers NCCL's default */
  c->commId = commId;
  c->log = log;
  c->nRanks = nRanks;
  c->nNodes = nNodes;
  set_native(c);
  const char* v = getenv("DPML_VERBOSE");
  c->verbose = v ? atoi(v) : 0;
  if (c->verbose < 0 || c->verbose > 2) c->verbose = 0;
  if (dpmlNcclFill(c, nRanks, nNodes, (char*)getenv("DPML_NCCL_POLICY"), (char*)getenv("DPML_NCCL_TABLE")) != 0) {
    c->failed = 1;
    set_native(c); /* whatever Go left, the answer is NCCL's default */
    count(g_stats.failed_inits);
  }
  c->msg[DPML_NCCL_MSG - 1] = 0;
  if (log != NULL)
    log(c->failed ? NCCL_LOG_WARN : NCCL_LOG_INFO, DPML_NCCL_LOG_TUNING, __FILE__, __LINE__,
        "TUNER/dpml v%d comm %llx: %s", version, (unsigned long long)commId, c->msg);
  if (c->failed && (c->verbose > 0 || !__atomic_exchange_n(&g_warned, 1, RELAXED)))
    fprintf(stderr, "libdpml-nccl-tuner: %s\n", c->msg);
  c->magic = DPML_NCCL_MAGIC;
  *context = c;
  return ncclSuccess;
}

static ncclResult_t init_v5(void** context, uint64_t commId, size_t nRanks, size_t nNodes,
                            ncclDebugLogger_t log, ncclNvlDomainInfo_v5_t* nvl,
                            ncclTunerConstants_v5_t* constants) {
  (void)nvl;       /* the layout the policy needs is nRanks and nNodes */
  (void)constants; /* left as NCCL set them: the plugin steers per call */
  return init_common(context, commId, nRanks, nNodes, log, 5);
}

static ncclResult_t init_v4(size_t nRanks, size_t nNodes, ncclDebugLogger_t log, void** context) {
  return init_common(context, 0, nRanks, nNodes, log, 4);
}

static int is_collnet(int a) {
  return a == DPML_NCCL_ALGO_COLLNET_DIRECT || a == DPML_NCCL_ALGO_COLLNET_CHAIN;
}

/* The per-call path. NCCL 2.28.3 propagates a non-zero return of
 * getCollInfo as the collective's error (enqueue.cc wraps the call in
 * NCCLCHECK), so this function returns ncclSuccess always and answers
 * "NCCL's default" by leaving *nChannels and the table untouched. */
static ncclResult_t get_coll_info(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                                  float** collCostTable, int numAlgo, int numProto, int regBuff,
                                  int* nChannels) {
  (void)numPipeOps; /* ignored, like regBuff: the answer depends only on what every rank */
  (void)regBuff;    /* sees alike (collective, size, layout), so the ranks agree */
  count(g_stats.calls);
  dpml_nccl_ctx* c = (dpml_nccl_ctx*)context;
  if (c == NULL || c->magic != DPML_NCCL_MAGIC) return ncclSuccess;
  if ((unsigned)collType >= DPML_NCCL_NUM_FUNCS) return ncclSuccess;
  unsigned b = nBytes > 1 ? 63u - (unsigned)__builtin_clzll((unsigned long long)nBytes) : 0u;
  dpml_nccl_choice ch = c->choice[collType][b];
  if (ch.channels == 0 && ch.algo < 0) return ncclSuccess;

  /* NCCL hands a contiguous float[numAlgo][numProto] cast to float**. */
  float* t = (float*)collCostTable;
  int tableOK = t != NULL && numAlgo >= 1 && numAlgo <= 64 && numProto >= 1 && numProto <= 64;
  int algo = -1, proto = -1, channels = 0;
  if (tableOK && ch.algo >= 0 && ch.proto >= 0 && ch.algo < numAlgo && ch.proto < numProto) {
    float* e = &t[ch.algo * numProto + ch.proto];
    if (*e >= 0.0f) { /* allowed (NCCL marks the others -1.0; NaN fails too) */
      *e = 0.0f;      /* the lowest cost: NCCL's minimum search takes it */
      algo = ch.algo;
      proto = ch.proto;
    }
  }
  if (ch.channels > 0 && nChannels != NULL && tableOK) {
    /* NCCL 2.28.3 caps the tuner's count at the communicator's channels
     * for every algorithm but CollNet, whose tasks take it as it is: set
     * no count where CollNet may run. Without a table that cannot be told,
     * hence tableOK. */
    int collnet = 0;
    if (algo >= 0) {
      collnet = is_collnet(algo);
    } else {
      for (int a = DPML_NCCL_ALGO_COLLNET_DIRECT; a <= DPML_NCCL_ALGO_COLLNET_CHAIN && a < numAlgo; a++)
        for (int p = 0; p < numProto; p++)
          if (t[a * numProto + p] >= 0.0f) collnet = 1;
    }
    if (!collnet) {
      *nChannels = ch.channels;
      channels = ch.channels;
    }
  }
  if (channels == 0 && algo < 0) return ncclSuccess;
  if (channels) count(g_stats.set_channels);
  if (algo >= 0) count(g_stats.set_algo);
  __atomic_store_n(&g_stats.last_bytes, (uint64_t)nBytes, RELAXED);
  __atomic_store_n(&g_stats.last_coll, (int32_t)collType, RELAXED);
  __atomic_store_n(&g_stats.last_channels, (int32_t)channels, RELAXED);
  __atomic_store_n(&g_stats.last_algo, (int32_t)algo, RELAXED);
  __atomic_store_n(&g_stats.last_proto, (int32_t)proto, RELAXED);
  if (c->verbose >= 2 && c->log != NULL)
    c->log(NCCL_LOG_TRACE, DPML_NCCL_LOG_TUNING, __FILE__, __LINE__,
           "TUNER/dpml coll %d bytes %zu: channels %d algo %d proto %d", (int)collType, nBytes,
           channels, algo, proto);
  return ncclSuccess;
}

static ncclResult_t finalize(void* context) {
  dpml_nccl_ctx* c = (dpml_nccl_ctx*)context;
  if (c == NULL || c->magic != DPML_NCCL_MAGIC) return ncclSuccess;
  c->magic = 0;
  free(c);
  return ncclSuccess;
}

/* The symbols NCCL looks up (plugin.c is the only place that defines them). */
const ncclTuner_v5_t ncclTunerPlugin_v5 = {
    .name = "dpml",
    .init = init_v5,
    .getCollInfo = get_coll_info,
    .finalize = finalize,
};

const ncclTuner_v4_t ncclTunerPlugin_v4 = {
    .name = "dpml",
    .init = init_v4,
    .getCollInfo = get_coll_info,
    .destroy = finalize,
};
