// GPU suite: runs on a CUDA device, reports SKIPPED with the reason without one.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/cuda/runtime.h"
#include "kernels/scalar_math.h"

namespace {

TEST(Cuda, GeluMatchesCpu) {
  auto st = strata::cuda::device_status();
  if (st.device_count == 0) GTEST_SKIP() << st.reason;
  std::vector<float> x(100000), y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = -5.0f + 10.0f * static_cast<float>(i) / static_cast<float>(x.size());
  strata::cuda::gelu_forward_host(x.data(), y.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_NEAR(y[i], strata::math::gelu(x[i]), 1e-5f * (1 + std::fabs(y[i]))) << "x=" << x[i];
}

}  // namespace
