// The CPU device ops that reduce or update in place, against plain loops: the
// blocked sum of squares (and that it does not depend on the thread count),
// unscale with its inf/NaN flag, and the multi-tensor SGD and AdamW steps bit for
// bit against math::sgd_update / math::adamw_update applied element by element.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "device_buffers.h"
#include "kernels/device_ops.h"
#include "kernels/runtime/half.h"
#include "kernels/runtime/parallel.h"
#include "kernels/scalar_math.h"

using namespace strata;
using namespace strata::testing;

TEST(DeviceOps, SumOfSquaresAccumulatesInDoubleAndIgnoresThreadCount) {
  std::vector<Buf> xs;
  xs.emplace_back(DType::f32, 300001);  // several blocks
  xs.emplace_back(DType::f16, 1000);
  xs.emplace_back(DType::bf16, 77);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<TensorView> views;
  double want = 1.5;
  for (auto& b : xs) {
    int64_t n = static_cast<int64_t>(b.bytes.size() / dtype_size(b.dt));
    for (int64_t i = 0; i < n; ++i) put(b, i, nd(rng));
    for (int64_t i = 0; i < n; ++i) want += get(b, i) * get(b, i);
    views.push_back(b.view(n));
  }
  views.push_back(TensorView{});  // undefined: skipped
  float out[2] = {1.5f, 0};
  const int prev = num_threads();
  set_num_threads(1);
  dev::sum_of_squares(views.data(), views.size(), TensorView{&out[0], DType::f32, {}});
  set_num_threads(2);
  out[1] = 1.5f;
  dev::sum_of_squares(views.data(), views.size(), TensorView{&out[1], DType::f32, {}});
  set_num_threads(prev);
  EXPECT_NEAR(out[0], want, want * 1e-7);
  EXPECT_EQ(out[0], out[1]) << "the result must not depend on the thread count";
  Buf i32(DType::f32, 2);
  EXPECT_THROW(dev::sum_of_squares(views.data(), 1, i32.view(2)), Error);  // not a scalar
}

TEST(DeviceOps, UnscaleFlagsInfAndNaNAndNeverResets) {
  const int64_t n = 100000;
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    for (int bad = 0; bad < 3; ++bad) {  // none, inf, NaN
      Buf a(dt, n), b(dt, 33), want_a(dt, n), want_b(dt, 33);
      for (int64_t i = 0; i < n; ++i) put(a, i, sample(i) * 64.0);
      for (int64_t i = 0; i < 33; ++i) put(b, i, -sample(i));
      if (bad == 1) put(a, n - 5, std::numeric_limits<double>::infinity());
      if (bad == 2) put(b, 3, std::nan(""));
      for (int64_t i = 0; i < n; ++i) put(want_a, i, static_cast<float>(get(a, i)) * 0.125f);
      for (int64_t i = 0; i < 33; ++i) put(want_b, i, static_cast<float>(get(b, i)) * 0.125f);
      TensorView gs[] = {a.view(n), TensorView{}, b.view(33)};
      float found = 0.0f;
      dev::unscale_found_inf(gs, 3, 0.125f, TensorView{&found, DType::f32, {}});
      EXPECT_EQ(found, bad ? 1.0f : 0.0f) << dtype_name(dt) << " case " << bad;
      expect_same(a, want_a, n, "unscaled a");
      expect_same(b, want_b, 33, "unscaled b");
      found = 1.0f;  // a flag raised earlier stays raised
      dev::unscale_found_inf(gs, 1, 1.0f, TensorView{&found, DType::f32, {}});
      EXPECT_EQ(found, 1.0f);
    }
  }
}

namespace {
// Three parameters of different sizes (one over a parallel chunk), with gradients in gdt.
struct Params {
  std::vector<std::vector<float>> w, m, v;
  std::vector<Buf> g;
  explicit Params(DType gdt, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (int64_t n : {int64_t{7}, int64_t{1000}, int64_t{70000}}) {
      w.emplace_back(static_cast<size_t>(n));
      m.emplace_back(static_cast<size_t>(n));
      v.emplace_back(static_cast<size_t>(n));
      g.emplace_back(gdt, n);
      for (int64_t i = 0; i < n; ++i) {
        w.back()[static_cast<size_t>(i)] = nd(rng);
        m.back()[static_cast<size_t>(i)] = 0.1f * nd(rng);
        v.back()[static_cast<size_t>(i)] = std::abs(0.01f * nd(rng));
        put(g.back(), i, nd(rng));
      }
    }
  }
  static TensorView f32(std::vector<float>& x) {
    return TensorView{x.data(), DType::f32, {static_cast<int64_t>(x.size())}};
  }
  std::vector<TensorView> views(std::vector<std::vector<float>>& xs) {
    std::vector<TensorView> out;
    for (auto& x : xs) out.push_back(f32(x));
    return out;
  }
  std::vector<TensorView> grads() {
    std::vector<TensorView> out;
    for (auto& b : g) out.push_back(b.view(static_cast<int64_t>(b.bytes.size() / dtype_size(b.dt))));
    return out;
  }
};

void expect_bits(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b,
                 const char* what) {
  for (size_t t = 0; t < a.size(); ++t)
    for (size_t i = 0; i < a[t].size(); ++i)
      ASSERT_EQ(std::memcmp(&a[t][i], &b[t][i], 4), 0) << what << " tensor " << t << " element " << i;
}
}  // namespace

