/*
 * The C half of libdpml-nccl-tuner.so: the symbols NCCL looks up, and the
 * per-call path. init hands the layout and the settings to Go once
 * (dpmlNcclFill computes one answer per collective and size bucket); every
 * getCollInfo after that is a table lookup here, in C, without entering
 * the Go runtime. Nothing here ever fails a communicator or a collective:
 * see doc.go for why every error answers "NCCL's default" with ncclSuccess.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
_Static_assert(offsetof(ncclTuner_v6_t, init) == 8 && offsetof(ncclTuner_v6_t, getCollInfo) == 16 &&
                   offsetof(ncclTuner_v6_t, finalize) == 24 && offsetof(ncclTuner_v6_t, getChunkSize) == 32 &&
                   sizeof(ncclTuner_v6_t) == 40,
               "ncclTuner_v6_t: name, init, getCollInfo, finalize, getChunkSize");
_Static_assert(offsetof(ncclTuner_v7_t, init) == 8 && offsetof(ncclTuner_v7_t, getCollInfo) == 16 &&
                   offsetof(ncclTuner_v7_t, finalize) == 24 && offsetof(ncclTuner_v7_t, getChunkSize) == 32 &&
                   sizeof(ncclTuner_v7_t) == 40,
               "ncclTuner_v7_t: name, init, getCollInfo, finalize, getChunkSize");
_Static_assert(sizeof(ncclTunerConstants_v7_t) == 1272, "ncclTunerConstants_v7_t: 5 compute capabilities");
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

/* The machine, for the built-in data: the GPU model and whether the GPUs
 * are linked by NVLink, from NVML (libnvidia-ml.so.1, opened with dlopen:
 * the plugin links no NVIDIA library). Asked once per process, and only
 * when an init needs it (auto policy, no table, no DPML_NCCL_GPU and
 * DPML_NCCL_LINK). The model is the one every GPU NVML lists shares ("" if
 * they differ); the link is "nvlink" when every GPU has an active NVLink,
 * else "pcie". Anything NVML does not answer leaves it unknown, and
 * unknown means NCCL's default. DPML_NCCL_NVML names another library
 * (tests). */
static pthread_once_t g_machine_once = PTHREAD_ONCE_INIT;
static char g_gpu[128], g_link[16], g_machine_note[200];
static int g_host_gpus; /* GPUs NVML lists; 0: unknown */

typedef int (*nvml_void_fn)(void);
typedef int (*nvml_count_fn)(unsigned int*);
typedef int (*nvml_handle_fn)(unsigned int, void**);
typedef int (*nvml_name_fn)(void*, char*, unsigned int);
typedef int (*nvml_link_fn)(void*, unsigned int, int*);
#define DPML_NVML_MAX_LINKS 18 /* NVML_NVLINK_MAX_LINKS */

static void detect_machine(void) {
  const char* lib = getenv("DPML_NCCL_NVML");
  if (lib == NULL || *lib == 0) lib = "libnvidia-ml.so.1";
  void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    const char* e = dlerror();
    snprintf(g_machine_note, sizeof g_machine_note, "NVML: %s", e ? e : lib);
    return;
  }
  nvml_void_fn init = (nvml_void_fn)dlsym(h, "nvmlInit_v2");
  nvml_void_fn shutdown = (nvml_void_fn)dlsym(h, "nvmlShutdown");
  nvml_count_fn count_fn = (nvml_count_fn)dlsym(h, "nvmlDeviceGetCount_v2");
  nvml_handle_fn handle = (nvml_handle_fn)dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
  nvml_name_fn name = (nvml_name_fn)dlsym(h, "nvmlDeviceGetName");
  nvml_link_fn link = (nvml_link_fn)dlsym(h, "nvmlDeviceGetNvLinkState");
  unsigned int n = 0;
  if (!init || !shutdown || !count_fn || !handle || !name || !link) {
    snprintf(g_machine_note, sizeof g_machine_note, "NVML %s lacks a function", lib);
  } else if (init() != 0) {
    snprintf(g_machine_note, sizeof g_machine_note, "nvmlInit failed");
  } else {
    char model[sizeof g_gpu] = "";
    int same = 1, nvlink = 1, ok = count_fn(&n) == 0 && n > 0;
    for (unsigned int i = 0; ok && i < n; i++) {
      void* dev = NULL;
      char nm[sizeof g_gpu] = "";
      if (handle(i, &dev) != 0 || name(dev, nm, sizeof nm - 1) != 0) {
        ok = 0;
        break;
      }
      nm[sizeof nm - 1] = 0;
      if (i == 0)
        memcpy(model, nm, sizeof model);
      else if (strcmp(model, nm) != 0)
        same = 0;
      int active = 0;
      for (unsigned int l = 0; l < DPML_NVML_MAX_LINKS && !active; l++) {
        int st = 0;
        if (link(dev, l, &st) == 0 && st == 1) active = 1; /* NVML_FEATURE_ENABLED */
      }
      if (!active) nvlink = 0;
    }
    shutdown();
    if (ok) {
      g_host_gpus = (int)n;
      if (same) memcpy(g_gpu, model, sizeof g_gpu);
      snprintf(g_link, sizeof g_link, "%s", nvlink ? "nvlink" : "pcie");
      snprintf(g_machine_note, sizeof g_machine_note, "NVML: %u GPUs%s", n, same ? "" : " of different models");
    } else {
      snprintf(g_machine_note, sizeof g_machine_note, "NVML lists no GPUs");
    }
  }
  dlclose(h);
}

