// Built when strata is configured without CUDA: says so instead of pretending.
#include <string>

#include "base/error.h"
#include "kernels/cuda/runtime.h"

namespace strata::cuda {

DeviceStatus device_status() {
  DeviceStatus s;
  s.reason = "strata was built without CUDA (STRATA_CUDA=OFF or no nvcc at configure time)";
  return s;
}

void set_allow_tf32(bool) {}

void set_device(int index) {
  throw Error("cannot use CUDA device " + std::to_string(index) + ": " + device_status().reason);
}
int current_device() { return -1; }
uint64_t host_syncs() { return 0; }
void note_host_sync() {}

void gelu_forward_host(const float*, float*, int64_t) { throw Error(device_status().reason); }

}  // namespace strata::cuda
