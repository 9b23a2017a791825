/*
 * FAKE NCCL for tests without a GPU (see nccl.h here). The synthetic time
 * of a collective of n bytes (the larger buffer) on c channels is, in
 * microseconds,
 *
 *   t(n, c) = 8 + 0.3 c + w / (min(c, 17) * 20000)
 *
 * with w = n for allreduce and n/2 for reduce-scatter and allgather (20 GB/s
 * per channel, links saturating at 17 channels), and the fake's own channel
 * choice is NCCL-like but deliberately too eager: clamp(n / 8 KiB, 1, C) on
 * a communicator of C channels (16 by default; ncclConfig_t minCTAs and
 * maxCTAs as NCCL 2.28 applies them). So a sweep over fixed counts finds
 * headroom the plugin's table should take. Results are computed on the
 * host, every element.
 *
 * ncclCommInitRankConfig checks the config as NCCL 2.28.3's parseCommConfig
 * does: a wrong magic, a set minCTAs or maxCTAs of 0 or less, and minCTAs >
 * maxCTAs (an unset field is INT_MIN, so a set minCTAs with maxCTAs unset
 * fails) are ncclInvalidArgument with NCCL's message; a config of a version
 * before 2.17 has no minCTAs/maxCTAs (they are ignored).
 *
 * Environment (tests only): FAKE_NCCL_VERSION, the code ncclGetVersion
 * returns; FAKE_NCCL_TUNER_ABI=N, look up tuner versions N and older only
 * (an older NCCL); FAKE_NCCL_CORRUPT=COLL, one wrong element in every
 * result of that collective; FAKE_NCCL_DEBUG, log INFO lines.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nccl.h"

/* The tuner ABIs (as nccl/plugin/dpml_nccl_tuner.h): v5, v6 and v7 share
 * init's signature (the constants pointer's struct differs; the fake hands
 * a zeroed block large enough for any), v6 and v7 add getChunkSize. */
typedef void (*logger_t)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);
typedef ncclResult_t (*init5_t)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, logger_t log, void* nvl,
                                void* constants);
typedef ncclResult_t (*init4_t)(size_t nRanks, size_t nNodes, logger_t log, void** ctx);
typedef ncclResult_t (*getcoll_t)(void* ctx, int coll, size_t nBytes, int numPipeOps, float** table, int numAlgo,
                                  int numProto, int regBuff, int* nChannels);
typedef ncclResult_t (*fin_t)(void* ctx);
typedef ncclResult_t (*chunk_t)(void* ctx, int coll, size_t nBytes, int algo, int proto, int nChannels, size_t* chunkSize);
typedef struct {
  const char* name;
  void* init;
  getcoll_t getCollInfo;
  fin_t finalize;
  chunk_t getChunkSize; /* v6, v7 */
} tuner_vN;

static struct {
  int version; /* 0: none */
  const char* name;
  init5_t init5;
  init4_t init4;
  getcoll_t getCollInfo;
  fin_t finalize;
  chunk_t getChunkSize;
} tuner;

struct fakeComm {
  int rank, nranks, channels;
  uint64_t clique;
  void* tctx;
};

static int tuner_tried;
static uint64_t next_id = 1;
static char last_error[256];

static void logger(int level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  (void)flags, (void)file, (void)line;
  if (!getenv("FAKE_NCCL_DEBUG") && level > 2) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "FAKE NCCL %s: ", level == 2 ? "WARN" : "INFO");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static void warn(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  fprintf(stderr, "FAKE NCCL WARN %s\n", last_error);
}

static void load_tuner(void) {
  if (tuner_tried) return;
  tuner_tried = 1;
  const char* name = getenv("NCCL_TUNER_PLUGIN");
  if (!name || !*name || strcasecmp(name, "none") == 0) return;
  void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "FAKE NCCL: tuner %s: %s\n", name, dlerror());
    return;
  }
  int newest = 7;
  const char* abi = getenv("FAKE_NCCL_TUNER_ABI");
  if (abi && atoi(abi) >= 4 && atoi(abi) <= 7) newest = atoi(abi);
  for (int v = newest; v >= 4 && !tuner.version; v--) {
    char sym[32];
    snprintf(sym, sizeof sym, "ncclTunerPlugin_v%d", v);
    const tuner_vN* t = (const tuner_vN*)dlsym(h, sym);
    if (!t) continue;
    tuner.version = v;
    tuner.name = t->name;
    if (v == 4)
      tuner.init4 = (init4_t)t->init;
    else
      tuner.init5 = (init5_t)t->init;
    tuner.getCollInfo = t->getCollInfo;
    tuner.finalize = t->finalize;
    tuner.getChunkSize = v >= 6 ? t->getChunkSize : NULL;
  }
  if (tuner.version)
    fprintf(stderr, "FAKE NCCL INFO TUNER/Plugin: Using %s (v%d)\n", tuner.name, tuner.version);
  else
    fprintf(stderr, "FAKE NCCL: tuner %s: no ncclTunerPlugin_v4..v%d\n", name, newest);
}

