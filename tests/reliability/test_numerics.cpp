// Divergence stops the run before it reaches the weights: an inf or NaN
// gradient in fp32 names the step and the parameter, fp16 overflows that cut
// the loss scale below precision.min_scale stop with the scale named, and in
// both cases the last checkpoint holds the finite weights of the step before.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

#include "base/error.h"
#include "core/communicator.h"
#include "train/checkpoint/checkpoint.h"
#include "train/checkpoint/checkpoint_rotation.h"
#include "train/trainer/trainer.h"
#include "trainer_fixture.h"

namespace strata {
namespace {
using namespace strata::testing;
namespace fs = std::filesystem;

constexpr int64_t kDim = 8, kClasses = 4, kBatch = 16;

// 64 batches of synthetic data; sample `bad` (if >= 0) gets a NaN feature.
MemoryBatchSource data(int64_t bad) {
  std::vector<float> x;
  std::vector<int64_t> y;
  synthetic_data(64 * kBatch, kDim, kClasses, 7, x, y);
  if (bad >= 0) x[static_cast<size_t>(bad * kDim + 3)] = std::numeric_limits<float>::quiet_NaN();
  return MemoryBatchSource(std::move(x), std::move(y), {kDim}, kBatch, 1, /*shuffle=*/false);
}

TrainConfig checkpointing_config() {
  TrainConfig c = quiet_config();
  c.model.num_classes = kClasses;
  c.checkpoint.every_steps = 5;
  c.checkpoint.keep_last = 100;
  c.checkpoint.keep_best = false;
  return c;
}

// The message of the NumericsError fit() throws, "" (and a failure) if none.
std::string divergence(Trainer& t, MemoryBatchSource& src) {
  try {
    t.fit(src, nullptr, nullptr);
  } catch (const NumericsError& e) {
    return e.what();
  }
  ADD_FAILURE() << "the run did not stop";
  return "";
}

void expect_finite_checkpoint(const std::string& run_dir, const std::string& name) {
  const fs::path path = fs::path(run_dir) / "checkpoints" / name;
  ASSERT_TRUE(fs::exists(path)) << path;
  Checkpoint ck = load_checkpoint(path);
  for (auto& [n, t] : ck.model) {
    Tensor f = t.to(DType::f32).contiguous();
    const float* v = f.data<float>();
    for (int64_t i = 0; i < f.numel(); ++i)
      ASSERT_TRUE(std::isfinite(v[i])) << name << " " << n << "[" << i << "]";
  }
}

TEST(Numerics, NanGradientInFp32StopsNamingStepAndParameter) {
  // sample 16 * 12 + 3 is in the 13th batch: steps 1-12 are clean
  MemoryBatchSource src = data(16 * 12 + 3);
  const std::string dir = temp_dir("numerics-fp32");
  SingleProcessCommunicator comm;
  TrainConfig c = checkpointing_config();
  Trainer t(c, dir, build(c, {kDim}), {kDim}, comm);
  const std::string msg = divergence(t, src);
  EXPECT_NE(msg.find("step 13: the gradient of parameter '"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not finite"), std::string::npos) << msg;
  // the weights were never updated with it, and the checkpoints are all clean
  for (auto& [n, p] : t.model().named_parameters()) {
    Tensor f = p.to(DType::f32).contiguous();
    for (int64_t i = 0; i < f.numel(); ++i) ASSERT_TRUE(std::isfinite(f.data<float>()[i])) << n;
  }
  EXPECT_EQ(find_latest_checkpoint(fs::path(dir) / "checkpoints")->filename(), "step-000000010.h5");
  expect_finite_checkpoint(dir, "step-000000010.h5");
  fs::remove_all(dir);
}

TEST(Numerics, NanGradientIsFoundWithClippingToo) {
  MemoryBatchSource src = data(5);
  const std::string dir = temp_dir("numerics-clip");
  SingleProcessCommunicator comm;
  TrainConfig c = checkpointing_config();
  c.clipping.max_norm = 1.0;
  Trainer t(c, dir, build(c, {kDim}), {kDim}, comm);
  const std::string msg = divergence(t, src);
  EXPECT_NE(msg.find("step 1: the gradient of parameter '1.weight'"), std::string::npos) << msg;
  fs::remove_all(dir);
}

TEST(Numerics, Fp16LossScaleAtItsFloorStops) {
  // Every step from the 9th overflows: the scale halves per step from 2^4 and
  // falls below the floor of 1 at step 13 (8 -> 4 -> 2 -> 1 -> 0.5).
  const std::string dir = temp_dir("numerics-fp16");
  SingleProcessCommunicator comm;
  TrainConfig c = checkpointing_config();
  c.precision.dtype = "fp16";
  c.precision.init_scale = 16.0;
  c.precision.min_scale = 1.0;
  c.precision.growth_interval = 1000;
  Trainer t(c, dir, build(c, {kDim}), {kDim}, comm);
  // inputs beyond f16's range from the 9th batch on: every later step overflows
  std::vector<float> x;
  std::vector<int64_t> y;
  synthetic_data(64 * kBatch, kDim, kClasses, 7, x, y);
  for (size_t i = 8 * kBatch * kDim; i < x.size(); ++i) x[i] = 1e30f;
  MemoryBatchSource poisoned(std::move(x), std::move(y), {kDim}, kBatch, 1, false);
  const std::string msg = divergence(t, poisoned);
  EXPECT_NE(msg.find("step 13: fp16 overflows cut the loss scale to 0.5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("precision.min_scale"), std::string::npos) << msg;
  expect_finite_checkpoint(dir, "step-000000010.h5");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace strata
