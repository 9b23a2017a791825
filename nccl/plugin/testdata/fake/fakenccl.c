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
 * Communicators are created as NCCL 2.28.3 creates them, for what the
 * tests look at. The config is checked as parseCommConfig does: a wrong
 * magic, a set minCTAs or maxCTAs of 0 or less, and minCTAs > maxCTAs (an
 * unset field is INT_MIN, so a set minCTAs with maxCTAs unset fails) are
 * ncclInvalidArgument with NCCL's message; a config of a version before
 * 2.17 has no minCTAs/maxCTAs (they are ignored); only min(size, sizeof)
 * bytes are read. NCCL_MIN_CTAS and NCCL_MAX_CTAS replace the config's
 * values; the channels are then those of the "graph search" (16), capped
 * by NCCL_MAX_NCHANNELS (or NCCL_MAX_NRINGS) and maxCTAs, raised to
 * NCCL_MIN_NCHANNELS (or NCCL_MIN_NRINGS) and minCTAs, at most 64. At its
 * first call the fake reads NCCL's configuration files into the
 * environment as NCCL does (NCCL_CONF_FILE, else ~/.nccl.conf, then
 * /etc/nccl.conf; a variable already set wins). ncclCommInitRank and
 * ncclCommInitAll create their communicators through an internal function,
 * not through the exported ncclCommInitRankConfig (as NCCL's do), and a
 * child of ncclCommSplit with a NULL config takes its parent's minCTAs and
 * maxCTAs (NCCL's copyCommConfig). With NCCL_DEBUG=INFO each communicator
 * prints its channels on stdout ("N coll channels", as NCCL's INFO line).
 * fakeNcclCommInfo tells what a communicator's creation received.
 *
 * Environment (tests only): FAKE_NCCL_VERSION, the code ncclGetVersion
 * returns; FAKE_NCCL_TUNER_ABI=N, look up tuner versions N and older only
 * (an older NCCL); FAKE_NCCL_CORRUPT=COLL, one wrong element in every
 * result of that collective; FAKE_NCCL_FAIL_INIT=R, every communicator
 * creation fails with result R (after the argument checks);
 * FAKE_NCCL_DEBUG, log INFO lines.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

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
  int minCTAs, maxCTAs; /* after NCCL's defaults and the environment */
  uint64_t clique;
  void* tctx;
  fakeCommInfo info;
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

/* init_env: NCCL's configuration files into the environment, once. */
static void set_env_file(const char* path) {
  FILE* f = fopen(path, "r");
  if (!f) return;
  char line[1024];
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#') continue;
    char* eq = strchr(line, '=');
    if (!eq) continue;
    *eq = 0;
    char* val = eq + 1;
    val[strcspn(val, "\r\n")] = 0;
    setenv(line, val, 0);
  }
  fclose(f);
}

static void init_env(void) {
  static int done;
  if (done) return;
  done = 1;
  const char* user = getenv("NCCL_CONF_FILE");
  char path[1024];
  if (user && *user) {
    set_env_file(user);
  } else {
    struct passwd* pw = getpwuid(getuid());
    if (pw && pw->pw_dir) {
      snprintf(path, sizeof path, "%s/.nccl.conf", pw->pw_dir);
      set_env_file(path);
    }
  }
  set_env_file("/etc/nccl.conf");
}

/* env_int: an integer setting (NAME, else OLD), or def when unset or empty. */
static int env_int(const char* name, const char* old, int def) {
  const char* v = getenv(name);
  if ((!v || !*v) && old) v = getenv(old);
  return v && *v ? atoi(v) : def;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  init_env();
  memset(id, 0, sizeof *id);
  uint64_t v = next_id++;
  memcpy(id->internal, &v, sizeof v);
  return ncclSuccess;
}

/* check_config: NCCL 2.28.3's rules for the fields the fake knows. */
static ncclResult_t check_config(const ncclConfig_t* user, int* minCTAs, int* maxCTAs) {
  *minCTAs = *maxCTAs = NCCL_CONFIG_UNDEF_INT;
  if (user == NULL) return ncclSuccess;
  /* NCCL reads min(size, its sizeof) bytes over its initializer's values. */
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER, *config = &c;
  size_t size;
  c.magic = 0;
  memcpy(&size, user, sizeof size);
  memcpy(&c, user, size < sizeof c ? size : sizeof c);
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

/* record: what the caller passed, for fakeNcclCommInfo. */
static void record(struct fakeComm* c, const ncclConfig_t* user) {
  memset(&c->info, 0, sizeof c->info);
  c->info.blocking = c->info.minCTAs = c->info.maxCTAs = NCCL_CONFIG_UNDEF_INT;
  if (user) {
    c->info.given = 1;
    memcpy(&c->info.size, user, sizeof c->info.size);
    c->info.version = user->version;
    if (c->info.size >= offsetof(ncclConfig_t, blocking) + sizeof(int)) c->info.blocking = user->blocking;
    if (c->info.size >= offsetof(ncclConfig_t, maxCTAs) + sizeof(int)) {
      c->info.minCTAs = user->minCTAs;
      c->info.maxCTAs = user->maxCTAs;
    }
  }
  int dev = -1;
  cudaGetDevice(&dev);
  c->info.device = dev;
}

/* set_channels: NCCL's defaults, the environment's overrides, and the
 * communicator's channels (see the comment at the top). */
static void set_channels(struct fakeComm* c, int minCTAs, int maxCTAs) {
  if (minCTAs == NCCL_CONFIG_UNDEF_INT) minCTAs = 1;
  if (maxCTAs == NCCL_CONFIG_UNDEF_INT) maxCTAs = 64;
  minCTAs = env_int("NCCL_MIN_CTAS", NULL, minCTAs);
  maxCTAs = env_int("NCCL_MAX_CTAS", NULL, maxCTAs);
  if (minCTAs > 64) minCTAs = 64;
  if (maxCTAs > 64) maxCTAs = 64;
  if (minCTAs > maxCTAs) minCTAs = maxCTAs;
  c->minCTAs = minCTAs, c->maxCTAs = maxCTAs;
  int nc = 16;
  int maxEnv = env_int("NCCL_MAX_NCHANNELS", "NCCL_MAX_NRINGS", 64);
  int minEnv = env_int("NCCL_MIN_NCHANNELS", "NCCL_MIN_NRINGS", 0);
  if (maxEnv < nc) nc = maxEnv;
  if (maxCTAs < nc) nc = maxCTAs;
  if (minEnv > nc) nc = minEnv;
  if (minCTAs > nc) nc = minCTAs;
  if (nc > 64) nc = 64;
  if (nc < 1) nc = 1;
  c->channels = c->info.channels = nc;
  const char* dbg = getenv("NCCL_DEBUG");
  if (dbg && strcasecmp(dbg, "INFO") == 0)
    printf("FAKE NCCL INFO %d coll channels, rank %d of %d (minCTAs %d, maxCTAs %d)\n", nc, c->rank, c->nranks, minCTAs, maxCTAs);
}

static ncclResult_t fail_init(void) {
  const char* f = getenv("FAKE_NCCL_FAIL_INIT");
  return f && atoi(f) > 0 ? (ncclResult_t)atoi(f) : ncclSuccess;
}

/* init_comm is NCCL's internal ncclCommInitRankDev: every creation entry
 * point comes here, none through another exported function. minCTAs and
 * maxCTAs are inherited (a split's child) when inherit is set. */
static ncclResult_t init_comm(ncclComm_t* comm, int nranks, const ncclUniqueId* id, int rank, const ncclConfig_t* config,
                              const struct fakeComm* inherit) {
  init_env();
  if (comm) *comm = NULL;
  if (!comm || nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  int minCTAs, maxCTAs;
  ncclResult_t r = inherit ? ncclSuccess : check_config(config, &minCTAs, &maxCTAs);
  if (r != ncclSuccess) return r;
  if ((r = fail_init()) != ncclSuccess) {
    warn("FAKE_NCCL_FAIL_INIT: creation fails with %d", (int)r);
    return r;
  }
  if (inherit) minCTAs = inherit->minCTAs, maxCTAs = inherit->maxCTAs;
  struct fakeComm* c = calloc(1, sizeof *c);
  if (!c) return ncclSystemError;
  c->rank = rank, c->nranks = nranks;
  memcpy(&c->clique, id->internal, sizeof c->clique);
  record(c, config);
  set_channels(c, minCTAs, maxCTAs);
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

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
  return init_comm(comm, nranks, &id, rank, config, NULL);
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return init_comm(comm, nranks, &id, rank, NULL, NULL);
}

ncclResult_t ncclCommInitRankScalable(ncclComm_t* comm, int nranks, int rank, int nId, ncclUniqueId* ids, ncclConfig_t* config) {
  if (nId < 1 || nId > nranks || !ids) return ncclInvalidArgument;
  return init_comm(comm, nranks, &ids[0], rank, config, NULL);
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  init_env();
  if (!comms || ndev < 0) return ncclInvalidArgument;
  int total = 0, old = 0;
  cudaGetDeviceCount(&total);
  cudaGetDevice(&old);
  for (int i = 0; devlist && i < ndev; i++) {
    if (devlist[i] < 0 || devlist[i] >= total) return ncclInvalidArgument;
    for (int j = 0; j < i; j++)
      if (devlist[j] == devlist[i]) return ncclInvalidUsage;
  }
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  ncclResult_t r = ncclSuccess;
  for (int i = 0; i < ndev; i++) {
    cudaSetDevice(devlist ? devlist[i] : i);
    ncclResult_t ri = init_comm(comms + i, ndev, &id, i, NULL, NULL);
    if (ri != ncclSuccess && r == ncclSuccess) r = ri;
  }
  cudaSetDevice(old);
  return r;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  (void)key;
  if (!comm || !newcomm) return ncclInvalidArgument;
  ncclUniqueId id;
  uint64_t clique = comm->clique * 1000003u + (uint64_t)color + 1;
  memset(&id, 0, sizeof id);
  memcpy(id.internal, &clique, sizeof clique);
  return init_comm(newcomm, comm->nranks, &id, comm->rank, config, config ? NULL : comm);
}

ncclResult_t fakeNcclCommInfo(ncclComm_t comm, fakeCommInfo* info) {
  if (!comm || !info) return ncclInvalidArgument;
  *info = comm->info;
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
