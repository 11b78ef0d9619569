// Shared by the gpu tests, CUDA-free so that they build in a CPU-only build and
// skip there: the skip for a missing device, and device memory owned for a
// scope, from device_allocator().
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>

#include "kernels/allocator.h"
#include "kernels/cuda/runtime.h"

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

}  // namespace strata::gpu_test
