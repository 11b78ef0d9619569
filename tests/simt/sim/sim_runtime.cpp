// The CUDA runtime calls the kernel files make, for the emulated backend:
// launches run synchronously on the host, so copies and fills are memcpy and
// memset at once, streams are ignored, and the device is an H200 as far as the
// launchers ask (shared memory per block 227 KiB with the opt-in, 132 SMs).
// Only what the emulated files call is here; a new call fails to link.
#include <cuda_runtime_api.h>

#include <cstring>

extern "C" {

cudaError_t cudaGetLastError(void) { return cudaSuccess; }

cudaError_t cudaMemsetAsync(void* p, int value, size_t n, cudaStream_t) {
  std::memset(p, value, n);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, enum cudaMemcpyKind, cudaStream_t) {
  std::memmove(dst, src, n);
  return cudaSuccess;
}

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                              size_t height, enum cudaMemcpyKind, cudaStream_t) {
  for (size_t r = 0; r < height; ++r)
    std::memmove(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch, width);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int) {
  switch (attr) {
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *value = 232448;  // 227 KiB, sm_90
      return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlock:
      *value = 49152;
      return cudaSuccess;
    case cudaDevAttrMultiProcessorCount:
      *value = 132;
      return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor:
      *value = 9;
      return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor:
      *value = 0;
      return cudaSuccess;
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t cudaFuncSetAttribute(const void*, enum cudaFuncAttribute, int) { return cudaSuccess; }

}  // extern "C"
