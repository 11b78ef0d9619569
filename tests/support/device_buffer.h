// Test helpers shared by the gpu suite. Always available (no CUDA headers, so
// the tests build in a CPU-only build and skip there): the skip for a missing
// device, and device memory owned for a scope (device_allocator()). CUDA builds
// only: a host tensor of f32 values stored in f32/f16/bf16, and its device copy,
// so that a CUDA kernel and a host computation see exactly the same (rounded)
// inputs.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/runtime.h"
#include "kernels/runtime/allocator.h"
#include "kernels/runtime/half.h"
#include "kernels/runtime/tensor_view.h"

#if STRATA_HAVE_CUDA
#include <cuda_runtime.h>
#endif

// Ends the test as SKIPPED, with the runtime's reason, when no device is usable.
#define STRATA_SKIP_WITHOUT_DEVICE()                                     \
  do {                                                                   \
    auto strata_st_ = ::strata::cuda::device_status();                   \
    if (strata_st_.device_count == 0) GTEST_SKIP() << strata_st_.reason; \
  } while (0)

namespace strata::gpu_test {

// `bytes` of device memory (at least 1, so that an empty tensor still has an
// address), freed at scope end.
struct DeviceMemory {
  size_t bytes;
  void* data;
  explicit DeviceMemory(size_t n) : bytes(std::max<size_t>(n, 1)), data(device_allocator().allocate(bytes)) {}
  ~DeviceMemory() { device_allocator().deallocate(data, bytes); }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
};

// Values in f32 on the host; `bits` their storage in `dtype` (rounded on set()).
struct HostTensor {
  DType dtype = DType::f32;
  Shape shape;
  std::vector<float> values;
  std::vector<std::byte> bits;

  HostTensor() = default;
  HostTensor(DType dt, Shape s) : dtype(dt), shape(std::move(s)) {
    values.assign(static_cast<size_t>(shape_numel(shape)), 0.0f);
    bits.assign(values.size() * dtype_size(dt), std::byte{0});
  }
  // Stores v rounded to dtype; values then hold the rounded numbers.
  void set(const std::vector<float>& v) {
    values = v;
    for (size_t i = 0; i < v.size(); ++i) {
      if (dtype == DType::f32) {
        std::memcpy(bits.data() + 4 * i, &v[i], 4);
        continue;
      }
      uint16_t h = dtype == DType::f16 ? float_to_f16_bits(v[i]) : float_to_bf16_bits(v[i]);
      std::memcpy(bits.data() + 2 * i, &h, 2);
      values[i] = dtype == DType::f16 ? f16_bits_to_float(h) : bf16_bits_to_float(h);
    }
  }
  void uniform(std::mt19937_64& rng, float lo, float hi) {
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> v(values.size());
    for (auto& x : v) x = u(rng);
    set(v);
  }
  // values from bits (after a copy back from the device, or a CPU kernel's write)
  void decode() {
    for (size_t i = 0; i < values.size(); ++i) {
      if (dtype == DType::f32) {
        std::memcpy(&values[i], bits.data() + 4 * i, 4);
        continue;
      }
      if (dtype == DType::i32) {  // indices (batch_norm's fused pool): exact as floats below 2^24
        int32_t v;
        std::memcpy(&v, bits.data() + 4 * i, 4);
        values[i] = static_cast<float>(v);
        continue;
      }
      uint16_t h;
      std::memcpy(&h, bits.data() + 2 * i, 2);
      values[i] = dtype == DType::f16 ? f16_bits_to_float(h) : bf16_bits_to_float(h);
    }
  }
  TensorView view() { return TensorView{bits.data(), dtype, shape, Device::cpu}; }
};

// max |x - y| / max(1, max |y|); NaN in x counts as infinitely far.
inline double scaled_error(const std::vector<float>& x, const std::vector<double>& y) {
  double m = 1.0, e = 0.0;
  for (size_t i = 0; i < y.size(); ++i) {
    m = std::max(m, std::fabs(y[i]));
    double d = std::isnan(x[i]) ? INFINITY : std::fabs(static_cast<double>(x[i]) - y[i]);
    e = std::max(e, d);
  }
  return e / m;
}

#if STRATA_HAVE_CUDA

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// A device copy of a HostTensor; NaN-filled when not copied in, so a kernel
// that leaves elements unwritten cannot pass.
struct DeviceTensor {
  DType dtype;
  Shape shape;
  void* ptr = nullptr;
  size_t bytes = 0;
  explicit DeviceTensor(const HostTensor& h, bool copy_in = true) : dtype(h.dtype), shape(h.shape) {
    bytes = h.bits.size();
    check(cudaMalloc(&ptr, bytes ? bytes : 1), "cudaMalloc");
    if (copy_in)
      check(cudaMemcpy(ptr, h.bits.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
    else
      check(cudaMemset(ptr, 0xFF, bytes), "cudaMemset");  // all-ones bits: NaN in every float dtype
    // Both run on the legacy default stream, which does not order against the
    // context's non-blocking stream the kernels use (and a pageable copy may
    // return before its DMA lands): wait, or a NaN fill could land after a result.
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after the upload");
  }
  ~DeviceTensor() { cudaFree(ptr); }
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;
  TensorView view() const { return TensorView{ptr, dtype, shape, Device::cuda}; }
  // Waits for every stream, then copies into h and decodes it.
  void to_host(HostTensor& h) const {
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    check(cudaMemcpy(h.bits.data(), ptr, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
    h.decode();
  }
};

#endif  // STRATA_HAVE_CUDA

}  // namespace strata::gpu_test
