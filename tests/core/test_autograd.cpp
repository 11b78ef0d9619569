// Autograd: the chain rule on a small graph, accumulation when a tensor is used
// twice, no-grad scopes, error cases and the differentiable cast.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "core/autograd.h"
#include "core/ops.h"
#include "core/random.h"
#include "core/tensor.h"

using namespace strata;

namespace {
Tensor leaf(std::vector<float> v, Shape s) { return Tensor::from_vector(v, s).set_requires_grad(); }
}  // namespace

TEST(Autograd, ChainRuleOnSmallGraph) {
  // L = sum(tanh(a * b + a)), dL/da = (1 - tanh^2(u)) (b + 1), dL/db = (1 - tanh^2(u)) a
  Tensor a = leaf({0.5f, -1.0f, 2.0f}, {3}), b = leaf({1.5f, 0.25f, -0.5f}, {3});
  Tensor loss = sum(tanh(a * b + a));
  EXPECT_TRUE(loss.requires_grad());
  EXPECT_NE(loss.grad_fn(), nullptr);
  loss.backward();
  auto av = a.to_float_vector(), bv = b.to_float_vector();
  auto ga = a.grad().to_float_vector(), gb = b.grad().to_float_vector();
  for (size_t i = 0; i < 3; ++i) {
    double u = av[i] * bv[i] + av[i], d = 1.0 - std::tanh(u) * std::tanh(u);
    EXPECT_NEAR(ga[i], d * (bv[i] + 1.0), 1e-6) << i;
    EXPECT_NEAR(gb[i], d * av[i], 1e-6) << i;
  }
}

TEST(Autograd, BroadcastAndMeanGradients) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3}), bias = leaf({0.1f, 0.2f, 0.3f}, {3});
  mean(x + bias).backward();  // d/dx = 1/6 each; d/dbias = 2/6 each (summed over broadcast rows)
  for (float g : x.grad().to_float_vector()) EXPECT_NEAR(g, 1.0 / 6, 1e-7);
  for (float g : bias.grad().to_float_vector()) EXPECT_NEAR(g, 2.0 / 6, 1e-7);
}

TEST(Autograd, TensorUsedTwiceAccumulates) {
  Tensor x = leaf({3.0f}, {1});
  sum(x * x + x).backward();  // 2x + 1 = 7
  EXPECT_FLOAT_EQ(x.grad().item(), 7.0f);
  sum(x * x).backward();  // a second backward adds: 7 + 6
  EXPECT_FLOAT_EQ(x.grad().item(), 13.0f);
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
  // the same intermediate feeding two branches
  Tensor y = leaf({2.0f}, {1});
  Tensor h = y * y;           // 4
  sum(h + h * h).backward();  // d/dy = (1 + 2h) 2y = 9 * 4 = 36
  EXPECT_FLOAT_EQ(y.grad().item(), 36.0f);
}

TEST(Autograd, NoGradScopeRecordsNothing) {
  Tensor w = leaf({1, 2}, {2});
  {
    NoGradGuard guard;
    EXPECT_FALSE(grad_enabled());
    Tensor y = w * w;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.grad_fn(), nullptr);
    EXPECT_THROW(sum(y).backward(), Error);
  }
  EXPECT_TRUE(grad_enabled());
  EXPECT_NE((w * w).grad_fn(), nullptr);
  Tensor c = Tensor::from_vector({1, 2}, {2});  // no leaf requires grad: nothing recorded
  EXPECT_EQ((c * c).grad_fn(), nullptr);
  EXPECT_FALSE(w.detach().requires_grad());
}

TEST(Autograd, BackwardErrors) {
  Tensor w = leaf({1, 2, 3}, {3});
  Tensor y = w * w;
  EXPECT_THROW(y.backward(), Error);  // non-scalar without a gradient
  y.backward(Tensor::ones({3}));      // with one it works
  EXPECT_EQ(w.grad().to_float_vector(), (std::vector<float>{2, 4, 6}));
  EXPECT_THROW(sum(Tensor::ones({3})).backward(), Error);  // nothing requires grad
}

