#include "kernels/cuda/pci_bus_id.h"

#include <cuda_runtime.h>

namespace strata::cuda {

std::string current_device_pci_bus_id() {
  int device = 0;
  char id[32] = {};  // "dddd:bb:dd.f" and its NUL fit in 13
  if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetPCIBusId(id, sizeof id, device) != cudaSuccess) {
    cudaGetLastError();  // a failed query leaves no sticky error for the next CUDA call to report
    return {};
  }
  return id;
}

}  // namespace strata::cuda
