/*
 * The channel floor, applied when libdpml-nccl-tuner.so is preloaded
 * (LD_PRELOAD=.../libdpml-nccl-tuner.so NCCL_TUNER_PLUGIN=.../libdpml-nccl-tuner.so ./app).
 *
 * NCCL fixes a communicator's channels while it creates it (the graph
 * search, NCCL_MIN/MAX_NCHANNELS and the config's minCTAs/maxCTAs) and
 * loads the tuner plugin only afterwards; every call's channel answer is
 * capped at the communicator's. So the plugin's answers above NCCL's own
 * count need a communicator created with more channels. Preloaded, this
 * library defines NCCL's communicator-creation entry points, and each
 * calls NCCL's own (dlsym RTLD_NEXT) with a copy of the caller's config
 * whose minCTAs is the floor of the plugin's data for this machine
 * (dpmlNcclFloor in export.go decides it) and maxCTAs NCCL's maximum.
 *
 * The caller's choice always wins: a config whose minCTAs or maxCTAs is
 * set, and NCCL's channel settings in the environment or in NCCL's
 * configuration files, pass the call through unchanged; so do an NCCL
 * older than 2.17 (no minCTAs), a config NCCL will refuse (wrong magic:
 * NCCL gives its own error), DPML_NCCL_FLOOR=off, and a machine or layout
 * the data has no floor for. The caller's config is never written: the
 * floor goes into a copy. Every error of NCCL's function is returned as
 * it is. Without LD_PRELOAD none of this runs: NCCL opens the library
 * with RTLD_LOCAL and the program's calls go to NCCL.
 *
 * Not interposed: ncclCommSplit and ncclCommShrink. A child made with a
 * NULL config takes its parent's (NCCL copies it), so a floored parent
 * gives a floored child; a child made with a config of its own gets no
 * floor, because its rank count, on which the floor depends, is known only
 * once the split is made.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "dpml_nccl_tuner.h"
#include "_cgo_export.h"

_Static_assert(offsetof(dpml_nccl_config_v2_17, blocking) == 16 && offsetof(dpml_nccl_config_v2_17, minCTAs) == 24 &&
                   offsetof(dpml_nccl_config_v2_17, maxCTAs) == 28 && sizeof(dpml_nccl_config_v2_17) == 40,
               "ncclConfig_t of NCCL 2.17: size, magic, version, blocking, cgaClusterSize, minCTAs, maxCTAs, netName");
_Static_assert(sizeof(ncclUniqueId) == 128, "ncclUniqueId: 128 bytes");

typedef ncclResult_t (*init_rank_fn)(ncclComm_t*, int, ncclUniqueId, int);
typedef ncclResult_t (*init_config_fn)(ncclComm_t*, int, ncclUniqueId, int, void*);
typedef ncclResult_t (*init_scalable_fn)(ncclComm_t*, int, int, int, ncclUniqueId*, void*);
typedef ncclResult_t (*init_all_fn)(ncclComm_t*, int, const int*);
typedef ncclResult_t (*version_fn)(int*);
typedef ncclResult_t (*unique_id_fn)(ncclUniqueId*);
typedef ncclResult_t (*group_fn)(void);

/* NCCL's functions, the next definitions after this library's. */
static struct {
  init_rank_fn rank;
  init_config_fn config;
  init_scalable_fn scalable;
  init_all_fn all;
  version_fn version;
  unique_id_fn unique_id;
  group_fn group_start, group_end;
} real;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;

static void resolve_real(void) {
  real.rank = (init_rank_fn)dlsym(RTLD_NEXT, "ncclCommInitRank");
  real.config = (init_config_fn)dlsym(RTLD_NEXT, "ncclCommInitRankConfig");
  real.scalable = (init_scalable_fn)dlsym(RTLD_NEXT, "ncclCommInitRankScalable");
  real.all = (init_all_fn)dlsym(RTLD_NEXT, "ncclCommInitAll");
  real.version = (version_fn)dlsym(RTLD_NEXT, "ncclGetVersion");
  real.unique_id = (unique_id_fn)dlsym(RTLD_NEXT, "ncclGetUniqueId");
  real.group_start = (group_fn)dlsym(RTLD_NEXT, "ncclGroupStart");
  real.group_end = (group_fn)dlsym(RTLD_NEXT, "ncclGroupEnd");
}

static int verbose(void) {
  const char* v = getenv("DPML_VERBOSE");
  return v != NULL && atoi(v) >= 1;
}

/* warn prints a warning once per process per kind (errors of the
 * settings, a missing NCCL function). */