TEST(DeviceOps, SgdStepMatchesPerElementMathBitForBit) {
  for (DType gdt : {DType::f32, DType::f16, DType::bf16}) {
    for (int variant = 0; variant < 4; ++variant) {
      dev::SgdStep s;
      s.lr = 0.05f;
      s.momentum = variant == 0 ? 0.0f : 0.9f;
      s.dampening = variant == 2 ? 0.1f : 0.0f;
      s.weight_decay = variant >= 1 ? 1e-2f : 0.0f;
      s.nesterov = variant == 3;
      s.first_step = variant == 1;
      const float scale = gdt == DType::f32 && variant < 2 ? 1.0f : 0.25f;
      Params got(gdt, 11), want(gdt, 11);
      auto w = got.views(got.w), buf = got.views(got.m), g = got.grads();
      dev::sgd_step(w.data(), g.data(), s.momentum != 0 ? buf.data() : nullptr, w.size(), s, scale);
      for (size_t t = 0; t < want.w.size(); ++t)
        for (size_t i = 0; i < want.w[t].size(); ++i)
          math::sgd_update(want.w[t][i], static_cast<float>(get(want.g[t], static_cast<int64_t>(i))) * scale,
                           want.m[t][i], s.lr, s.momentum, s.dampening, s.weight_decay, s.nesterov,
                           s.first_step);
      expect_bits(got.w, want.w, "sgd weights");
      expect_bits(got.m, want.m, "sgd momentum");
    }
  }
}

TEST(DeviceOps, AdamWStepMatchesPerElementMathBitForBit) {
  dev::AdamWStep s;
  s.decay = 1.0f - 1e-3f * 0.01f;
  s.beta2 = 0.999f;
  s.one_minus_beta1 = 0.1f;
  s.one_minus_beta2 = 0.001f;
  s.eps = 1e-8f;
  s.step_size = 1e-3f / (1.0f - 0.9f * 0.9f);
  s.bc2_sqrt = std::sqrt(1.0f - 0.999f * 0.999f);
  for (DType gdt : {DType::f32, DType::f16, DType::bf16}) {
    for (float scale : {1.0f, 1.0f / 1024}) {
      Params got(gdt, 3), want(gdt, 3);
      auto w = got.views(got.w), m = got.views(got.m), v = got.views(got.v), g = got.grads();
      dev::adamw_step(w.data(), g.data(), m.data(), v.data(), w.size(), s, scale);
      for (size_t t = 0; t < want.w.size(); ++t)
        for (size_t i = 0; i < want.w[t].size(); ++i)
          math::adamw_update(want.w[t][i],
                             static_cast<float>(get(want.g[t], static_cast<int64_t>(i))) * scale,
                             want.m[t][i], want.v[t][i], s.decay, s.beta2, s.one_minus_beta1,
                             s.one_minus_beta2, s.eps, s.step_size, s.bc2_sqrt);
      expect_bits(got.w, want.w, "adamw weights");
      expect_bits(got.m, want.m, "adamw exp_avg");
      expect_bits(got.v, want.v, "adamw exp_avg_sq");
    }
  }
}

TEST(DeviceOps, OptimizerStepsRejectMismatchedState) {
  std::vector<float> w(4), g(3), m(4);
  TensorView wv{w.data(), DType::f32, {4}}, gv{g.data(), DType::f32, {3}}, mv{m.data(), DType::f32, {4}};
  dev::SgdStep s;
  EXPECT_THROW(dev::sgd_step(&wv, &gv, nullptr, 1, s), Error);  // gradient count differs
  TensorView gi{g.data(), DType::i32, {4}};
  EXPECT_THROW(dev::adamw_step(&wv, &gi, &mv, &mv, 1, dev::AdamWStep{}), Error);  // integer gradient
}
