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

// precision.allow_tf32: whether f32 GEMMs and convolutions may run on TF32 Tensor
// Cores. Off by default (f32 then means f32). No-op in a build without CUDA.
void set_allow_tf32(bool allow);

// GELU (tanh form) on device 0, host buffers in and out: the smoke path that
// proves scalar_math.h compiles and runs under nvcc. Throws strata::Error
// naming the CUDA error when no device is present.
void gelu_forward_host(const float* x, float* y, int64_t n);

}  // namespace strata::cuda
