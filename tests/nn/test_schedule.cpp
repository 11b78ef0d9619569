// LR schedules against their closed forms (restated here independently) at many
// steps, and reduce-on-plateau against a hand-worked sequence.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "base/error.h"
#include "nn/schedule/one_cycle.h"
#include "nn/schedule/plateau.h"
#include "nn/schedule/step_schedules.h"
#include "nn/schedule/warmup.h"
#include "train/make_schedule.h"

using namespace strata;

#include "schedule_golden.inc"

namespace {
constexpr double kPi = std::numbers::pi;
void expect_lr(const LrSchedule& s, int64_t step, double want) {
  EXPECT_NEAR(s.lr(step), want, 1e-12 * std::max(1.0, std::abs(want))) << s.name() << " at step " << step;
}
}  // namespace

TEST(Schedule, Constant) {
  ConstantSchedule s(0.3);
  for (int64_t t = 0; t < 1000; t += 7) expect_lr(s, t, 0.3);
}

TEST(Schedule, Step) {
  StepSchedule s(0.1, 30, 0.5);
  for (int64_t t = 0; t < 500; ++t) expect_lr(s, t, 0.1 * std::pow(0.5, t / 30));
  expect_lr(s, 29, 0.1);
  expect_lr(s, 30, 0.05);
  expect_lr(s, 60, 0.025);
}

TEST(Schedule, MultiStep) {
  MultiStepSchedule s(1.0, {10, 25, 100}, 0.1);
  for (int64_t t = 0; t < 300; ++t) {
    int k = (t >= 10) + (t >= 25) + (t >= 100);
    expect_lr(s, t, std::pow(0.1, k));
  }
  expect_lr(s, 9, 1.0);
  expect_lr(s, 10, 0.1);
  EXPECT_THROW(MultiStepSchedule(1.0, {10, 5}, 0.1), ConfigError);
}

TEST(Schedule, Exponential) {
  ExponentialSchedule s(0.2, 0.99);
  for (int64_t t = 0; t < 1000; t += 3) expect_lr(s, t, 0.2 * std::pow(0.99, static_cast<double>(t)));
}

TEST(Schedule, CosineWithWarmup) {
  const double base = 0.5, f = 0.1, min_lr = 0.01;
  const int64_t W = 100, T = 1000;
  CosineSchedule s(base, W, f, T, min_lr);
  for (int64_t t = 0; t < 1200; ++t) {
    double want;
    if (t < W)
      want = base * (f + (1 - f) * double(t) / double(W));
    else if (t >= T)
      want = min_lr;
    else
      want = min_lr + 0.5 * (base - min_lr) * (1 + std::cos(kPi * double(t - W) / double(T - W)));
    expect_lr(s, t, want);
  }
  expect_lr(s, 0, base * f);
  expect_lr(s, W, base);
  expect_lr(s, (W + T) / 2, (base + min_lr) / 2);
  expect_lr(s, T, min_lr);
}

TEST(Schedule, CosineWithoutWarmup) {
  CosineSchedule s(1.0, 0, 0.0, 10, 0.0);
  expect_lr(s, 0, 1.0);
  expect_lr(s, 5, 0.5);
  expect_lr(s, 10, 0.0);
}

TEST(Schedule, LinearWarmupLinearDecay) {
  const double base = 2.0, f = 0.0, min_lr = 0.2;
  const int64_t W = 10, T = 110;
  LinearSchedule s(base, W, f, T, min_lr);
  for (int64_t t = 0; t < 200; ++t) {
    double want;
    if (t < W)
      want = base * double(t) / double(W);
    else if (t >= T)
      want = min_lr;
    else
      want = base - (base - min_lr) * double(t - W) / double(T - W);
    expect_lr(s, t, want);
  }
  expect_lr(s, 60, 1.1);
}