ncclResult_t ncclGetVersion(int* version) {
  const char* v = getenv("FAKE_NCCL_VERSION");
  *version = v ? atoi(v) : NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  memset(id, 0, sizeof *id);
  uint64_t v = next_id++;
  memcpy(id->internal, &v, sizeof v);
  return ncclSuccess;
}

/* check_config: NCCL 2.28.3's rules for the fields the fake knows. */
static ncclResult_t check_config(const ncclConfig_t* config, int* minCTAs, int* maxCTAs) {
  *minCTAs = *maxCTAs = NCCL_CONFIG_UNDEF_INT;
  if (config == NULL) return ncclSuccess;
  if (config->magic != 0xcafebeef) {
    warn("ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER");
    return ncclInvalidArgument;
  }
  if (config->version >= (unsigned)NCCL_VERSION(2, 17, 0)) { /* fields of 2.17 */
    *minCTAs = config->minCTAs;
    *maxCTAs = config->maxCTAs;
  }
  if ((*minCTAs != NCCL_CONFIG_UNDEF_INT && *minCTAs <= 0) || (*maxCTAs != NCCL_CONFIG_UNDEF_INT && *maxCTAs <= 0) ||
      *minCTAs > *maxCTAs) {
    warn("Invalid config min/max channels attribute value %d/%d", *minCTAs, *maxCTAs);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
  if (!comm || nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  int minCTAs, maxCTAs;
  ncclResult_t r = check_config(config, &minCTAs, &maxCTAs);
  if (r != ncclSuccess) return r;
  struct fakeComm* c = calloc(1, sizeof *c);
  if (!c) return ncclSystemError;
  c->rank = rank, c->nranks = nranks;
  memcpy(&c->clique, id.internal, sizeof c->clique);
  c->channels = 16;
  if (maxCTAs != NCCL_CONFIG_UNDEF_INT && maxCTAs < c->channels) c->channels = maxCTAs;
  if (minCTAs != NCCL_CONFIG_UNDEF_INT && minCTAs > c->channels) c->channels = minCTAs;
  if (c->channels > 64) c->channels = 64;
  load_tuner();
  if (tuner.version) {
    unsigned char nvl[12] = {0}, constants[4096] = {0};
    ncclResult_t tr = tuner.version == 4 ? tuner.init4((size_t)nranks, 1, logger, &c->tctx)
                                         : tuner.init5(&c->tctx, c->clique, (size_t)nranks, 1, logger, nvl, constants);
    if (tr != ncclSuccess) {
      free(c);
      return ncclInternalError; /* as NCCL 2.28.3: a failing tuner init fails the communicator */
    }
  }
  *comm = c;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclInvalidArgument;
  if (tuner.version) tuner.finalize(comm->tctx);
  free(comm);
  return ncclSuccess;
}

enum { OP_ALLGATHER = 2, OP_REDUCESCATTER = 3, OP_ALLREDUCE = 4 }; /* ncclFunc_t */

typedef struct {
  int func;
  const float* send;
  float* recv;
  size_t count; /* the API's count: allreduce all, reduce-scatter recvcount, allgather sendcount */
  struct fakeComm* comm;
  cudaStream_t stream;
} op;

#define MAXOPS 64
static op ops[MAXOPS];
static int nops, depth;

ncclResult_t ncclGroupStart(void) {
  depth++;
  return ncclSuccess;
}

static double fake_time(int func, size_t n, int c) {
  int eff = c < 17 ? c : 17;
  double w = func == OP_ALLREDUCE ? (double)n : (double)n / 2;
  return 8.0 + 0.3 * c + w / (eff * 20000.0);
}

static int default_channels(size_t n, int comm_channels) {
  size_t c = n / 8192;
  if (c < 1) c = 1;
  if (c > (size_t)comm_channels) c = (size_t)comm_channels;
  return (int)c;
}

/* The bytes NCCL hands the tuner: the larger buffer's. */
static size_t op_bytes(const op* o) {
  size_t n = o->count * sizeof(float);
  return o->func == OP_ALLREDUCE ? n : n * (size_t)o->comm->nranks;
}

static ncclResult_t run(op* o) {
  size_t n = op_bytes(o);
  int c = default_channels(n, o->comm->channels);
  if (tuner.version) {
    float table[7][3];
    for (int a = 0; a < 7; a++)
      for (int p = 0; p < 3; p++) table[a][p] = (a <= 1) ? (float)(fake_time(o->func, n, c) + a + p) : -1.0f;
    int nc = 0;
    ncclResult_t r = tuner.getCollInfo(o->comm->tctx, o->func, n, 1, (float**)table, 7, 3, 0, &nc);
    if (r != ncclSuccess) return r; /* as NCCL 2.28.3: the collective fails */
    if (nc > 0) c = nc < o->comm->channels ? nc : o->comm->channels;
    if (tuner.getChunkSize) {
      size_t chunk = 128 << 10;
      r = tuner.getChunkSize(o->comm->tctx, o->func, n, 1, 2, c, &chunk);
      if (r != ncclSuccess) return r;
      if (chunk == 0) return ncclInternalError; /* a chunk NCCL could not use */
    }
  }
  fakeStreamAdvance(o->stream, fake_time(o->func, n, c));
  return ncclSuccess;
}

/* reduce_clique computes the results of the ops of one clique (the ranks
 * of one communicator set), on the host, every element. */
static void reduce_clique(int first) {
  op* base = &ops[first];
  const op* byrank[64] = {0};
  int nr = base->comm->nranks;
  if (nr > 64) return;
  for (int j = 0; j < nops; j++)
    if (ops[j].comm->clique == base->comm->clique) byrank[ops[j].comm->rank] = &ops[j];
  for (int r = 0; r < nr; r++)
    if (!byrank[r]) return; /* an incomplete group: nothing to compute */
  size_t count = base->count;
  for (int r = 0; r < nr; r++) {
    float* out = byrank[r]->recv;
    switch (base->func) {
      case OP_ALLREDUCE:
        for (size_t i = 0; i < count; i++) {
          float s = 0;
          for (int k = 0; k < nr; k++) s += byrank[k]->send[i];
          out[i] = s;
        }
        break;
      case OP_REDUCESCATTER:
        for (size_t i = 0; i < count; i++) {
          float s = 0;
          for (int k = 0; k < nr; k++) s += byrank[k]->send[(size_t)r * count + i];
          out[i] = s;
        }
        break;
      default:
        for (int k = 0; k < nr; k++) memcpy(out + (size_t)k * count, byrank[k]->send, count * sizeof(float));
        break;
    }
  }
  const char* corrupt = getenv("FAKE_NCCL_CORRUPT");
  static const char* names[] = {"", "", "allgather", "reducescatter", "allreduce"};
  if (corrupt && strcasecmp(corrupt, names[base->func]) == 0) {
    size_t n = base->func == OP_ALLGATHER ? count * (size_t)nr : count;
    byrank[nr - 1]->recv[n - 1] += 1.0f;
  }
}

ncclResult_t ncclGroupEnd(void) {
  if (depth <= 0) return ncclInvalidUsage;
  if (--depth > 0) return ncclSuccess;
  ncclResult_t r = ncclSuccess;
  for (int i = 0; i < nops; i++) {
    int seen = 0;
    for (int j = 0; j < i; j++) seen |= ops[j].comm->clique == ops[i].comm->clique;
    if (!seen) reduce_clique(i);
    if (r == ncclSuccess) r = run(&ops[i]);
  }
  nops = 0;
  return r;
}

static ncclResult_t enqueue(int func, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                            ncclComm_t comm, cudaStream_t stream) {
  if (datatype != ncclFloat32 || !comm || !stream || !sendbuff || !recvbuff) return ncclInvalidArgument;
  if (nops == MAXOPS) return ncclInternalError;
  ops[nops++] = (op){func, (const float*)sendbuff, (float*)recvbuff, count, comm, stream};
  if (depth == 0) { /* outside a group: a group of one */
    depth = 1;
    return ncclGroupEnd();
  }
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op_,
                           ncclComm_t comm, cudaStream_t stream) {
  if (op_ != ncclSum) return ncclInvalidArgument;
  return enqueue(OP_ALLREDUCE, sendbuff, recvbuff, count, datatype, comm, stream);
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op_, ncclComm_t comm, cudaStream_t stream) {
  if (op_ != ncclSum) return ncclInvalidArgument;
  return enqueue(OP_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype, comm, stream);
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  return enqueue(OP_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, comm, stream);
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    default: return "fake NCCL error";
  }
}

const char* ncclGetLastError(ncclComm_t comm) {
  (void)comm;
  return last_error;
}
