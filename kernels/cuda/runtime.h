// The CUDA side of the kernels layer, callable from plain C++ (no CUDA headers).
// Without a CUDA build (kernels/cuda_stub) every query reports why there is no
// device, so GPU tests say SKIPPED with that reason instead of passing silently.
#pragma once
#include <cstdint>
#include <string>

namespace strata::cuda {

struct DeviceStatus {
  int device_count = 0;
  std::string reason;  // why there is no usable device (empty when there is one)
  std::string name;    // device 0's name when present
};

DeviceStatus device_status();

// Makes `index` this process's device (cudaSetDevice) before any context or
// allocation exists, so everything after it lives there. Throws strata::Error
// naming the index and the count when it is out of range or CUDA fails.
void set_device(int index);
// The device set_device() chose (cudaGetDevice); -1 without CUDA or a device.
int current_device();

// Host synchronisations the CUDA backend has made since the process started: a
// device-to-host copy the host waits for (item(), to(cpu), a read of a flag or
// a norm), an explicit synchronize(), a stream or event wait of the host. The
// training step's budget is one per optimizer step outside logging steps; the
// trainer reports the figure (summary.json `host_syncs_per_step`). 0 without CUDA.
uint64_t host_syncs();
// Counts one; called by the backend (and distributed/'s NCCL code) at each wait.
void note_host_sync();

// precision.allow_tf32: whether f32 GEMMs and convolutions may run on TF32 Tensor
// Cores. Off by default (f32 then means f32). No-op in a build without CUDA.
void set_allow_tf32(bool allow);

// GELU (tanh form) on device 0, host buffers in and out: the smoke path that
// proves scalar_math.h compiles and runs under nvcc. Throws strata::Error
// naming the CUDA error when no device is present.
void gelu_forward_host(const float* x, float* y, int64_t n);

}  // namespace strata::cuda
