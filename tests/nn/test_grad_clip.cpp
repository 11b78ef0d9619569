// Global-norm gradient clipping against a hand computation.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "base/error.h"
#include "nn/grad_clip.h"

using namespace strata;

namespace {
Tensor param_with_grad(const std::vector<float>& g, const Shape& shape) {
  Tensor p = Tensor::zeros(shape);
  p.set_requires_grad(true);
  p.set_grad(Tensor::from_vector(g, shape));
  return p;
}
}  // namespace

TEST(GradClip, NormOverAllParameters) {
  // sqrt(3^2 + 4^2 + 12^2) = 13
  Tensor a = param_with_grad({3, 4}, {2});
  Tensor b = param_with_grad({12}, {1, 1});
  Tensor c = Tensor::zeros({4});  // no gradient
  EXPECT_DOUBLE_EQ(grad_norm({a, b, c}), 13.0);
}

TEST(GradClip, ScalesWhenAbove) {
  Tensor a = param_with_grad({3, 4}, {2});
  Tensor b = param_with_grad({12}, {1});
  double norm = clip_grad_norm(std::vector<Tensor>{a, b}, 6.5);
  EXPECT_DOUBLE_EQ(norm, 13.0);
  const float coef = static_cast<float>(6.5 / (13.0 + 1e-6));
  EXPECT_EQ(a.grad().to_float_vector(), (std::vector<float>{3 * coef, 4 * coef}));
  EXPECT_EQ(b.grad().to_float_vector(), (std::vector<float>{12 * coef}));
  EXPECT_NEAR(grad_norm({a, b}), 6.5, 1e-5);
}

TEST(GradClip, LeavesGradientsBelowMaxNorm) {
  Tensor a = param_with_grad({3, 4}, {2});
  NamedTensors named{{"a", a}};
  EXPECT_DOUBLE_EQ(clip_grad_norm(named, 5.0), 5.0);  // coef = 5/(5+1e-6) < 1: clipped by a hair
  Tensor b = param_with_grad({3, 4}, {2});
  EXPECT_DOUBLE_EQ(clip_grad_norm(std::vector<Tensor>{b}, 10.0), 5.0);
  EXPECT_EQ(b.grad().to_float_vector(), (std::vector<float>{3, 4}));
}

TEST(GradClip, DoubleAccumulation) {
  // 2^24 + 1024 ones: a float accumulator would stop at 2^24; the double sum is
  // rounded once to the f32 device scalar, and 2^24 + 1024 is a float.
  const int64_t n = (1 << 24) + 1024;
  Tensor p = Tensor::zeros({n});
  p.set_requires_grad(true);
  p.set_grad(Tensor::ones({n}));
  EXPECT_DOUBLE_EQ(grad_norm({p}), std::sqrt(static_cast<double>(n)));
}

TEST(GradClip, NonFiniteNormLeavesGradients) {
  Tensor a = param_with_grad({std::numeric_limits<float>::infinity(), 1.0f}, {2});
  EXPECT_TRUE(std::isinf(clip_grad_norm(std::vector<Tensor>{a}, 1.0)));
  EXPECT_EQ(a.grad().to_float_vector()[1], 1.0f);
  EXPECT_THROW(clip_grad_norm(std::vector<Tensor>{a}, 0.0), ConfigError);
}
