/*
 * floortest: creates communicators through one of NCCL's entry points on
 * the fake NCCL (built as libnccl.so, so that a preloaded
 * libdpml-nccl-tuner.so can interpose it) and prints what each creation
 * received and set up (fakeNcclCommInfo). Run by TestFloor* (floor_test.go)
 * with and without LD_PRELOAD.
 *
 *   floortest MODE N [KEY=VALUE...]
 *
 * MODE: rank (ncclCommInitRank), config (ncclCommInitRankConfig),
 * scalable (ncclCommInitRankScalable), all (ncclCommInitAll), split
 * (ncclCommInitRankConfig without a config, then ncclCommSplit of each
 * with a NULL config), splitcfg (the same, the split with a config of
 * NCCL_CONFIG_INITIALIZER). N ranks, one per fake GPU, created in one
 * group. The caller's config starts as NCCL_CONFIG_INITIALIZER; KEY=VALUE
 * sets min, max, version, magic, size or blocking in it, nullcfg passes
 * none; devs=1,0 is ncclCommInitAll's device list; dev=D the device
 * current before the calls; noid skips ncclGetUniqueId (as a rank other
 * than 0 does, which gets the id from rank 0), so that the first call to
 * NCCL is the creation.
 *
 * Output lines: "RC r" (the first error, or 0), "COMM i given=... size=...
 * version=... blocking=... min=... max=... channels=... device=..." or
 * "COMM i null", "USERCONFIG unchanged|changed", "DEVICE d" (current
 * after the calls).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl.h"

#define MAXR 8

static void show(const char* what, int i, ncclComm_t c) {
  fakeCommInfo info;
  if (c == NULL || fakeNcclCommInfo(c, &info) != ncclSuccess) {
    printf("%s %d null\n", what, i);
    return;
  }
  printf("%s %d given=%d size=%zu version=%u blocking=%d min=%d max=%d channels=%d device=%d\n", what, i, info.given,
         info.size, info.version, info.blocking, info.minCTAs, info.maxCTAs, info.channels, info.device);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: floortest rank|config|scalable|all|split|splitcfg N [KEY=VALUE...]\n");
    return 2;
  }
  const char* mode = argv[1];
  int n = atoi(argv[2]);
  if (n < 1 || n > MAXR) return 2;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  int nullcfg = 0, noid = 0, devs[MAXR], ndevs = 0, dev = -1;
  for (int i = 3; i < argc; i++) {
    char key[32];
    const char* eq = strchr(argv[i], '=');
    if (strcmp(argv[i], "nullcfg") == 0 || strcmp(argv[i], "noid") == 0) {
      *(argv[i][0] == 'n' && argv[i][1] == 'u' ? &nullcfg : &noid) = 1;
      continue;
    }
    if (eq == NULL || (size_t)(eq - argv[i]) >= sizeof key) return 2;
    memcpy(key, argv[i], (size_t)(eq - argv[i]));
    key[eq - argv[i]] = 0;
    const char* v = eq + 1;
    if (!strcmp(key, "min")) cfg.minCTAs = atoi(v);
    else if (!strcmp(key, "max")) cfg.maxCTAs = atoi(v);
    else if (!strcmp(key, "version")) cfg.version = (unsigned)strtoul(v, NULL, 10);
    else if (!strcmp(key, "magic")) cfg.magic = (unsigned)strtoul(v, NULL, 0);
    else if (!strcmp(key, "size")) cfg.size = strtoul(v, NULL, 10);
    else if (!strcmp(key, "blocking")) cfg.blocking = atoi(v);
    else if (!strcmp(key, "dev")) dev = atoi(v);
    else if (!strcmp(key, "devs")) {
      for (const char* p = v; *p && ndevs < MAXR; p = strchr(p, ',') ? strchr(p, ',') + 1 : p + strlen(p)) devs[ndevs++] = atoi(p);
    } else return 2;
  }
  ncclConfig_t saved = cfg;
  ncclConfig_t* cp = nullcfg ? NULL : &cfg;
  if (dev >= 0) cudaSetDevice(dev);
  ncclComm_t comms[MAXR] = {0}, children[MAXR] = {0};
  ncclResult_t rc = ncclSuccess, r;
  if (!strcmp(mode, "all")) {
    rc = ncclCommInitAll(comms, n, ndevs ? devs : NULL);
  } else {
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (!noid) ncclGetUniqueId(&id);
    ncclGroupStart();
    for (int i = 0; i < n; i++) {
      cudaSetDevice(i);
      if (!strcmp(mode, "rank"))
        r = ncclCommInitRank(&comms[i], n, id, i);
      else if (!strcmp(mode, "config"))
        r = ncclCommInitRankConfig(&comms[i], n, id, i, cp);
      else if (!strcmp(mode, "scalable"))
        r = ncclCommInitRankScalable(&comms[i], n, i, 1, &id, cp);
      else if (!strcmp(mode, "split") || !strcmp(mode, "splitcfg"))
        r = ncclCommInitRankConfig(&comms[i], n, id, i, NULL);
      else
        return 2;
      if (r != ncclSuccess && rc == ncclSuccess) rc = r;
    }
    r = ncclGroupEnd();
    if (r != ncclSuccess && rc == ncclSuccess) rc = r;
    if (!strncmp(mode, "split", 5) && rc == ncclSuccess) {
      ncclConfig_t child = NCCL_CONFIG_INITIALIZER;
      for (int i = 0; i < n; i++) {
        r = ncclCommSplit(comms[i], 0, i, &children[i], !strcmp(mode, "splitcfg") ? &child : NULL);
        if (r != ncclSuccess && rc == ncclSuccess) rc = r;
      }
    }
  }
  printf("RC %d\n", (int)rc);
  for (int i = 0; i < n; i++) show("COMM", i, comms[i]);
  for (int i = 0; i < n; i++)
    if (children[i]) show("CHILD", i, children[i]);
  printf("USERCONFIG %s\n", memcmp(&saved, &cfg, sizeof cfg) == 0 ? "unchanged" : "changed");
  int cur = -1;
  cudaGetDevice(&cur);
  printf("DEVICE %d\n", cur);
  for (int i = 0; i < n; i++) {
    if (children[i]) ncclCommDestroy(children[i]);
    if (comms[i]) ncclCommDestroy(comms[i]);
  }
  return 0;
}
