// Device queries, device choice, the host-sync counter and the TF32 switch of
// runtime.h. The GELU smoke kernel is in gelu_smoke.cu, which the host SIMT
// emulator builds (this file it does not).
#include <cuda_runtime.h>

#include <atomic>
#include <string>

#include "base/error.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/runtime.h"

namespace strata::cuda {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("CUDA ") + what + ": " + cudaGetErrorString(e));
}

}  // namespace

DeviceStatus device_status() {
  DeviceStatus s;
  cudaError_t e = cudaGetDeviceCount(&s.device_count);
  if (e != cudaSuccess) {
    s.device_count = 0;
    s.reason = std::string("no CUDA device: ") + cudaGetErrorString(e);
    return s;
  }
  if (s.device_count == 0) {
    s.reason = "no CUDA device: cudaGetDeviceCount returned 0";
    return s;
  }
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) == cudaSuccess) s.name = p.name;
  return s;
}

namespace {
std::atomic<uint64_t> g_host_syncs{0};
}  // namespace

void set_device(int index) {
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (index < 0 || index >= count)
    throw Error("CUDA device " + std::to_string(index) + " does not exist: " + std::to_string(count) +
                " device(s) visible");
  check(cudaSetDevice(index), "cudaSetDevice");
}

int current_device() {
  int d = -1;
  return cudaGetDevice(&d) == cudaSuccess ? d : -1;
}

uint64_t host_syncs() { return g_host_syncs.load(std::memory_order_relaxed); }
void note_host_sync() { g_host_syncs.fetch_add(1, std::memory_order_relaxed); }

void set_allow_tf32(bool allow) {
  if (device_status().device_count > 0) context().allow_tf32 = allow;
}

}  // namespace strata::cuda
