/*
 * dpml_nccl_tuner.h: the NCCL tuner-plugin ABI as libdpml-nccl-tuner.so
 * implements it, and the plugin's own context and statistics.
 *
 * The NCCL declarations below are written for DPML-Go from the layouts in
 * NCCL release 2.28.3 (github.com/NVIDIA/nccl, commit f1308997,
 * makefiles/version.mk 2.28.3): src/include/plugin/tuner/tuner_v5.h,
 * tuner/tuner_v4.h, plugin/nccl_tuner.h and src/include/nccl_common.h, and
 * from the later tuner_v6.h and tuner_v7.h of NCCL's master branch. They
 * are not NCCL's text; the static assertions in plugin.c pin the layouts.
 *
 * Versions: NCCL looks up the newest symbol it knows first and falls back
 * to older ones. "ncclTunerPlugin_v7" (newest headers): as v6, with tuning
 * constants sized for 5 compute capabilities; "ncclTunerPlugin_v6": v5
 * plus getChunkSize, an optional callback that may change the chunk size
 * NCCL computed; "ncclTunerPlugin_v5" (NCCL 2.28): init also gets the
 * communicator id, NVLink-domain sizes and NCCL's tuning constants, the
 * last member is called finalize; "ncclTunerPlugin_v4" (NCCL 2.24 to
 * 2.27): init(nRanks, nNodes, log, ctx), last member destroy. getCollInfo
 * is the same in all four.
 */
#ifndef DPML_NCCL_TUNER_H
#define DPML_NCCL_TUNER_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/* ncclResult_t: an int-sized enum; 0 is success. */
typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7
} ncclResult_t;

/* ncclFunc_t: the collective; NCCL asks its tuner about 0..4 only. */
typedef enum {
  ncclFuncBroadcast = 0,
  ncclFuncReduce = 1,
  ncclFuncAllGather = 2,
  ncclFuncReduceScatter = 3,
  ncclFuncAllReduce = 4
} ncclFunc_t;
#define DPML_NCCL_NUM_FUNCS 5

typedef enum {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5
} ncclDebugLogLevel;
#define DPML_NCCL_LOG_TUNING 0x40UL /* NCCL_TUNING subsystem flag */

typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags,
                                  const char* file, int line, const char* fmt, ...);

/* Cost-table geometry of NCCL 2.28.3: rows are algorithms (tree, ring,
 * collnet direct, collnet chain, nvls, nvls tree, pat), columns protocols
 * (LL, LL128, Simple). NCCL passes float[numAlgo][numProto], contiguous,
 * cast to float**; -1.0 marks a combination NCCL will not use. */
#define DPML_NCCL_ALGO_COLLNET_DIRECT 2
#define DPML_NCCL_ALGO_COLLNET_CHAIN 3
#define DPML_NCCL_NUM_ALGOS_V5 7
#define DPML_NCCL_NUM_PROTOS_V5 3
#define DPML_NCCL_NUM_HW_LINKS_V5 3
#define DPML_NCCL_NUM_COMPCAPS_V5 4
#define DPML_NCCL_NUM_TUNING_SCALES_V5 3

/* v5: NVLink-domain sizes handed to init. */
typedef struct {
  int nNvlDomains;          /* NVLink domains in the communicator */
  int minRanksPerNvlDomain; /* smallest domain, in ranks */
  int maxRanksPerNvlDomain; /* largest domain, in ranks */
} ncclNvlDomainInfo_v5_t;

/* v5: NCCL's tuning constants, which init may change before NCCL builds
 * its cost model. This plugin never writes them (so a later release that
 * grows the struct does not matter to it). Latencies in microseconds,
 * bandwidths in GB/s. */
