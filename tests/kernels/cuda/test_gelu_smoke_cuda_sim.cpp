// The CUDA smoke path, gelu_forward_host (kernels/cuda/gelu_smoke.cu), on the
// host SIMT emulator (tests/simt; this file is compiled with its cuda_host.h
// force-included, so cuda:: here is the emulated backend): its cudaMalloc'd
// buffers are exact-size heap blocks (tests/simt/sim/sim_runtime.cpp) and the
// host arrays here are too, so AddressSanitizer sees a thread past n; against
// the CPU's math::gelu with test_cuda_smoke.cpp's tolerance, on sizes off the
// block of 256, and on no elements at all.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cuda/runtime.h"
#include "kernels/scalar_math.h"

namespace {

TEST(CudaSimGeluSmoke, GeluMatchesCpu) {
  for (size_t n : {size_t(1), size_t(255), size_t(257), size_t(1000), size_t(4099)}) {
    std::vector<float> x(n), y(n, NAN);
    for (size_t i = 0; i < n; ++i) x[i] = -5.0f + 10.0f * static_cast<float>(i) / static_cast<float>(n);
    strata::cuda::gelu_forward_host(x.data(), y.data(), static_cast<int64_t>(n));
    for (size_t i = 0; i < n; ++i)
      ASSERT_NEAR(y[i], strata::math::gelu(x[i]), 1e-5f * (1 + std::fabs(y[i])))
          << "n=" << n << " x=" << x[i];
  }
}

TEST(CudaSimGeluSmoke, NoElementsIsNoWork) {
  std::vector<float> x(1, 1.0f), y(1, NAN);
  EXPECT_NO_THROW(strata::cuda::gelu_forward_host(x.data(), y.data(), 0));
  EXPECT_TRUE(std::isnan(y[0]));
}

}  // namespace
