/*
 * FAKE nccl.h, for tests without a GPU: the part of NCCL's API that
 * cmd/ncclsweep and the channel floor's tests use (NCCL 2.28 names and
 * signatures), implemented by fakenccl.c on the host (compiled into a
 * program, or built as libnccl.so for the preload tests). The fake checks ncclConfig_t as NCCL 2.28 does,
 * loads the tuner plugin named by NCCL_TUNER_PLUGIN as NCCL does (dlopen,
 * the newest ncclTunerPlugin_vN it knows, init per communicator,
 * getCollInfo per collective, finalize), and advances the streams' virtual
 * clocks by a synthetic time of the channels used. It is not NCCL: the real
 * build of ncclsweep uses the real header.
 */
#ifndef FAKE_NCCL_H
#define FAKE_NCCL_H

#include <limits.h>
#include <stddef.h>

#include "cuda_runtime.h"

/* The version the fake claims; tests build older "headers" with -DFAKE_NCCL_MINOR=16. */
#ifndef FAKE_NCCL_MINOR
#define FAKE_NCCL_MINOR 28
#endif
#define NCCL_MAJOR 2
#define NCCL_MINOR FAKE_NCCL_MINOR
#define NCCL_PATCH 3
#define NCCL_VERSION(X, Y, Z) (((X) <= 2 && (Y) <= 8) ? (X)*1000 + (Y)*100 + (Z) : (X)*10000 + (Y)*100 + (Z))
#define NCCL_VERSION_CODE NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH)

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5
} ncclResult_t;

typedef struct fakeComm* ncclComm_t;

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum { ncclInt8 = 0, ncclInt32 = 2, ncclFloat32 = 7, ncclFloat64 = 8 } ncclDataType_t;
typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3 } ncclRedOp_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
} ncclConfig_t;
#define NCCL_CONFIG_INITIALIZER                                                                       \
  {                                                                                                   \
    sizeof(ncclConfig_t), 0xcafebeef, NCCL_VERSION_CODE, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NULL, NCCL_CONFIG_UNDEF_INT                     \
  }

ncclResult_t ncclGetVersion(int* version);
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId);
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config);
ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
                                      ncclConfig_t* config);
ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream);
const char* ncclGetErrorString(ncclResult_t result);
const char* ncclGetLastError(ncclComm_t comm);

/* Fake only: what a communicator's creation received (the config as the
 * caller passed it: given 0 for none) and what it set up (channels, the
 * CUDA device current at its creation). */
typedef struct {
  int given;
  size_t size;
  unsigned int version;
  int blocking, minCTAs, maxCTAs;
  int channels, device;
} fakeCommInfo;
ncclResult_t fakeNcclCommInfo(ncclComm_t comm, fakeCommInfo* info);

#endif
