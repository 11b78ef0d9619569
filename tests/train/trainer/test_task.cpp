// The trainer's tasks: the causal-LM and classification tasks' loss and
// metrics against a direct computation (padded evaluation rows left out), a
// GPT trained end to end through Trainer on a learnable token stream (with
// exact mid-epoch resume), its summary.json holding only what applies to a
// language model, and monitors checked against the task.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "core/autograd.h"
#include "core/communicator.h"
#include "core/ops.h"
#include "core/random.h"
#include "kernels/device_ops.h"
#include "models/registry.h"
#include "nn/modules/modules.h"
#include "train/checkpoint/checkpoint.h"
#include "train/config/load.h"
#include "train/trainer/task.h"
#include "train/trainer/trainer.h"
#include "trainer_fixture.h"

namespace strata::testing {
namespace {

constexpr int64_t kVocab = 16, kContext = 8;

// Windows of a periodic token stream (period 5 over ids 1..5, then noise-free):
// the next token is a function of the previous one, so a GPT learns it fast.
class PeriodicTokens : public BatchSource {
 public:
  PeriodicTokens(int64_t windows, int64_t batch) : windows_(windows), batch_(batch) {}
  void start_epoch(int64_t epoch) override {
    epoch_ = epoch;
    next_ = 0;
  }
  bool next(HostBatch& out) override {
    if (next_ + batch_ > windows_) return false;
    out.fields.clear();
    for (const char* name : {"input", "target"}) {
      HostArray a;
      a.name = name;
      a.dtype = DType::i64;
      a.shape = {batch_, kContext};
      a.bytes.resize(static_cast<size_t>(batch_ * kContext) * 8);
      auto* p = a.as<int64_t>();
      const int64_t shift = std::strcmp(name, "target") == 0 ? 1 : 0;
      for (int64_t b = 0; b < batch_; ++b)
        for (int64_t t = 0; t < kContext; ++t)
          p[b * kContext + t] = token((next_ + b) * 3 + t + shift + epoch_);
      out.fields.push_back(std::move(a));
    }
    out.size = batch_;
    out.valid = -1;
    next_ += batch_;
    return true;
  }
  int64_t batches_per_epoch() const override { return windows_ / batch_; }
  SourcePosition position() const override { return {{"epoch", epoch_}, {"next", next_}}; }
  void restore(const SourcePosition& pos) override {
    epoch_ = pos.at("epoch");
    next_ = pos.at("next");
  }
  DataMetrics metrics() const override { return {}; }
  static int64_t token(int64_t i) { return 1 + i % 5; }

