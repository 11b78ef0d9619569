// Trainer behaviour on synthetic in-memory data: accumulation equivalence,
// fp16 overflow handling, exact resume after a stop, early stopping, and the
// run directory's files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/communicator.h"
#include "train/trainer/stop_signal.h"
#include "train/trainer/trainer.h"
#include "trainer_fixture.h"

namespace strata::testing {
namespace {

constexpr int64_t kDim = 16, kClasses = 4;

struct Run {
  std::shared_ptr<Module> model;
  TrainSummary summary;
};

Run train(TrainConfig c, int64_t batch, const std::string& dir, int64_t n = 1024) {
  std::vector<float> x;
  std::vector<int64_t> y;
  synthetic_data(n, kDim, kClasses, 7, x, y);
  MemoryBatchSource src(x, y, {kDim}, batch, 3, /*shuffle=*/false);
  std::vector<float> tx;
  std::vector<int64_t> ty;
  synthetic_data(256, kDim, kClasses, 8, tx, ty);
  MemoryBatchSource test(tx, ty, {kDim}, 64, 0, false);
  SingleProcessCommunicator comm;
  Run r;
  r.model = build(c, {kDim});
  Trainer t(c, dir, r.model, {kDim}, comm);
  r.summary = t.fit(src, nullptr, &test);
  return r;
}

double max_rel_diff(const Module& a, const Module& b) {
  auto pa = a.named_parameters(), pb = b.named_parameters();
  double worst = 0;
  for (size_t i = 0; i < pa.size(); ++i) {
    auto va = pa[i].second.to_float_vector(), vb = pb[i].second.to_float_vector();
    double scale = 0, diff = 0;
    for (size_t k = 0; k < va.size(); ++k) {
      scale = std::max(scale, std::fabs(static_cast<double>(vb[k])));
      diff = std::max(diff, std::fabs(static_cast<double>(va[k]) - vb[k]));
    }
    worst = std::max(worst, diff / std::max(scale, 1e-12));
  }
  return worst;
}

TEST(Trainer, LearnsTheSyntheticProblem) {
  TrainConfig c = quiet_config();
  c.trainer.epochs = 5;
  auto r = train(c, 32, temp_dir("learn"));
  EXPECT_GT(r.summary.test_accuracy, 0.8) << "an MLP should separate a linear 4-class problem";
  EXPECT_EQ(r.summary.steps, 5 * 1024 / 32);
  EXPECT_EQ(r.summary.epochs, 5);
}

TEST(Trainer, AccumulationMatchesTheLargeBatch) {
  TrainConfig c = quiet_config();
  c.trainer.epochs = 2;
  auto big = train(c, 128, temp_dir("acc-big"));
  c.trainer.accumulate = 4;
  auto micro = train(c, 32, temp_dir("acc-micro"));
  EXPECT_EQ(big.summary.steps, micro.summary.steps);
  EXPECT_LT(max_rel_diff(*micro.model, *big.model), 1e-5);
  // and the comparison can fail: a different batch without accumulation differs
  c.trainer.accumulate = 1;
  auto plain = train(c, 32, temp_dir("acc-plain"));
  EXPECT_GT(max_rel_diff(*plain.model, *big.model), 1e-3);
}

TEST(Trainer, Fp16OverflowSkipsTheStepAndHalvesTheScale) {
  TrainConfig c = quiet_config();
  c.precision.dtype = "fp16";
  c.precision.init_scale = 1e38;  // scaled loss overflows to inf in the f16 backward
  c.trainer.max_steps = 1;
  std::vector<float> x;
  std::vector<int64_t> y;
  synthetic_data(128, kDim, kClasses, 7, x, y);
  MemoryBatchSource src(x, y, {kDim}, 32, 3, false);
  SingleProcessCommunicator comm;
  auto model = build(c, {kDim});
  std::vector<std::vector<float>> before;
  for (auto& [n, p] : model->named_parameters()) before.push_back(p.to_float_vector());
  Trainer t(c, temp_dir("fp16"), model, {kDim}, comm);
  auto s = t.fit(src, nullptr, nullptr);
  EXPECT_EQ(s.skipped_steps, 1);
  EXPECT_DOUBLE_EQ(t.scaler().scale(), 0.5e38);
  size_t i = 0;
  for (auto& [n, p] : model->named_parameters())
    EXPECT_EQ(p.to_float_vector(), before[i++]) << n << " changed";
}

TEST(Trainer, Fp16TrainsWithLossScaling) {
  TrainConfig c = quiet_config();
  c.precision.dtype = "fp16";
  c.trainer.epochs = 3;
  auto r = train(c, 32, temp_dir("fp16-train"));
  EXPECT_GT(r.summary.test_accuracy, 0.75);
  EXPECT_EQ(r.summary.skipped_steps, 0);
}

TEST(Trainer, Bf16Trains) {
  TrainConfig c = quiet_config();
  c.precision.dtype = "bf16";
  c.trainer.epochs = 3;
  auto r = train(c, 32, temp_dir("bf16-train"));
  EXPECT_GT(r.summary.test_accuracy, 0.75);
}

// A run stopped by SIGTERM mid-epoch and resumed ends with the same weights,
// bit for bit, as an uninterrupted run.
TEST(Trainer, ResumeAfterStopIsBitIdentical) {
  TrainConfig c = quiet_config();
  c.trainer.epochs = 3;
  c.model.dropout = 0.2;  // exercises the RNG state in the checkpoint
  std::string full_dir = temp_dir("resume-full");
  auto full = train(c, 32, full_dir);

  std::string dir = temp_dir("resume-cut");
  c.checkpoint.every_steps = 0;
  std::vector<float> x;
  std::vector<int64_t> y;
  synthetic_data(1024, kDim, kClasses, 7, x, y);
  SingleProcessCommunicator comm;
  {
    MemoryBatchSource src(x, y, {kDim}, 32, 3, false);
    auto model = build(c, {kDim});
    Trainer t(c, dir, model, {kDim}, comm);
    request_stop(SIGTERM);  // takes effect after the first optimizer step
    auto s = t.fit(src, nullptr, nullptr);
    EXPECT_EQ(s.interrupted_by_signal, SIGTERM);
    EXPECT_EQ(s.steps, 1);
    request_stop(0);
  }
  // continue (several stops to cross an epoch boundary), then finish
  for (int k = 0; k < 3; ++k) {
    c.checkpoint.resume = "auto";
    MemoryBatchSource src(x, y, {kDim}, 32, 3, false);
    auto model = build(c, {kDim});
    Trainer t(c, dir, model, {kDim}, comm);
    c.trainer.max_steps = 0;
    if (k < 2) {
      // stop again after one more step
      request_stop(SIGTERM);
      t.fit(src, nullptr, nullptr);
      request_stop(0);
      continue;
    }
    std::vector<float> tx;
    std::vector<int64_t> ty;
    synthetic_data(256, kDim, kClasses, 8, tx, ty);
    MemoryBatchSource test(tx, ty, {kDim}, 64, 0, false);
    auto s = t.fit(src, nullptr, &test);
    EXPECT_EQ(max_rel_diff(*model, *full.model), 0.0) << "resumed weights differ from the uninterrupted run";
    EXPECT_EQ(s.steps, full.summary.steps);
    EXPECT_DOUBLE_EQ(s.test_accuracy, full.summary.test_accuracy);
    EXPECT_DOUBLE_EQ(s.test_loss, full.summary.test_loss);
  }
}

TEST(Trainer, EarlyStoppingStopsAndSaysSo) {
  TrainConfig c = quiet_config();
  c.trainer.epochs = 50;
  c.optimizer.lr = 0.0;  // nothing improves after the first evaluation
  c.early_stopping.enabled = true;
  c.early_stopping.monitor = "val_loss";
  c.early_stopping.patience = 2;
  std::string dir = temp_dir("early");
  auto r = train(c, 64, dir);
  EXPECT_TRUE(r.summary.stopped_early);
  EXPECT_EQ(r.summary.epochs, 3);  // best at epoch 1, then two without improvement
  std::ifstream f(dir + "/summary.json");
  auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["stopped_early"], true);
  EXPECT_EQ(j["stopped_at_epoch"], 3);
}

// summary.json's test figures come from a test set: none without one (and no
// best_* without any evaluation); with one, a classifier's loss, accuracy and
// top-5. MFU is null without trainer.peak_flops (issue 34: 0.0 was written).
TEST(Trainer, SummaryJsonHasTestFiguresOnlyWithATestSet) {
  TrainConfig c = quiet_config();
  c.trainer.epochs = 2;
  std::vector<float> x;
  std::vector<int64_t> y;
  synthetic_data(256, kDim, kClasses, 7, x, y);
  MemoryBatchSource src(x, y, {kDim}, 32, 3, /*shuffle=*/false);
  SingleProcessCommunicator comm;
  const std::string dir = temp_dir("summary-no-test");
  Trainer t(c, dir, build(c, {kDim}), {kDim}, comm);
  t.fit(src, nullptr, nullptr);
  const auto j = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
  for (const char* k : {"test", "test_loss", "test_accuracy", "test_top5", "best_metric", "best_metric_name",
                        "best_epoch", "stopped_at_epoch"})
    EXPECT_FALSE(j.contains(k)) << k << " is " << j.value(k, nlohmann::json()).dump();
  EXPECT_EQ(j.at("epochs"), 2);
  EXPECT_TRUE(j.at("mfu").is_null()) << j.at("mfu").dump();

  const std::string with_test = temp_dir("summary-test");
  auto r = train(c, 32, with_test);
  const auto k = nlohmann::json::parse(std::ifstream(with_test + "/summary.json"));
  EXPECT_EQ(k.at("test_accuracy").get<double>(), r.summary.test_accuracy);
  EXPECT_EQ(k.at("test_top5").get<double>(), r.summary.test_top5);
  EXPECT_EQ(k.at("test_loss").get<double>(), r.summary.test_loss);
  EXPECT_EQ(k.at("test").size(), 3u) << k.at("test").dump();
  EXPECT_EQ(k.at("best_epoch"), r.summary.best_epoch);
  EXPECT_TRUE(k.at("mfu").is_null()) << k.at("mfu").dump();
}

TEST(Trainer, RunDirectoryHoldsItsFiles) {
  TrainConfig c = quiet_config();
  c.trainer.epochs = 2;
  c.logging.every_steps = 4;
  c.logging.tensorboard = true;
  c.checkpoint.every_epochs = 1;
  c.checkpoint.keep_last = 1;
  c.checkpoint.keep_best = false;
  std::string dir = temp_dir("files");
  train(c, 64, dir);
  namespace fs = std::filesystem;
  EXPECT_TRUE(fs::exists(dir + "/resolved.yaml"));
  EXPECT_TRUE(fs::exists(dir + "/summary.json"));
  EXPECT_TRUE(fs::exists(dir + "/metrics.jsonl"));
  EXPECT_TRUE(fs::exists(dir + "/train.log"));
  int ckpts = 0, events = 0;
  for (auto& e : fs::directory_iterator(dir + "/checkpoints")) ckpts += e.path().extension() == ".h5";
  for (auto& e : fs::directory_iterator(dir + "/tensorboard"))
    events += e.path().filename().string().rfind("events.out.tfevents", 0) == 0;
  EXPECT_EQ(ckpts, 1) << "keep_last 1";
  EXPECT_EQ(events, 1);
  auto j = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
  for (const char* k : {"test_accuracy", "test_loss", "best_metric", "epochs", "steps", "samples_per_second",
                        "data_wait_fraction", "world_size", "precision", "wall_seconds", "stopped_early",
                        "remote_requests", "remote_bytes", "device", "memory_in_use_bytes",
                        "memory_peak_bytes", "memory_cached_bytes", "memory_allocations"})
    EXPECT_TRUE(j.contains(k)) << k;
  // the host allocator served the run: it allocated, and its peak bounds what is in use
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_GT(j["memory_allocations"].get<int64_t>(), 0);
  EXPECT_GT(j["memory_peak_bytes"].get<int64_t>(), 0);
  EXPECT_GE(j["memory_peak_bytes"].get<int64_t>(), j["memory_in_use_bytes"].get<int64_t>());
}

}  // namespace
}  // namespace strata::testing
