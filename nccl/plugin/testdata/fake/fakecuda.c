/* FAKE CUDA runtime for tests without a GPU (see cuda_runtime.h here). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_runtime.h"

struct fakeStream {
  double clock_us; /* virtual time: what the stream's work took so far */
};
struct fakeEvent {
  double at_us;
};

static int current;

static int ngpus(void) {
  const char* s = getenv("FAKE_CUDA_GPUS");
  return s ? atoi(s) : 2;
}

cudaError_t cudaGetDeviceCount(int* count) {
  *count = ngpus();
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= ngpus()) return cudaErrorInvalidDevice;
  current = device;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  if (!device) return cudaErrorInvalidValue;
  *device = current;
  return cudaSuccess;
}
cudaError_t cudaMalloc(void** ptr, size_t size) {
  *ptr = malloc(size ? size : 1);
  return *ptr ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void* ptr) {
  free(ptr);
  return cudaSuccess;
}
cudaError_t cudaMemset(void* ptr, int value, size_t count) {
  memset(ptr, value, count);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  (void)kind;
  memcpy(dst, src, count);
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  (void)flags;
  *stream = calloc(1, sizeof **stream);
  return *stream ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaEventCreate(cudaEvent_t* event) {
  *event = calloc(1, sizeof **event);
  return *event ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (!event || !stream) return cudaErrorInvalidValue;
  event->at_us = stream->clock_us;
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) { return event ? cudaSuccess : cudaErrorInvalidValue; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!start || !end) return cudaErrorInvalidValue;
  *ms = (float)((end->at_us - start->at_us) / 1000.0);
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device) {
  snprintf(prop->name, sizeof prop->name, "Fake GPU %d", device);
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* version) {
  *version = 13000;
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* version) {
  *version = 13000;
  return cudaSuccess;
}
const char* cudaGetErrorString(cudaError_t error) { return error == cudaSuccess ? "no error" : "fake CUDA error"; }

void fakeStreamAdvance(cudaStream_t stream, double us) { stream->clock_us += us; }
