/*
 * FAKE NCCL for tests without a GPU (see nccl.h here). The synthetic time
 * of an allreduce of n bytes on c channels is, in microseconds,
 *
 *   t(n, c) = 8 + 0.3 c + n / (min(c, 17) * 20000)
 *
 * (20 GB/s per channel, links saturating at 17 channels), and the fake's
 * own channel choice is NCCL-like but deliberately too eager: clamp(n /
 * 8 KiB, 1, C) on a communicator of C channels (16 by default; ncclConfig_t
 * minCTAs / maxCTAs as NCCL 2.28 applies them). So a sweep over fixed
 * counts finds headroom the plugin's table should take. Only the first and
 * the last 8192 elements are reduced: the ones ncclsweep -check reads.
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

/* The tuner ABI of NCCL 2.28.3 (as nccl/plugin/dpml_nccl_tuner.h). */
typedef void (*logger_t)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);
typedef struct {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, logger_t log, void* nvl, void* constants);
  ncclResult_t (*getCollInfo)(void* ctx, int coll, size_t nBytes, int numPipeOps, float** table, int numAlgo,
                              int numProto, int regBuff, int* nChannels);
  ncclResult_t (*finalize)(void* ctx);
} tuner_v5;

struct fakeComm {
  int rank, nranks, channels;
  uint64_t clique;
  void* tctx;
};

static tuner_v5* tuner;
static int tuner_tried;
static uint64_t next_id = 1;

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
  tuner = (tuner_v5*)dlsym(h, "ncclTunerPlugin_v5");
}

ncclResult_t ncclGetVersion(int* version) {
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  memset(id, 0, sizeof *id);
  uint64_t v = next_id++;
  memcpy(id->internal, &v, sizeof v);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
  struct fakeComm* c = calloc(1, sizeof *c);
  if (!c) return ncclSystemError;
  c->rank = rank, c->nranks = nranks;
  memcpy(&c->clique, id.internal, sizeof c->clique);
  c->channels = 16;
  if (config && config->maxCTAs != NCCL_CONFIG_UNDEF_INT && config->maxCTAs < c->channels) c->channels = config->maxCTAs;
  if (config && config->minCTAs != NCCL_CONFIG_UNDEF_INT && config->minCTAs > c->channels) c->channels = config->minCTAs;
  load_tuner();
  if (tuner) {
    unsigned char nvl[12] = {0}, constants[1152] = {0};
    if (tuner->init(&c->tctx, c->clique, (size_t)nranks, 1, logger, nvl, constants) != ncclSuccess) {
      free(c);
      return ncclInternalError; /* as NCCL 2.28.3: a failing tuner init fails the communicator */
    }
  }
  *comm = c;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclInvalidArgument;
  if (tuner) tuner->finalize(comm->tctx);
  free(comm);
  return ncclSuccess;
}

typedef struct {
  const float* send;
  float* recv;
  size_t count;
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

static double fake_time(size_t n, int c) {
  int eff = c < 17 ? c : 17;
  return 8.0 + 0.3 * c + (double)n / (eff * 20000.0);
}

static int default_channels(size_t n, int comm_channels) {
  size_t c = n / 8192;
  if (c < 1) c = 1;
  if (c > (size_t)comm_channels) c = (size_t)comm_channels;
  return (int)c;
}

static ncclResult_t run(op* o) {
  size_t n = o->count * sizeof(float);
  int c = default_channels(n, o->comm->channels);
  if (tuner) {
    float table[7][3];
    for (int a = 0; a < 7; a++)
      for (int p = 0; p < 3; p++) table[a][p] = (a <= 1) ? (float)(fake_time(n, c) + a + p) : -1.0f;
    int nc = 0;
    ncclResult_t r = tuner->getCollInfo(o->comm->tctx, 4, n, 1, (float**)table, 7, 3, 0, &nc);
    if (r != ncclSuccess) return r; /* as NCCL 2.28.3: the collective fails */
    if (nc > 0) c = nc < o->comm->channels ? nc : o->comm->channels;
  }
  fakeStreamAdvance(o->stream, fake_time(n, c));
  return ncclSuccess;
}

static void reduce_clique(int first) {
  /* Sum the first and last 8192 elements over the ops of this clique. */
  op* base = &ops[first];
  size_t count = base->count, k = count < 16384 ? count : 8192;
  for (int part = 0; part < 2; part++) {
    size_t off = part == 0 ? 0 : count - k;
    if (count < 16384 && part == 1) break;
    for (size_t i = 0; i < k; i++) {
      float s = 0;
      for (int j = 0; j < nops; j++)
        if (ops[j].comm->clique == base->comm->clique) s += ops[j].send[off + i];
      for (int j = 0; j < nops; j++)
        if (ops[j].comm->clique == base->comm->clique) ops[j].recv[off + i] = s;
    }
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

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op_,
                           ncclComm_t comm, cudaStream_t stream) {
  if (datatype != ncclFloat32 || op_ != ncclSum || !comm || !stream) return ncclInvalidArgument;
  if (nops == MAXOPS) return ncclInternalError;
  ops[nops++] = (op){(const float*)sendbuff, (float*)recvbuff, count, comm, stream};
  if (depth == 0) { /* outside a group: a group of one */
    depth = 1;
    return ncclGroupEnd();
  }
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) { return result == ncclSuccess ? "no error" : "fake NCCL error"; }