static int g_warned_setting, g_warned_missing;
static void warn_once(int* flag, const char* fn, const char* what) {
  if (!__atomic_exchange_n(flag, 1, __ATOMIC_RELAXED) || verbose())
    fprintf(stderr, "libdpml-nccl-tuner: WARN %s: %s\n", fn, what);
}

static ncclResult_t missing(const char* fn) {
  char what[160];
  snprintf(what, sizeof what, "NCCL's %s not found after this library (is libnccl loaded?)", fn);
  warn_once(&g_warned_missing, fn, what);
  return ncclInternalError;
}

/* NCCL's channel settings: NCCL_MIN/MAX_NCHANNELS (and the same under the names
 * NCCL_MIN/MAX_NRINGS) combine with the config's minCTAs/maxCTAs when
 * NCCL sets a communicator's channels; NCCL_MIN/MAX_CTAS replace them. A
 * user who set any of them has chosen the channels. */
static const char* channel_settings[] = {"NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_MIN_NRINGS",
                                         "NCCL_MAX_NRINGS",    "NCCL_MIN_CTAS",      "NCCL_MAX_CTAS"};
#define NSETTINGS (sizeof channel_settings / sizeof channel_settings[0])

/* conf_sets returns the first channel setting file path sets to a
 * non-empty value, or NULL. NCCL reads its configuration files into the
 * environment at its first call (NCCL_CONF_FILE, else ~/.nccl.conf, then
 * /etc/nccl.conf; NAME=VALUE lines, # comments); the first call may be
 * this one, before NCCL has read them. */
static const char* conf_sets(const char* path) {
  FILE* f = fopen(path, "r");
  if (f == NULL) return NULL;
  char line[1024];
  const char* found = NULL;
  while (found == NULL && fgets(line, sizeof line, f) != NULL) {
    if (line[0] == '#') continue;
    char* eq = strchr(line, '=');
    if (eq == NULL) continue;
    *eq = 0;
    char* val = eq + 1;
    val[strcspn(val, "\r\n")] = 0;
    if (*val == 0) continue;
    for (size_t i = 0; i < NSETTINGS; i++)
      if (strcmp(line, channel_settings[i]) == 0) found = channel_settings[i];
  }
  fclose(f);
  return found;
}

/* user_channel_setting returns the name of a channel setting the user
 * made (environment or NCCL's configuration files), or NULL. */
static const char* user_channel_setting(char* where, size_t n) {
  for (size_t i = 0; i < NSETTINGS; i++) {
    const char* v = getenv(channel_settings[i]);
    if (v != NULL && *v != 0) {
      snprintf(where, n, "the environment");
      return channel_settings[i];
    }
  }
  char path[1024];
  const char* user = getenv("NCCL_CONF_FILE");
  if (user != NULL && *user != 0) {
    snprintf(path, sizeof path, "%s", user);
  } else {
    struct passwd* pw = getpwuid(getuid());
    if (pw != NULL && pw->pw_dir != NULL)
      snprintf(path, sizeof path, "%s/.nccl.conf", pw->pw_dir);
    else
      path[0] = 0;
  }
  const char* s = path[0] ? conf_sets(path) : NULL;
  if (s == NULL) snprintf(path, sizeof path, "/etc/nccl.conf"), s = conf_sets(path);
  if (s != NULL) snprintf(where, n, "%s", path);
  return s;
}

/* A config buffer: the caller's config copied (up to CFG_MAX bytes), or a
 * config of NCCL 2.17's layout. */
#define CFG_MAX 4096
typedef union {
  unsigned char bytes[CFG_MAX];
  dpml_nccl_config_v2_17 c;
  long double align;
} cfgbuf;

/* fresh_config fills *b with a config of NCCL 2.17 (every field undefined
 * but blocking, minCTAs and maxCTAs); NCCL gives the fields of later
 * releases their defaults. */
static void fresh_config(cfgbuf* b, int blocking, int floor) {
  memset(b, 0, sizeof(dpml_nccl_config_v2_17));
  b->c.size = sizeof(dpml_nccl_config_v2_17);
  b->c.magic = DPML_NCCL_CONFIG_MAGIC;
  b->c.version = DPML_NCCL_VERSION(2, 17, 0);
  b->c.blocking = blocking;
  b->c.cgaClusterSize = DPML_NCCL_CONFIG_UNDEF_INT;
  b->c.minCTAs = floor;
  b->c.maxCTAs = DPML_NCCL_MAXCHANNELS;
  b->c.netName = NULL;
}

/* prepare decides the config for a communicator of nranks ranks created
 * by fn with the caller's config user (NULL: none): it returns b, filled
 * with the caller's config and the floor, or NULL to pass the caller's
 * unchanged; either way one line on stderr under DPML_VERBOSE >= 1. */
