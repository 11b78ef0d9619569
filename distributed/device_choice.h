// DeviceChoice: the device a rank trains on, from the config's `device` key and
// what this process sees. auto = CUDA when the rank sees a GPU, else the CPU;
// cuda = a GPU or a clear error; cpu = the CPU even with GPUs present. The GPU
// index follows select_device(): STRATA_DEVICE, else the local rank modulo the
// visible devices (one visible GPU per task under CUDA_VISIBLE_DEVICES works).
#pragma once
#include <string>

#include "distributed/launch_env.h"
#include "kernels/cuda/runtime.h"
#include "kernels/runtime/device.h"

namespace strata {

struct DeviceChoice {
  Device device = Device::cpu;
  int index = -1;     // the CUDA device index when device is cuda
  std::string label;  // for the start-up line: "cpu", "cuda:1 (NVIDIA H200)"
};

// Pure: `setting` is the config's device value (auto | cpu | cuda), `status`
// what CUDA reports. device: cuda without a device is a ConfigError naming the
// key, the rank and the reason.
DeviceChoice choose_device(const std::string& setting, const LaunchEnv& env,
                           const cuda::DeviceStatus& status);

// choose_device() with this process's CUDA status, then makes the GPU current
// (cuda::set_device) before anything is allocated on it.
DeviceChoice use_device(const std::string& setting, const LaunchEnv& env);

}  // namespace strata