TEST(Schedule, OneCycleAsPyTorch) {
  const double max_lr = 0.1, div = 25, final_div = 1e4, pct = 0.3;
  const int64_t T = 100;
  OneCycleSchedule s(max_lr, T, pct, div, final_div);
  const double initial = max_lr / div, final_lr = initial / final_div;
  const double e1 = pct * T - 1, e2 = T - 1;
  auto anneal = [](double a, double b, double p) { return b + (a - b) / 2 * (std::cos(kPi * p) + 1); };
  for (int64_t t = 0; t < T; ++t) {
    double want = t <= e1 ? anneal(initial, max_lr, t / e1) : anneal(max_lr, final_lr, (t - e1) / (e2 - e1));
    expect_lr(s, t, want);
  }
  // Values PyTorch's OneCycleLR(max_lr=0.1, total_steps=100) gives.
  expect_lr(s, 0, 0.004);
  expect_lr(s, 29, 0.1);
  expect_lr(s, 99, 4e-7);
  expect_lr(s, 150, 4e-7);  // clamped past the end
  EXPECT_THROW(OneCycleSchedule(0.1, 100, 0.0), ConfigError);
  EXPECT_THROW(OneCycleSchedule(0.1, 2, 0.3), ConfigError);
}

TEST(Schedule, WarmupWrapsAnyStepSchedule) {
  WarmupSchedule s(std::make_unique<StepSchedule>(1.0, 10, 0.5), 5, 0.1);
  for (int64_t t = 0; t < 5; ++t) expect_lr(s, t, 0.1 + 0.9 * t / 5.0);
  for (int64_t t = 5; t < 100; ++t) expect_lr(s, t, std::pow(0.5, (t - 5) / 10));
  EXPECT_EQ(s.name(), "warmup+step");
  WarmupSchedule e(std::make_unique<ExponentialSchedule>(0.4, 0.9), 20, 0.0);
  for (int64_t t = 0; t < 200; ++t)
    expect_lr(e, t, t < 20 ? 0.4 * t / 20.0 : 0.4 * std::pow(0.9, static_cast<double>(t - 20)));
}

// mode min, patience 2, factor 0.5, threshold 0.1 (rel), cooldown 1, min_lr 0.2; worked by hand
// with PyTorch ReduceLROnPlateau's rules.
TEST(Schedule, ReduceOnPlateauHandWorked) {
  PlateauOptions o;
  o.mode = "min";
  o.patience = 2;
  o.factor = 0.5;
  o.threshold = 0.1;
  o.cooldown = 1;
  o.min_lr = 0.2;
  ReduceOnPlateauSchedule s(1.0, o);
  const std::vector<double> metrics = {10,  9.5, 9.0, 9.2, 9.1, 8.0, 8.0, 8.0, 8.0,
                                       8.0, 8.0, 8.0, 8.0, 8,   8,   8,   8};
  const std::vector<double> lrs = {1, 1, 1, .5, .5, .5, .5, .5, .25, .25, .25, .25, .2, .2, .2, .2, .2};
  const std::vector<double> best = {10, 10, 10, 10, 10, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8};
  ASSERT_EQ(metrics.size(), lrs.size());
  expect_lr(s, 0, 1.0);
  for (size_t i = 0; i < metrics.size(); ++i) {
    s.observe(metrics[i]);
    EXPECT_DOUBLE_EQ(s.lr(static_cast<int64_t>(i)), lrs[i]) << "after metric " << i;
    EXPECT_DOUBLE_EQ(s.best(), best[i]) << "after metric " << i;
  }
  EXPECT_TRUE(s.metric_driven());
}

TEST(Schedule, ReduceOnPlateauMaxModeAndNaN) {
  PlateauOptions o;
  o.mode = "max";
  o.patience = 1;
  o.factor = 0.1;
  o.threshold = 0.0;
  ReduceOnPlateauSchedule s(1.0, o);
  s.observe(0.5);  // best 0.5
  s.observe(0.5);  // not better (threshold 0: strictly greater), bad 1
  EXPECT_DOUBLE_EQ(s.current_lr(), 1.0);
  s.observe(std::nan(""));  // NaN never improves: bad 2 > 1
  EXPECT_DOUBLE_EQ(s.current_lr(), 0.1);
  s.observe(0.6);
  EXPECT_DOUBLE_EQ(s.best(), 0.6);
  EXPECT_EQ(s.num_bad_epochs(), 0);
}