static void* prepare(const char* fn, int nranks, const void* user, cfgbuf* b) {
  char why[DPML_NCCL_MSG] = "", where[1100];
  int floor = 0, blocking = DPML_NCCL_CONFIG_UNDEF_INT, copy = 0;
  size_t size = 0;
  const char* set = user_channel_setting(where, sizeof where);
  if (set != NULL) {
    snprintf(why, sizeof why, "%s is set (%.400s)", set, where);
    goto pass;
  }
  if (user != NULL) {
    struct {
      size_t size;
      unsigned int magic, version;
    } head;
    memcpy(&head, user, sizeof head);
    if (head.magic != DPML_NCCL_CONFIG_MAGIC) {
      snprintf(why, sizeof why, "the config was not made by NCCL_CONFIG_INITIALIZER (NCCL decides)");
      goto pass;
    }
    if (head.version >= (unsigned)DPML_NCCL_VERSION(2, 17, 0)) {
      if (head.size < offsetof(dpml_nccl_config_v2_17, maxCTAs) + sizeof(int) || head.size > CFG_MAX) {
        snprintf(why, sizeof why, "the config's size %zu does not fit its version %u", head.size, head.version);
        goto pass;
      }
      const dpml_nccl_config_v2_17* u = (const dpml_nccl_config_v2_17*)user;
      if (u->minCTAs != DPML_NCCL_CONFIG_UNDEF_INT || u->maxCTAs != DPML_NCCL_CONFIG_UNDEF_INT) {
        snprintf(why, sizeof why, "the caller set minCTAs/maxCTAs");
        goto pass;
      }
      copy = 1, size = head.size;
    } else if (head.version >= (unsigned)DPML_NCCL_VERSION(2, 14, 0) && head.size >= offsetof(dpml_nccl_config_v2_17, blocking) + sizeof(int)) {
      /* A config of 2.14 to 2.16 ends at blocking: it becomes a 2.17
       * config with the caller's blocking and NCCL's defaults. */
      memcpy(&blocking, (const char*)user + offsetof(dpml_nccl_config_v2_17, blocking), sizeof blocking);
    }
  }
  pthread_once(&real_once, resolve_real);
  int version = 0;
  if (real.version == NULL || real.version(&version) != ncclSuccess || version < DPML_NCCL_VERSION(2, 17, 0)) {
    snprintf(why, sizeof why, "NCCL %d has no minCTAs (2.17)", version);
    goto pass;
  }
  const char* fset = getenv("DPML_NCCL_FLOOR");
  const char* gpu = getenv("DPML_NCCL_GPU");
  const char* link = getenv("DPML_NCCL_LINK");
  const char *ngpu = "", *nlink = "", *note = "";
  int hostGPUs = 0;
  if (fset == NULL || strcasecmp(fset, "off") != 0) dpml_nccl_machine(&ngpu, &nlink, &hostGPUs, &note);
  if (gpu == NULL || *gpu == 0) gpu = ngpu;
  if (link == NULL || *link == 0) link = nlink;
  floor = dpmlNcclFloor(nranks, hostGPUs, (char*)fset, getenv("DPML_NCCL_POLICY"), getenv("DPML_NCCL_TABLE"), (char*)gpu,
                        (char*)link, why, (int)sizeof why);
  if (floor < 0) {
    warn_once(&g_warned_setting, fn, why);
    floor = 0;
  }
  if (floor == 0) {
    if (*note && hostGPUs == 0) snprintf(why + strlen(why), sizeof why - strlen(why), " (%s)", note);
    goto pass;
  }
  if (copy) {
    memcpy(b->bytes, user, size);
    b->c.minCTAs = floor;
    b->c.maxCTAs = DPML_NCCL_MAXCHANNELS;
  } else {
    fresh_config(b, blocking, floor);
  }
  if (verbose())
    fprintf(stderr, "libdpml-nccl-tuner: INFO %s, %d ranks: minCTAs %d, maxCTAs %d (%s)\n", fn, nranks, floor,
            DPML_NCCL_MAXCHANNELS, why);
  return b;
pass:
  if (verbose()) fprintf(stderr, "libdpml-nccl-tuner: INFO %s, %d ranks: no channel floor (%s)\n", fn, nranks, why);
  return NULL;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  pthread_once(&real_once, resolve_real);
  if (real.rank == NULL) return missing("ncclCommInitRank");
  cfgbuf b;
  void* cfg = real.config != NULL ? prepare("ncclCommInitRank", nranks, NULL, &b) : NULL;
  if (cfg == NULL) return real.rank(comm, nranks, id, rank);
  /* ncclCommInitRank is ncclCommInitRankConfig with NCCL_CONFIG_INITIALIZER. */
  return real.config(comm, nranks, id, rank, cfg);
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, void* config) {
  pthread_once(&real_once, resolve_real);
  if (real.config == NULL) return missing("ncclCommInitRankConfig");
  cfgbuf b;
  void* cfg = prepare("ncclCommInitRankConfig", nranks, config, &b);
  return real.config(comm, nranks, id, rank, cfg != NULL ? cfg : config);
}