typedef struct {
  double baseLatencies[DPML_NCCL_NUM_ALGOS_V5][DPML_NCCL_NUM_PROTOS_V5];
  double hwLatencies[DPML_NCCL_NUM_HW_LINKS_V5][DPML_NCCL_NUM_ALGOS_V5][DPML_NCCL_NUM_PROTOS_V5];
  double llMaxBws[DPML_NCCL_NUM_COMPCAPS_V5][DPML_NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxRingLL128Bws[DPML_NCCL_NUM_COMPCAPS_V5][DPML_NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeLL128Bws[DPML_NCCL_NUM_COMPCAPS_V5][DPML_NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeBws[DPML_NCCL_NUM_COMPCAPS_V5][DPML_NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxNVLSTreeBws[DPML_NCCL_NUM_COMPCAPS_V5][DPML_NCCL_NUM_TUNING_SCALES_V5];
} ncclTunerConstants_v5_t;

typedef ncclResult_t (*dpml_nccl_getCollInfo_t)(void* context, ncclFunc_t collType, size_t nBytes,
                                                int numPipeOps, float** collCostTable, int numAlgo,
                                                int numProto, int regBuff, int* nChannels);

/* The v5 table (NCCL 2.28): name, init, getCollInfo, finalize. */
typedef struct {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v5_t* nvlDomainInfo,
                       ncclTunerConstants_v5_t* constants);
  dpml_nccl_getCollInfo_t getCollInfo;
  ncclResult_t (*finalize)(void* context);
} ncclTuner_v5_t;

/* v6 and v7: NCCL's chunk size for a call, which the plugin may change
 * (NCCL clamps it to what its buffers allow). */
typedef ncclResult_t (*dpml_nccl_getChunkSize_t)(void* context, ncclFunc_t collType, size_t nBytes, int algo,
                                                 int proto, int nChannels, size_t* chunkSize);

/* The v6 table: v5's members, then getChunkSize (may be NULL for NCCL). */
typedef struct {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v5_t* nvlDomainInfo,
                       ncclTunerConstants_v5_t* constants);
  dpml_nccl_getCollInfo_t getCollInfo;
  ncclResult_t (*finalize)(void* context);
  dpml_nccl_getChunkSize_t getChunkSize;
} ncclTuner_v6_t;

/* v7's constants: v5's with 5 compute-capability rows in the bandwidth
 * tables. The plugin never reads or writes them. */
#define DPML_NCCL_NUM_COMPCAPS_V7 5
typedef struct {
  double baseLatencies[DPML_NCCL_NUM_ALGOS_V5][DPML_NCCL_NUM_PROTOS_V5];
  double hwLatencies[DPML_NCCL_NUM_HW_LINKS_V5][DPML_NCCL_NUM_ALGOS_V5][DPML_NCCL_NUM_PROTOS_V5];
  double llMaxBws[DPML_NCCL_NUM_COMPCAPS_V7][DPML_NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxRingLL128Bws[DPML_NCCL_NUM_COMPCAPS_V7][DPML_NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeLL128Bws[DPML_NCCL_NUM_COMPCAPS_V7][DPML_NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeBws[DPML_NCCL_NUM_COMPCAPS_V7][DPML_NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxNVLSTreeBws[DPML_NCCL_NUM_COMPCAPS_V7][DPML_NCCL_NUM_TUNING_SCALES_V5];
} ncclTunerConstants_v7_t;

/* The v7 table: v6's members, init taking v7 constants. */
typedef struct {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v5_t* nvlDomainInfo,
                       ncclTunerConstants_v7_t* constants);
  dpml_nccl_getCollInfo_t getCollInfo;
  ncclResult_t (*finalize)(void* context);
  dpml_nccl_getChunkSize_t getChunkSize;
} ncclTuner_v7_t;

/* The v4 table (NCCL 2.24-2.27): name, init, getCollInfo, destroy. */
typedef struct {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  dpml_nccl_getCollInfo_t getCollInfo;
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v4_t;

/* ---- The communicator-creation API (nccl.h of NCCL 2.28.3), for the
 * channel floor the library applies when it is preloaded (floor.c) ---- */

typedef struct ncclComm* ncclComm_t;
#define DPML_NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[DPML_NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

/* ncclConfig_t: NCCL_CONFIG_INITIALIZER sets size, magic, version (the
 * header's NCCL_VERSION_CODE) and every other field to "undefined"
 * (INT_MIN, or NULL for pointers). Releases append fields; NCCL copies
 * min(size, its own sizeof) bytes over its initializer's values, and for a
 * version before the one that introduced a field it uses the default. The
 * fields up to netName are those of NCCL 2.17, the first release with
 * minCTAs and maxCTAs; before 2.17 a config ends at blocking (2.14). */
#define DPML_NCCL_CONFIG_MAGIC 0xcafebeefu
#define DPML_NCCL_CONFIG_UNDEF_INT INT_MIN
#define DPML_NCCL_VERSION(x, y, z) ((x) * 10000 + (y) * 100 + (z)) /* from 2.9 on */
#define DPML_NCCL_MAXCHANNELS 64 /* NCCL's MAXCHANNELS: maxCTAs when unset */
typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;       /* 2.14 */
  int cgaClusterSize; /* 2.17 */
  int minCTAs;        /* 2.17 */
  int maxCTAs;        /* 2.17 */
  const char* netName; /* 2.17 */
} dpml_nccl_config_v2_17;

/* ---- DPML's side ---- */

#define DPML_NCCL_BUCKETS 64 /* size buckets floor(log2 nBytes), 0..63 */
#define DPML_NCCL_MSG 512

/* One precomputed answer: channels (0 = NCCL's), algorithm and protocol
 * (-1 = NCCL's; both or neither). */
typedef struct {
  int8_t algo;
  int8_t proto;
  uint8_t channels;
  uint8_t pad;
} dpml_nccl_choice;

/* A communicator's context: filled once at init (Go computes the
 * choices), then only read by getCollInfo, which never calls into Go. */
typedef struct {
  uint64_t magic; /* DPML_NCCL_MAGIC while valid */
  uint64_t commId;
  ncclDebugLogger_t log;
  int verbose;     /* DPML_VERBOSE: 2 logs every call (TRACE) */
  int failed;      /* init met an error: every answer is NCCL's default */
  size_t nRanks, nNodes;
  dpml_nccl_choice choice[DPML_NCCL_NUM_FUNCS][DPML_NCCL_BUCKETS];
  char msg[DPML_NCCL_MSG]; /* the init log line */
} dpml_nccl_ctx;

#define DPML_NCCL_MAGIC 0x64706d6c6e63636cULL /* "dpmlnccl" */

/* Process-wide counters, for tests and the sweep tool (which looks the
 * function up with dlsym to confirm the plugin ran and what it chose).
 * Relaxed loads and stores, no locked instructions: calls made at the
 * same moment from several threads may be counted once. */
typedef struct {
  uint64_t inits;          /* init calls (every version) */
  uint64_t failed_inits;   /* inits that fell back to NCCL's default (bad table, ...) */
  uint64_t calls;          /* getCollInfo calls */
  uint64_t set_channels;   /* calls that set *nChannels */
  uint64_t set_algo;       /* calls that lowered a cost-table entry */
  uint64_t last_bytes;     /* nBytes of the last call that set something */
  int32_t last_coll;       /* its collective */
  int32_t last_channels;   /* the channels it set (0: none) */
  int32_t last_algo;       /* the algorithm it preferred (-1: none) */
  int32_t last_proto;      /* the protocol it preferred (-1: none) */
} dpml_nccl_stats;

/* Exported by the plugin: copy the counters into *out (a no-op for NULL). */
void dpml_nccl_tuner_stats(dpml_nccl_stats* out);

/* Internal (plugin.c, for floor.c): the machine as NVML describes it,
 * detected once per process: the GPU model every GPU shares ("" if they
 * differ or NVML does not answer), the link ("nvlink", "pcie" or ""), the
 * GPUs NVML lists (0: unknown) and how NVML answered. */
__attribute__((visibility("hidden"))) void dpml_nccl_machine(const char** gpu, const char** link, int* gpus,
                                                             const char** note);

#endif