TEST(Schedule, ReduceOnPlateauStateRoundTrip) {
  PlateauOptions o;
  o.patience = 1;
  o.cooldown = 2;
  ReduceOnPlateauSchedule a(1.0, o), b(0.123, o);
  for (double m : {5.0, 5.0, 5.0, 4.0}) a.observe(m);
  b.load_state(a.state());
  for (double m : {4.0, 4.0, 4.0, 4.0, 4.0, 3.0, 3.0, 3.0}) {
    a.observe(m);
    b.observe(m);
    EXPECT_EQ(a.current_lr(), b.current_lr());
    EXPECT_EQ(a.cooldown_counter(), b.cooldown_counter());
    EXPECT_EQ(a.num_bad_epochs(), b.num_bad_epochs());
  }
  CosineSchedule c(1.0, 0, 0, 10, 0);
  EXPECT_THROW(c.load_state(a.state()), Error);
}

TEST(Schedule, FactoryBuildsEveryName) {
  ScheduleConfig o;
  o.total_steps = 100;
  o.milestones = {10, 20};
  for (const auto& n : schedule_names()) {
    o.name = n;
    auto s = make_schedule(o, 0, 0.1);
    ASSERT_TRUE(s) << n;
    EXPECT_EQ(s->name(), n);
    EXPECT_GT(s->lr(0), 0.0) << n;
  }
  o.name = "step";
  o.warmup_steps = 5;
  o.step_size = 10;
  o.gamma = 0.5;
  auto w = make_schedule(o, 0, 1.0);
  EXPECT_EQ(w->name(), "warmup+step");
  expect_lr(*w, 0, 0.0);
  expect_lr(*w, 15, 0.5);
  o.name = "cosine";
  auto c = make_schedule(o, 0, 1.0);
  EXPECT_EQ(c->name(), "cosine");
  expect_lr(*c, 5, 1.0);
}

TEST(Schedule, FactoryErrorsNameTheKey) {
  ScheduleConfig o;
  o.name = "cosine-annealing";
  try {
    make_schedule(o, 0, 0.1);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("schedule.name"), std::string::npos) << e.what();
  }
  o.name = "cosine";
  o.total_steps = 0;
  try {
    make_schedule(o, 0, 0.1);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("schedule.total_steps"), std::string::npos) << e.what();
  }
  o.name = "onecycle";
  o.total_steps = 100;
  o.warmup_steps = 10;
  EXPECT_THROW(make_schedule(o, 0, 0.1), ConfigError);
  o.name = "plateau";
  o.warmup_steps = 0;
  o.plateau_mode = "lowest";
  EXPECT_THROW(make_schedule(o, 0, 0.1), ConfigError);
}

// The same schedules as PyTorch's (values from gen_schedule_golden.py). PyTorch's
// chainable forms accumulate rounding, hence the relative tolerance.
namespace {
void expect_matches(const LrSchedule& s, const std::vector<double>& golden, const char* what) {
  for (size_t t = 0; t < golden.size(); ++t)
    EXPECT_NEAR(s.lr(static_cast<int64_t>(t)), golden[t], 1e-9 * golden[t] + 1e-15)
        << what << " at step " << t;
}
}  // namespace

TEST(Schedule, MatchesPyTorch) {
  expect_matches(StepSchedule(0.1, 7, 0.5), kTorch_step, "StepLR");
  expect_matches(MultiStepSchedule(0.2, {5, 12, 30}, 0.3), kTorch_multistep, "MultiStepLR");
  expect_matches(ExponentialSchedule(0.05, 0.95), kTorch_exponential, "ExponentialLR");
  expect_matches(OneCycleSchedule(0.3, 50, 0.25, 10, 100), kTorch_onecycle, "OneCycleLR");
  expect_matches(CosineSchedule(0.1, 10, 0.1, 50, 0.001), kTorch_cosine, "LinearLR+CosineAnnealingLR");
  expect_matches(WarmupSchedule(std::make_unique<StepSchedule>(0.4, 5, 0.5), 8, 0.25), kTorch_warmup_step,
                 "LinearLR+StepLR");
  PlateauOptions o;
  o.patience = 2;
  o.factor = 0.5;
  o.threshold = 0.1;
  o.cooldown = 1;
  o.min_lr = 0.2;
  ReduceOnPlateauSchedule p(1.0, o);
  for (size_t i = 0; i < kTorch_plateau.size(); ++i) {
    EXPECT_DOUBLE_EQ(p.lr(static_cast<int64_t>(i)), kTorch_plateau[i])
        << "ReduceLROnPlateau before metric " << i;
    p.observe(kTorch_plateau_metrics[i]);
  }
}
