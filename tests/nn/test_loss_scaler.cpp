// LossScaler: GradScaler semantics (skip and back off on inf/NaN, grow after
// growth_interval clean steps), exact unscaling, disabled mode, state round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "base/error.h"
#include "nn/loss_scaler.h"

using namespace strata;

namespace {
Tensor param_with_grad(const std::vector<float>& g) {
  Tensor p = Tensor::zeros({static_cast<int64_t>(g.size())});
  p.set_requires_grad(true);
  p.set_grad(Tensor::from_vector(g, {static_cast<int64_t>(g.size())}));
  return p;
}
}  // namespace

TEST(LossScaler, Defaults) {
  LossScaler s;
  EXPECT_TRUE(s.enabled());
  EXPECT_EQ(s.scale(), 65536.0);
  EXPECT_EQ(s.growth_tracker(), 0);
  EXPECT_EQ(s.scale_loss(Tensor::scalar(2.0)).item(), 131072.0);
}

TEST(LossScaler, UnscaleDividesExactly) {
  LossScaler s;
  Tensor p = param_with_grad({65536.0f, 3.0f * 65536.0f, -0.5f});
  EXPECT_TRUE(s.unscale(std::vector<Tensor>{p}));
  auto g = p.grad().to_float_vector();
  EXPECT_EQ(g[0], 1.0f);
  EXPECT_EQ(g[1], 3.0f);
  EXPECT_EQ(g[2], -0.5f / 65536.0f);
  EXPECT_TRUE(s.should_step());
  EXPECT_THROW(s.unscale(std::vector<Tensor>{p}), Error);  // once per step
  s.update();
  EXPECT_EQ(s.growth_tracker(), 1);
}

TEST(LossScaler, ForcedOverflowSkipsStepAndHalvesScale) {
  for (float bad : {std::numeric_limits<float>::infinity(), std::nanf("")}) {
    LossScaler s;
    Tensor ok = param_with_grad({1.0f, 2.0f});
    Tensor inf = param_with_grad({1.0f, bad});
    Tensor none = Tensor::zeros({3});  // no gradient: ignored
    // Some clean steps first, so that the overflow is seen to reset the tracker.
    for (int i = 0; i < 5; ++i) {
      EXPECT_TRUE(s.unscale(std::vector<Tensor>{ok, none}));
      s.update();
    }
    EXPECT_EQ(s.growth_tracker(), 5);
    int steps = 0;
    bool ran = s.step({ok, inf, none}, [&] { ++steps; });
    EXPECT_FALSE(ran);
    EXPECT_EQ(steps, 0);
    EXPECT_TRUE(s.found_inf());
    EXPECT_FALSE(s.should_step());
    s.update();
    EXPECT_EQ(s.scale(), 32768.0);
    EXPECT_EQ(s.growth_tracker(), 0);
    // The next clean step runs again.
    ran = s.step({ok}, [&] { ++steps; });
    EXPECT_TRUE(ran);
    EXPECT_EQ(steps, 1);
    s.update();
    EXPECT_EQ(s.scale(), 32768.0);
  }
}

TEST(LossScaler, GrowsAfter2000CleanSteps) {
  LossScaler s;
  for (int i = 0; i < 1999; ++i) {
    Tensor p = param_with_grad({1.0f});
    ASSERT_TRUE(s.unscale(std::vector<Tensor>{p}));
    s.update();
  }
  EXPECT_EQ(s.scale(), 65536.0);
  EXPECT_EQ(s.growth_tracker(), 1999);
  Tensor p = param_with_grad({1.0f});
  s.unscale(std::vector<Tensor>{p});
  s.update();
  EXPECT_EQ(s.scale(), 131072.0);
  EXPECT_EQ(s.growth_tracker(), 0);
}

TEST(LossScaler, MarkOverflowFromAnotherRank) {
  LossScaler s;
  Tensor p = param_with_grad({1.0f});
  EXPECT_TRUE(s.unscale(std::vector<Tensor>{p}));
  s.mark_overflow();
  EXPECT_FALSE(s.should_step());
  s.update();
  EXPECT_EQ(s.scale(), 32768.0);
}

TEST(LossScaler, DisabledNeverSkips) {
  LossScaler s = LossScaler::disabled();
  EXPECT_FALSE(s.enabled());
  EXPECT_EQ(s.scale(), 1.0);
  Tensor p = param_with_grad({std::numeric_limits<float>::infinity(), 2.0f});
  int steps = 0;
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(s.step({p}, [&] { ++steps; }));
    s.update();
  }
  EXPECT_EQ(steps, 3);
  EXPECT_EQ(p.grad().to_float_vector()[1], 2.0f);  // untouched
  EXPECT_EQ(s.scale(), 1.0);
  Tensor loss = Tensor::scalar(3.0);
  EXPECT_TRUE(s.scale_loss(loss).same(loss));
}

TEST(LossScaler, StateRoundTrip) {
  LossScaler a;
  Tensor p = param_with_grad({std::numeric_limits<float>::infinity()});
  a.unscale(std::vector<Tensor>{p});
  a.update();
  for (int i = 0; i < 7; ++i) {
    Tensor q = param_with_grad({1.0f});
    a.unscale(std::vector<Tensor>{q});
    a.update();
  }
  LossScalerState st = a.state();
  EXPECT_EQ(st.scale, 32768.0);
  EXPECT_EQ(st.growth_tracker, 7);
  LossScaler b;
  b.load_state(st);
  EXPECT_EQ(b.scale(), 32768.0);
  EXPECT_EQ(b.growth_tracker(), 7);
  EXPECT_THROW(b.load_state({0.0, 0}), Error);
  EXPECT_THROW(LossScaler(LossScalerOptions{.backoff_factor = 1.5}), ConfigError);
}