void dpml_nccl_machine(const char** gpu, const char** link, int* gpus, const char** note) {
  pthread_once(&g_machine_once, detect_machine);
  *gpu = g_gpu;
  *link = g_link;
  *gpus = g_host_gpus;
  *note = g_machine_note;
}

/* needs_machine: whether the policy may use the built-in data (auto, the
 * default, without a table). */
static int needs_machine(const char* policy, const char* table) {
  if (table != NULL && *table != 0) return 0;
  if (policy == NULL) return 1;
  while (*policy == ' ' || *policy == '\t') policy++;
  return *policy == 0 || strncasecmp(policy, "auto", 4) == 0;
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
  const char* policy = getenv("DPML_NCCL_POLICY");
  const char* table = getenv("DPML_NCCL_TABLE");
  const char* gpu = getenv("DPML_NCCL_GPU");
  const char* link = getenv("DPML_NCCL_LINK");
  if (gpu != NULL && *gpu == 0) gpu = NULL;
  if (link != NULL && *link == 0) link = NULL;
  if ((gpu == NULL || link == NULL) && needs_machine(policy, table)) {
    pthread_once(&g_machine_once, detect_machine);
    if (gpu == NULL) gpu = g_gpu;
    if (link == NULL) link = g_link;
  }
  if (dpmlNcclFill(c, nRanks, nNodes, (char*)policy, (char*)table, (char*)(gpu ? gpu : ""), (char*)(link ? link : ""),
                   g_machine_note) != 0) {
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

static ncclResult_t init_v6(void** context, uint64_t commId, size_t nRanks, size_t nNodes,
                            ncclDebugLogger_t log, ncclNvlDomainInfo_v5_t* nvl,
                            ncclTunerConstants_v5_t* constants) {
  (void)nvl, (void)constants;
  return init_common(context, commId, nRanks, nNodes, log, 6);
}

static ncclResult_t init_v7(void** context, uint64_t commId, size_t nRanks, size_t nNodes,
                            ncclDebugLogger_t log, ncclNvlDomainInfo_v5_t* nvl,
                            ncclTunerConstants_v7_t* constants) {
  (void)nvl, (void)constants;
  return init_common(context, commId, nRanks, nNodes, log, 7);
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

/* getChunkSize (v6, v7): the plugin has no measured chunk sizes, so it
 * leaves NCCL's as they are; it never fails a call. */
static ncclResult_t get_chunk_size(void* context, ncclFunc_t collType, size_t nBytes, int algo, int proto,
                                   int nChannels, size_t* chunkSize) {
  (void)context, (void)collType, (void)nBytes, (void)algo, (void)proto, (void)nChannels, (void)chunkSize;
  return ncclSuccess;
}

static ncclResult_t finalize(void* context) {
  dpml_nccl_ctx* c = (dpml_nccl_ctx*)context;
  if (c == NULL || c->magic != DPML_NCCL_MAGIC) return ncclSuccess;
  c->magic = 0;
  free(c);
  return ncclSuccess;
}

/* The symbols NCCL looks up, newest first (plugin.c is the only place
 * that defines them). */
const ncclTuner_v7_t ncclTunerPlugin_v7 = {
    .name = "dpml",
    .init = init_v7,
    .getCollInfo = get_coll_info,
    .finalize = finalize,
    .getChunkSize = get_chunk_size,
};

const ncclTuner_v6_t ncclTunerPlugin_v6 = {
    .name = "dpml",
    .init = init_v6,
    .getCollInfo = get_coll_info,
    .finalize = finalize,
    .getChunkSize = get_chunk_size,
};

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