ncclResult_t ncclCommInitRankScalable(ncclComm_t* comm, int nranks, int rank, int nId, ncclUniqueId* ids, void* config) {
  pthread_once(&real_once, resolve_real);
  if (real.scalable == NULL) return missing("ncclCommInitRankScalable");
  cfgbuf b;
  void* cfg = prepare("ncclCommInitRankScalable", nranks, config, &b);
  return real.scalable(comm, nranks, rank, nId, ids, cfg != NULL ? cfg : config);
}

/* The CUDA runtime, for ncclCommInitAll: the process's own if it exports
 * one, else libcudart opened here (the library links no CUDA). */
typedef int (*cuda_dev_fn)(int);
typedef int (*cuda_getdev_fn)(int*);
static struct {
  cuda_dev_fn set_device;
  cuda_getdev_fn get_device, device_count;
} cuda;
static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;

static void resolve_cuda(void) {
  static const char* libs[] = {NULL, "libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"};
  for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
    void* h = libs[i] == NULL ? RTLD_DEFAULT : dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) continue;
    cuda.set_device = (cuda_dev_fn)dlsym(h, "cudaSetDevice");
    cuda.get_device = (cuda_getdev_fn)dlsym(h, "cudaGetDevice");
    cuda.device_count = (cuda_getdev_fn)dlsym(h, "cudaGetDeviceCount");
    if (cuda.set_device && cuda.get_device && cuda.device_count) return;
    if (h != RTLD_DEFAULT) dlclose(h);
  }
  memset(&cuda, 0, sizeof cuda);
}

/* ncclCommInitAll: NCCL's creates its communicators through internal
 * functions this library cannot reach, so with a floor it is done here the
 * way NCCL documents it: one unique id, then in a group one
 * ncclCommInitRankConfig per device. Anything unusual (no comms array,
 * fewer than 2 devices, a device list NCCL would refuse, no CUDA runtime
 * to select devices with) goes to NCCL's own function, which gives its own
 * result. */
ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  static const char fn[] = "ncclCommInitAll";
  pthread_once(&real_once, resolve_real);
  if (real.all == NULL) return missing(fn);
  if (comms == NULL || ndev < 2 || real.config == NULL || real.unique_id == NULL || real.group_start == NULL ||
      real.group_end == NULL)
    return real.all(comms, ndev, devlist);
  pthread_once(&cuda_once, resolve_cuda);
  int old = 0, total = 0;
  if (cuda.set_device == NULL || cuda.get_device(&old) != 0 || cuda.device_count(&total) != 0) {
    if (verbose()) fprintf(stderr, "libdpml-nccl-tuner: INFO %s, %d ranks: no channel floor (no CUDA runtime found)\n", fn, ndev);
    return real.all(comms, ndev, devlist);
  }
  if (devlist != NULL) {
    for (int i = 0; i < ndev; i++) {
      int bad = devlist[i] < 0 || devlist[i] >= total;
      for (int j = 0; j < i && !bad; j++) bad = devlist[j] == devlist[i];
      if (bad) return real.all(comms, ndev, devlist);
    }
  }
  cfgbuf b;
  void* cfg = prepare(fn, ndev, NULL, &b);
  if (cfg == NULL) return real.all(comms, ndev, devlist);
  ncclUniqueId id;
  ncclResult_t r = real.unique_id(&id);
  if (r != ncclSuccess) return r;
  r = real.group_start();
  if (r != ncclSuccess) return r;
  ncclResult_t first = ncclSuccess;
  for (int i = 0; i < ndev; i++) {
    /* As NCCL: a failure does not stop the loop; ncclGroupEnd cleans up. */
    comms[i] = NULL;
    if (cuda.set_device(devlist ? devlist[i] : i) != 0) {
      if (first == ncclSuccess) first = ncclUnhandledCudaError;
      continue;
    }
    ncclResult_t ri = real.config(comms + i, ndev, id, i, cfg);
    if (ri != ncclSuccess && first == ncclSuccess) first = ri;
  }
  r = real.group_end();
  cuda.set_device(old);
  return r != ncclSuccess ? r : first;
}
