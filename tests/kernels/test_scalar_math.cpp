// The branch-free exp and tanh that GELU uses on the CPU and the GPU
// (kernels/scalar_math.h) against double precision, on a dense sweep of their
// ranges, with the error bounds their comments state.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/scalar_math.h"

namespace {
using strata::math::exp_poly;
using strata::math::gelu;
using strata::math::gelu_grad;
using strata::math::tanh_poly;

// Every 1/1024 across [lo, hi], and the ends.
template <typename Fn>
void sweep(float lo, float hi, Fn check) {
  for (double v = lo; v <= hi; v += 1.0 / 1024) check(static_cast<float>(v));
  check(hi);
}

TEST(ScalarMath, ExpPolyIsWithinFourUlpOfExp) {
  double worst = 0;
  sweep(-87.0f, 88.0f, [&](float y) {
    const double want = std::exp(static_cast<double>(y));
    const double rel = std::fabs(exp_poly(y) - want) / want;
    worst = std::max(worst, rel);
    ASSERT_LT(rel, 4 * 0x1p-23) << "exp_poly(" << y << ") = " << exp_poly(y) << ", exp = " << want;
  });
  EXPECT_GT(worst, 0.0);  // the sweep compared something
  EXPECT_EQ(exp_poly(0.0f), 1.0f);
}

TEST(ScalarMath, TanhPolyAbsoluteErrorBelowTwoTenthsOfAMillionth) {
  sweep(-30.0f, 30.0f, [&](float u) {
    const double want = std::tanh(static_cast<double>(u));
    ASSERT_LT(std::fabs(tanh_poly(u) - want), 2e-7) << "tanh_poly(" << u << ")";
  });
  EXPECT_EQ(tanh_poly(0.0f), 0.0f);
  EXPECT_EQ(tanh_poly(std::numeric_limits<float>::infinity()), 1.0f);
  EXPECT_EQ(tanh_poly(-std::numeric_limits<float>::infinity()), -1.0f);
  EXPECT_EQ(tanh_poly(-1.5f), -tanh_poly(1.5f));  // odd, exactly
}

double gelu_ref(double x) {
  const double k = std::sqrt(2 / M_PI), c = 0.044715;
  return 0.5 * x * (1 + std::tanh(k * (x + c * x * x * x)));
}
double gelu_grad_ref(double x) {
  const double k = std::sqrt(2 / M_PI), c = 0.044715, t = std::tanh(k * (x + c * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * c * x * x);
}

// Absolute error scaled by max(1, |x|): GELU's tanh is added to 1 and then
// multiplied by x, so its error is absolute and grows with x (as with std::tanh).
TEST(ScalarMath, GeluAndItsGradientMatchDoublePrecision) {
  sweep(-12.0f, 12.0f, [&](float x) {
    const double scale = std::max(1.0, std::fabs(static_cast<double>(x)));
    ASSERT_LT(std::fabs(gelu(x) - gelu_ref(x)) / scale, 3e-7) << "gelu(" << x << ")";
    ASSERT_LT(std::fabs(gelu_grad(x) - gelu_grad_ref(x)) / scale, 3e-7) << "gelu_grad(" << x << ")";
  });
  EXPECT_TRUE(std::isnan(gelu(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(gelu_grad(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(gelu(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(gelu(0.0f), 0.0f);
}

}  // namespace
