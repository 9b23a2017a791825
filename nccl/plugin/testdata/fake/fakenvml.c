/*
 * FAKE NVML for tests without a GPU: the six functions the plugin's
 * machine detection calls (plugin.c), with NVML's names and C signatures.
 * Built as a shared library and named by DPML_NCCL_NVML. It is not NVML.
 *
 *   FAKE_NVML_GPUS    devices listed (default 2)
 *   FAKE_NVML_NAME    every device's name (default "NVIDIA H200"); FAKE_NVML_NAME1 overrides device 1's
 *   FAKE_NVML_NVLINK  1 (default): link 0 of every device is active; 0: no active link
 *   FAKE_NVML_FAIL    1: nvmlInit_v2 fails
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fakeNvmlDevice* nvmlDevice_t;
static struct fakeNvmlDevice {
  int index;
} devices[8];
static int inits;

static int ndev(void) {
  const char* s = getenv("FAKE_NVML_GPUS");
  int n = s ? atoi(s) : 2;
  return n < 0 ? 0 : n > 8 ? 8 : n;
}

int nvmlInit_v2(void) {
  const char* f = getenv("FAKE_NVML_FAIL");
  if (f && atoi(f)) return 999; /* NVML_ERROR_UNKNOWN */
  inits++;
  return 0;
}
int nvmlShutdown(void) {
  if (inits <= 0) return 1; /* NVML_ERROR_UNINITIALIZED */
  inits--;
  return 0;
}
int nvmlDeviceGetCount_v2(unsigned int* n) {
  if (inits <= 0) return 1;
  *n = (unsigned)ndev();
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t* dev) {
  if (inits <= 0) return 1;
  if ((int)i >= ndev()) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
  devices[i].index = (int)i;
  *dev = &devices[i];
  return 0;
}
int nvmlDeviceGetName(nvmlDevice_t dev, char* name, unsigned int len) {
  if (inits <= 0) return 1;
  const char* n = getenv("FAKE_NVML_NAME");
  if (dev->index == 1 && getenv("FAKE_NVML_NAME1")) n = getenv("FAKE_NVML_NAME1");
  snprintf(name, len, "%s", n ? n : "NVIDIA H200");
  return 0;
}
int nvmlDeviceGetNvLinkState(nvmlDevice_t dev, unsigned int link, int* active) {
  (void)dev;
  if (inits <= 0) return 1;
  if (link >= 18) return 2;
  const char* s = getenv("FAKE_NVML_NVLINK");
  *active = link == 0 && (!s || atoi(s));
  return 0;
}
