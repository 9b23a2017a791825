/*
 * configtest: the ncclConfig_t rules of NCCL 2.28.3's parseCommConfig, as
 * the fake NCCL (testdata/fake) must apply them so that a sweep that
 * builds a config real NCCL rejects fails here too. Run by
 * TestFakeConfigRules (sweep_test.go); prints PASS configtest.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "nccl.h"

static int failures;

static void expect(const char* what, int minCTAs, int maxCTAs, unsigned version, unsigned magic, ncclResult_t want) {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.minCTAs = minCTAs;
  cfg.maxCTAs = maxCTAs;
  cfg.version = version;
  cfg.magic = magic;
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  ncclComm_t comm = NULL;
  ncclResult_t r = ncclCommInitRankConfig(&comm, 1, id, 0, &cfg);
  if (r != want) {
    fprintf(stderr, "FAIL %s: min %d max %d version %u: got %d, want %d\n", what, minCTAs, maxCTAs, version, (int)r, (int)want);
    failures++;
  }
  if (r == ncclSuccess) ncclCommDestroy(comm);
}

int main(void) {
  const unsigned V = NCCL_VERSION_CODE, M = 0xcafebeef;
  const int U = NCCL_CONFIG_UNDEF_INT;
  expect("both unset", U, U, V, M, ncclSuccess);
  expect("min = max", 32, 32, V, M, ncclSuccess);
  expect("min < max", 8, 64, V, M, ncclSuccess);
  expect("max only", U, 8, V, M, ncclSuccess);
  expect("min only (max reads as INT_MIN)", 32, U, V, M, ncclInvalidArgument);
  expect("min > max", 33, 32, V, M, ncclInvalidArgument);
  expect("min 0", 0, 32, V, M, ncclInvalidArgument);
  expect("max 0", U, 0, V, M, ncclInvalidArgument);
  expect("negative min", -1, 8, V, M, ncclInvalidArgument);
  expect("negative max", 1, -4, V, M, ncclInvalidArgument);
  expect("bad magic", 8, 8, V, 0, ncclInvalidArgument);
  /* A config of NCCL 2.16 has no minCTAs/maxCTAs: what is there is not read. */
  expect("2.16 config, min only", 32, U, NCCL_VERSION(2, 16, 5), M, ncclSuccess);
  expect("2.17 config, min only", 32, U, NCCL_VERSION(2, 17, 1), M, ncclInvalidArgument);
  if (strstr(ncclGetLastError(NULL), "Invalid config min/max channels attribute value 32/-2147483648") == NULL) {
    fprintf(stderr, "FAIL last error: %s\n", ncclGetLastError(NULL));
    failures++;
  }
  if (failures) return 1;
  printf("PASS configtest\n");
  return 0;
}
