// The PCI bus id of the process's current CUDA device ("0000:1B:00.0"), callable
// from plain C++: what names the same GPU to NVML (train/logging/nvml_sampler.h)
// whatever CUDA_VISIBLE_DEVICES renumbers. Empty in a build without CUDA
// (kernels/cuda_stub) or when the runtime finds no device.
#pragma once
#include <string>

namespace strata::cuda {

std::string current_device_pci_bus_id();

}  // namespace strata::cuda