TEST(Autograd, CastRoundTripKeepsGradientsFp32) {
  Tensor w = leaf({0.5f, -1.25f, 3.0f}, {3});
  for (DType dt : {DType::f16, DType::bf16}) {
    w.zero_grad();
    Tensor h = cast(w, dt);
    EXPECT_EQ(h.dtype(), dt);
    EXPECT_TRUE(h.requires_grad());
    Tensor back = cast(h * h, DType::f32);
    EXPECT_EQ(back.dtype(), DType::f32);
    sum(back).backward();
    ASSERT_TRUE(w.grad().defined());
    EXPECT_EQ(w.grad().dtype(), DType::f32);
    EXPECT_EQ(w.grad().to_float_vector(), (std::vector<float>{1.0f, -2.5f, 6.0f})) << dtype_name(dt);
  }
  Tensor same = cast(w, DType::f32);
  EXPECT_TRUE(same.same(w));  // a cast to the same dtype is the identity
}

// attention's [B,T,H,D] layout is the [B,H,T,D] one with axes 1 and 2 swapped on
// the way in and out, forward and backward (T = 70 spans two of the CPU
// kernel's 64-row blocks; 3 heads over the pool's threads).
TEST(Autograd, SdpaBthdIsThePermutedBhtd) {
  Generator gen(7);
  const Shape s{2, 70, 3, 8}, sv{2, 70, 3, 5};
  Tensor q = Tensor::normal(s, 0, 1, gen), k = Tensor::normal(s, 0, 1, gen),
         v = Tensor::normal(sv, 0, 1, gen);
  Tensor w = Tensor::normal(sv, 0, 1, gen);  // weights of the loss, so every output gets its own gradient
  auto run = [&](bool bthd) {
    Tensor a = q.detach(), b = k.detach(), c = v.detach();
    a.set_requires_grad(), b.set_requires_grad(), c.set_requires_grad();
    const std::vector<int64_t> swap{0, 2, 1, 3};
    Tensor y = bthd ? attention(a, b, c, 0.0, true)
                    : permute(attention(permute(a, swap), permute(b, swap), permute(c, swap)), swap);
    sum(y * w).backward();
    return std::vector<std::vector<float>>{y.to_float_vector(), a.grad().to_float_vector(),
                                           b.grad().to_float_vector(), c.grad().to_float_vector()};
  };
  auto in_place = run(true), permuted = run(false);
  const char* what[] = {"output", "dq", "dk", "dv"};
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_EQ(in_place[i].size(), permuted[i].size()) << what[i];
    double worst = 0;
    for (size_t e = 0; e < in_place[i].size(); ++e)
      worst = std::max(worst, std::fabs(double(in_place[i][e]) - permuted[i][e]));
    EXPECT_LT(worst, 1e-5) << what[i];
  }
}

// reshape of a contiguous tensor is a view both ways. Its backward hands on a
// view of the gradient it got, so a tensor reached both through reshapes and
// directly accumulates into that shared buffer: the sums must still be right.
TEST(Autograd, ReshapeIsAViewAndItsSharedGradientsAddUp) {
  Tensor x = leaf({0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f}, {2, 3});
  Tensor h = tanh(x);
  Tensor y = reshape(h, {3, 2});
  EXPECT_EQ(y.device_data(), h.device_data()) << "reshape copied a contiguous tensor";
  Tensor z = reshape(y, {6});
  Tensor w = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {6}),
         v = Tensor::from_vector({-1, 0.5f, 2, 1, -2, 3}, {2, 3});
  (sum(z * w) + sum(h * v) + sum(reshape(h, {6}) * w)).backward();
  auto xv = x.to_float_vector(), wv = w.to_float_vector(), vv = v.to_float_vector();
  auto gx = x.grad().to_float_vector();
  for (size_t i = 0; i < 6; ++i) {
    double t = std::tanh(xv[i]), dh = 2 * wv[i] + vv[i];  // z and the second reshape both read h[i]
    EXPECT_NEAR(gx[i], (1 - t * t) * dh, 1e-6) << i;
  }
}