 private:
  int64_t windows_, batch_, epoch_ = 0, next_ = 0;
};

TrainConfig gpt_config() {
  TrainConfig c = quiet_config();
  c.model.name = "gpt";
  c.model.vocab_size = kVocab;
  c.model.context = kContext;
  c.model.layers = 1;
  c.model.heads = 2;
  c.model.width = 16;
  c.optimizer.name = "adamw";
  c.optimizer.lr = 1e-2;
  c.optimizer.decay_groups = true;
  return c;
}

std::shared_ptr<Module> build_gpt(const TrainConfig& c) {
  return models::build_model(models::spec_from_config(c));
}

std::unique_ptr<Task> lm_task() {
  TaskOptions o;
  o.bytes_per_token = 1;
  return make_task("causal_lm", o);
}

TEST(CausalLmTask, LossAndMetricsMatchADirectComputation) {
  auto model = build_gpt(gpt_config());
  PeriodicTokens src(4, 4);
  src.start_epoch(0);
  HostBatch b;
  ASSERT_TRUE(src.next(b));
  auto task = lm_task();
  for (int64_t rows : {int64_t{4}, int64_t{3}}) {  // 3: the evaluation padding rows are left out
    NoGradGuard no_grad;
    TaskSums sums(task->sum_names().size(), Device::cpu);
    TaskOutput out = task->run(*model, b, rows, Device::cpu, Precision::fp32, true, sums);
    std::vector<int64_t> ids(b.field("input").as<int64_t>(),
                             b.field("input").as<int64_t>() + rows * kContext);
    std::vector<int64_t> tg(b.field("target").as<int64_t>(),
                            b.field("target").as<int64_t>() + rows * kContext);
    Tensor logits = (*model)(Tensor::from_vector_i64(ids, {rows, kContext}));
    double direct = cross_entropy(reshape(logits, {rows * kContext, kVocab}),
                                  Tensor::from_vector_i64(tg, {rows * kContext}))
                        .item();
    EXPECT_NEAR(out.loss.item(), direct, 1e-6) << rows;
    const std::vector<double> s = sums.read();
    ASSERT_EQ(s.size(), 2u);
    EXPECT_EQ(out.items, static_cast<double>(rows * kContext));
    EXPECT_EQ(s[1], static_cast<double>(rows * kContext));
    EXPECT_DOUBLE_EQ(s[0], out.loss.item() * static_cast<double>(rows * kContext));
    Metrics m = task->metrics(s, true);
    ASSERT_EQ(m.size(), 3u);
    EXPECT_NEAR(m[0].second, direct, 1e-6);
    EXPECT_NEAR(m[1].second, std::exp(direct), 1e-4 * std::exp(direct));
    EXPECT_NEAR(m[2].second, direct / std::log(2.0), 1e-6);
  }
  EXPECT_TRUE(std::isnan(make_task("causal_lm", {})->metrics({1.0, 1.0}, true)[2].second))
      << "bits per byte is unknown without bytes per token";
}

TEST(CausalLmTask, RefusesTokensOfTheWrongShape) {
  HostBatch b;
  HostArray a;
  a.name = "input";
  a.dtype = DType::i64;
  a.shape = {8};
  a.bytes.resize(64);
  b.fields = {a, a};
  b.fields[1].name = "target";
  b.size = 8;
  auto model = build_gpt(gpt_config());
  TaskSums sums(2, Device::cpu);
  EXPECT_THROW(lm_task()->run(*model, b, 8, Device::cpu, Precision::fp32, false, sums), ShapeError);
}

// The classification task on a batch of u8 pixels against a direct computation
// from the f32 normalised input: all rows, and the first 5 of 8 (evaluation's
// padded last batch, whose leading rows the task views where the batch is), in
// fp32 and in bf16 (the pixels then normalised straight into bf16): the same
// loss, hits and items, bit for bit.
TEST(ClassificationTask, PaddedRowsAndHalfInputsGiveTheFiguresOfADirectComputation) {
  constexpr int64_t kRows = 8, kClasses = 10, kPixels = 16;
  HostBatch b;
  b.fields.resize(2);
  b.fields[0].name = "image";
  b.fields[0].dtype = DType::u8;
  b.fields[0].shape = {kRows, 1, 4, 4};
  b.fields[0].bytes.resize(kRows * kPixels);
  for (int64_t i = 0; i < kRows * kPixels; ++i)
    b.fields[0].as<uint8_t>()[i] = static_cast<uint8_t>(i * 37 % 256);
  b.fields[1].name = "label";
  b.fields[1].dtype = DType::i64;
  b.fields[1].shape = {kRows};
  b.fields[1].bytes.resize(kRows * 8);
  for (int64_t i = 0; i < kRows; ++i) b.fields[1].as<int64_t>()[i] = i * 3 % kClasses;
  b.size = kRows;
  b.valid = 5;
  TaskOptions o;
  o.sample_shape = {1, 4, 4};
  o.input_mean = {0.3f};
  o.input_std = {0.4f};
  auto task = make_task("classification", o);
  Generator gen(11);
  Sequential model;
  model.emplace<Flatten>(1);
  model.emplace<Linear>(kPixels, kClasses, true, &gen);
  NoGradGuard no_grad;
  Tensor x = Tensor::empty({kRows, 1, 4, 4});
  dev::normalize_u8(TensorView{b.fields[0].bytes.data(), DType::u8, {kRows, 1, 4, 4}}, x.view(),
                    o.input_mean.data(), o.input_std.data(), 1);
  for (Precision p : {Precision::fp32, Precision::bf16}) {
    for (int64_t rows : {kRows, b.valid_count()}) {
      TaskSums sums(task->sum_names().size(), Device::cpu);
      const TaskOutput out = task->run(model, b, rows, Device::cpu, p, true, sums);
      const std::vector<float> xs = x.to_float_vector();
      const Tensor first = Tensor::from_vector({xs.begin(), xs.begin() + rows * kPixels}, {rows, 1, 4, 4});
      const Tensor labels =
          Tensor::from_vector_i64({b.fields[1].as<int64_t>(), b.fields[1].as<int64_t>() + rows}, {rows});
      Tensor logits;
      {
        AutocastGuard autocast(p);
        logits = model(first);
      }
      const Tensor loss = cross_entropy(logits, labels);
      TaskSums direct(task->sum_names().size(), Device::cpu);
      direct.add_hits(1, 2, logits, labels);
      const std::vector<double> got = sums.read(), want = direct.read();
      EXPECT_EQ(out.loss.item(), loss.item()) << precision_name(p) << " rows " << rows;
      EXPECT_EQ(out.items, static_cast<double>(rows));
      EXPECT_EQ(got[0], loss.item() * static_cast<double>(rows));
      EXPECT_EQ(got[1], want[1]) << precision_name(p) << " rows " << rows;
      EXPECT_EQ(got[2], want[2]) << precision_name(p) << " rows " << rows;
      EXPECT_EQ(got[3], static_cast<double>(rows));
    }
  }
}

TEST(TrainerLm, TrainsAGptAndResumesExactly) {
  TrainConfig c = gpt_config();
  c.trainer.epochs = 6;
  c.checkpoint.every_epochs = 0;
  SingleProcessCommunicator comm;
  PeriodicTokens val(8, 8);

  auto run_from = [&](const TrainConfig& cfg, const std::string& dir) {
    auto model = build_gpt(c);
    PeriodicTokens train(64, 8);
    Trainer t(cfg, dir, model, lm_task(), comm);
    t.set_flops_per_item(models::model_entry("gpt").train_flops(models::spec_from_config(c)));
    TrainSummary s = t.fit(train, &val, &val);
    return std::make_pair(model, s);
  };
  auto [whole, s] = run_from(c, temp_dir("lm-whole"));
  EXPECT_EQ(s.task, "causal_lm");
  EXPECT_EQ(s.item_unit, "token");
  EXPECT_EQ(s.steps, 48);
  ASSERT_EQ(s.test_metrics.size(), 3u);
  EXPECT_LT(s.test_metrics[0].second, 0.2)
      << "the next token is a function of the last: loss well below ln 16";
  EXPECT_NEAR(s.test_metrics[1].second, std::exp(s.test_metrics[0].second), 1e-6);
  EXPECT_GT(s.items_per_second, 0);
  EXPECT_NEAR(s.items_per_second / s.samples_per_second, kContext, 1e-6);
  EXPECT_GT(s.flops_per_item, 0);

  // Stop mid-epoch 2 (step 11 of 48) with a checkpoint, resume, finish: same weights.
  const std::string dir = temp_dir("lm-resume");
  TrainConfig first = c;
  first.trainer.max_steps = 11;
  first.checkpoint.every_steps = 11;
  run_from(first, dir);
  TrainConfig second = c;
  second.checkpoint.resume = "auto";
  auto [resumed, s2] = run_from(second, dir);
  EXPECT_EQ(s2.steps, 48);
  auto a = whole->named_parameters(), b = resumed->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(a[i].second.to_float_vector(), b[i].second.to_float_vector()) << a[i].first;
}

// summary.json carries what the run did and nothing else: a language model's
// test figures without accuracy or top-5, no epoch count for a run that
// trainer.max_steps ended inside its first epoch, MFU null without
// trainer.peak_flops and a number with it (issue 34: a GPT run's summary had
// test_accuracy 0, test_top5 0, epochs 0 and mfu 0).
TEST(TrainerLm, SummaryJsonHoldsOnlyWhatAppliesToTheRun) {
  TrainConfig c = gpt_config();
  c.trainer.epochs = 1;
  c.trainer.max_steps = 4;  // 8 batches an epoch: the run ends inside its first epoch
  c.trainer.eval_every_epochs = 0;
  c.trainer.eval_every_steps = 2;
  SingleProcessCommunicator comm;
  auto run = [&](const TrainConfig& cfg, const std::string& dir) {
    PeriodicTokens train(64, 8), val(8, 8);
    Trainer t(cfg, dir, build_gpt(cfg), lm_task(), comm);
    t.set_flops_per_item(models::model_entry("gpt").train_flops(models::spec_from_config(cfg)));
    t.fit(train, &val, &val);
    return nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
  };
  const nlohmann::json j = run(c, temp_dir("lm-summary"));
  EXPECT_EQ(j.at("task"), "causal_lm");
  EXPECT_EQ(j.at("steps"), 4);
  for (const char* k : {"test_accuracy", "test_top5", "epochs", "stopped_at_epoch"})
    EXPECT_FALSE(j.contains(k)) << k << " is " << j.value(k, nlohmann::json()).dump();
  ASSERT_TRUE(j.contains("test")) << j.dump();
  EXPECT_EQ(j.at("test").size(), 3u) << j.at("test").dump();
  for (const char* k : {"loss", "perplexity", "bpb"}) EXPECT_TRUE(j.at("test").at(k).is_number()) << k;
  EXPECT_EQ(j.at("test_loss"), j.at("test").at("loss"));
  EXPECT_EQ(j.at("best_epoch"), 1);  // evaluated at steps 2 and 4, both in the first epoch
  EXPECT_EQ(j.at("best_metric_name"), c.early_stopping.monitor);
  EXPECT_GT(j.at("flops_per_item").get<double>(), 0);
  EXPECT_TRUE(j.at("mfu").is_null()) << "no trainer.peak_flops, yet mfu " << j.at("mfu").dump();

  TrainConfig peak = c;
  peak.trainer.peak_flops = 1e12;
  const nlohmann::json p = run(peak, temp_dir("lm-summary-peak"));
  ASSERT_TRUE(p.at("mfu").is_number()) << p.at("mfu").dump();
  EXPECT_NEAR(p.at("mfu").get<double>(), p.at("flops_per_second").get<double>() / 1e12,
              1e-9 * p.at("mfu").get<double>());
}

TEST(TrainerLm, MonitorsMustBeMetricsOfTheTask) {
  TrainConfig c = gpt_config();
  SingleProcessCommunicator comm;
  c.early_stopping.monitor = "val_accuracy";  // a classification metric
  try {
    Trainer t(c, temp_dir("lm-monitor"), build_gpt(c), lm_task(), comm);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("early_stopping.monitor"), std::string::npos) << m;
    EXPECT_NE(m.find("val_perplexity"), std::string::npos) << m;
  }
  c.early_stopping.monitor = "val_bpb";
  c.schedule.name = "plateau";
  c.schedule.plateau_monitor = "val_top5";
  EXPECT_THROW(Trainer(c, temp_dir("lm-monitor2"), build_gpt(c), lm_task(), comm), ConfigError);
  c.schedule.plateau_monitor = "val_perplexity";
  EXPECT_NO_THROW(Trainer(c, temp_dir("lm-monitor3"), build_gpt(c), lm_task(), comm));
}

TEST(TrainerConfig, TheSchemaRefusesMonitorsNoTaskReports) {
  // train_loss passed the schema before and failed at the first evaluation
  EXPECT_THROW(parse_config("early_stopping: {monitor: train_loss}\n"), ConfigError);
  EXPECT_THROW(parse_config("schedule: {plateau_monitor: train_accuracy}\n"), ConfigError);
  for (auto& m : monitor_names())
    EXPECT_NO_THROW(parse_config("early_stopping: {monitor: " + m + "}\n")) << m;
}

}  // namespace
}  // namespace strata::testing
