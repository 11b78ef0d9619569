// The CUDA runtime calls the kernel files make, for the emulated backend:
// launches run synchronously on the host, so copies and fills are memcpy and
// memset at once, streams are ignored, and the device is an H200 as far as the
// launchers ask (shared memory per block 227 KiB with the opt-in, 132 SMs).
// Device memory is host memory: cudaMalloc is an exact-size heap block (256-byte
// aligned as CUDA's, filled with 0xFF: NaN in every float type) that
// AddressSanitizer guards, cudaFree releases it. runtime.h's host-sync counter,
// which runtime.cu keeps on CUDA, is here too.
// Only what the emulated files call is here; a new call fails to link.
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <new>

#include "kernels/cuda/runtime.h"

namespace {
constexpr std::align_val_t kDeviceAlignment{256};
std::atomic<uint64_t> g_host_syncs{0};
}  // namespace

namespace strata::cuda {
uint64_t host_syncs() { return g_host_syncs.load(std::memory_order_relaxed); }
void note_host_sync() { g_host_syncs.fetch_add(1, std::memory_order_relaxed); }
}  // namespace strata::cuda

extern "C" {

cudaError_t cudaGetLastError(void) { return cudaSuccess; }

// The only error these calls return is cudaErrorInvalidValue (an attribute not
// emulated); CUDA's own text for it, as cudart would give.
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    default:
      return "an error the emulated runtime does not return";
  }
}

cudaError_t cudaMalloc(void** p, size_t n) {
  if (n == 0) {  // as CUDA: success and no block
    *p = nullptr;
    return cudaSuccess;
  }
  *p = ::operator new(n, kDeviceAlignment);
  std::memset(*p, 0xFF, n);
  return cudaSuccess;
}

cudaError_t cudaFree(void* p) {
  if (p) ::operator delete(p, kDeviceAlignment);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, enum cudaMemcpyKind) {
  if (n > 0) std::memmove(dst, src, n);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

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
