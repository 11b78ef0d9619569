// NvmlSampler against the real driver: the GPU it reads, picked by the CUDA
// device's PCI bus id, is the one CUDA runs on (same name; a 1 GiB cudaMalloc
// shows in its used memory), and every figure is in its range. SKIPPED
// without a device; the figures' plumbing is tested everywhere with a
// stand-in library (tests/train/logging/test_nvml_sampler.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kernels/cuda/pci_bus_id.h"
#include "kernels/cuda/runtime.h"
#include "kernels/runtime/allocator.h"
#include "train/logging/nvml_sampler.h"

#if STRATA_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace strata {
namespace {

TEST(NvmlDriver, ReadsTheGpuCudaRunsOn) {
  const auto st = cuda::device_status();
  if (st.device_count == 0) GTEST_SKIP() << st.reason;
#if STRATA_HAVE_CUDA
  ASSERT_EQ(cudaFree(nullptr), cudaSuccess);  // the context first: its own memory is not the test's
  const std::string bus_id = cuda::current_device_pci_bus_id();
  ASSERT_FALSE(bus_id.empty());
  NvmlSampler s(NvmlDeviceChoice{0, bus_id});
  if (!s.available())
    GTEST_SKIP() << "CUDA sees " << st.name << " but NVML is not there (" << s.unavailable_reason()
                 << "); in a container, NVIDIA_DRIVER_CAPABILITIES needs 'utility'";
  EXPECT_EQ(s.summary().name, st.name);
  const auto before = s.sample();
  ASSERT_TRUE(before) << s.unavailable_reason();
  EXPECT_GT(before->memory_total_bytes, int64_t{1} << 30);
  EXPECT_LE(before->memory_used_bytes, before->memory_total_bytes);
  EXPECT_GE(before->utilization, 0.0);
  EXPECT_LE(before->utilization, 1.0);
  EXPECT_GT(before->sm_clock_mhz, 0.0);
  EXPECT_GT(before->temperature_c, 0.0);
  EXPECT_LT(before->temperature_c, 120.0);
  if (std::isfinite(before->power_watts)) {
    EXPECT_GT(before->power_watts, 0.0);
  }

  constexpr size_t kGiB = size_t{1} << 30;
  Allocator& device = allocator_for(Device::cuda);
  void* p = device.allocate(kGiB);
  ASSERT_EQ(cudaMemset(p, 0, kGiB), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto after = s.sample();
  device.deallocate(p, kGiB);
  ASSERT_TRUE(after) << s.unavailable_reason();
  // another process may free a little meanwhile: most of the GiB must show
  EXPECT_GE(after->memory_used_bytes - before->memory_used_bytes, static_cast<int64_t>(kGiB * 15 / 16))
      << "NVML's GPU (" << bus_id << ") is not the one CUDA allocated on";
  EXPECT_EQ(s.summary().samples, 2);
#endif
}

}  // namespace
}  // namespace strata
