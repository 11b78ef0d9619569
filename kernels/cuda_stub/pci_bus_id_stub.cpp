// Built without CUDA: no device, so no bus id (NVML is then not asked either).
#include "kernels/cuda/pci_bus_id.h"

namespace strata::cuda {

std::string current_device_pci_bus_id() { return {}; }

}  // namespace strata::cuda
