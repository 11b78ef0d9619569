// The loader's counters in the run directory: a real Loader over shards packed
// into a temporary directory, trained on by the Trainer; metrics.jsonl and
// summary.json read back and checked against each other and the manifest.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "data/format/packer.h"
#include "data/loader/loader.h"
#include "models/registry.h"
#include "train/trainer/trainer.h"

namespace {
namespace fs = std::filesystem;
using nlohmann::json;

fs::path scratch(const std::string& name) {
  auto p = fs::temp_directory_path() / ("strata-logging-test-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p;
}

// 2000 random 8x8 images of 4 classes in shards of about 16 kB.
strata::data::Manifest pack_images(const fs::path& dir) {
  strata::data::PackOptions o;
  o.out_url = dir.string();
  o.shard_bytes = 16000;
  strata::data::DatasetPacker packer({{"image", "u8", {8, 8}, false}, {"label", "i64", {}, false}}, o);
  std::mt19937 rng(3);
  std::vector<uint8_t> img(64);
  for (int i = 0; i < 2000; ++i) {
    for (auto& v : img) v = static_cast<uint8_t>(rng());
    const int64_t label = i % 4;
    packer.add({{img.data(), img.size()}, {&label, sizeof label}});
  }
  return packer.finish();
}

std::unique_ptr<strata::data::Loader> loader(const fs::path& data, const fs::path& cache) {
  strata::data::LoaderOptions o;
  o.url = data.string();
  o.cache_dir = cache;
  o.cache_bytes = 100'000'000;  // every shard fits: the second epoch is all hits
  o.batch_size = 50;
  o.lookahead_bytes = 40'000;
  o.normalize.push_back({"image", {0.5f}, {0.25f}});
  return std::make_unique<strata::data::Loader>(o);
}

strata::TrainConfig config() {
  strata::TrainConfig c;
  c.model.name = "mlp";
  c.model.hidden = {16};
  c.model.num_classes = 4;
  c.optimizer.name = "sgd";
  c.optimizer.lr = 0.05;
  c.schedule.name = "constant";
  c.trainer.epochs = 2;
  c.trainer.threads = 1;
  c.checkpoint.every_epochs = 0;
  c.logging.console = "off";
  c.logging.tensorboard = true;
  c.logging.every_steps = 7;  // 40 steps an epoch: the epochs end between two intervals
  return c;
}

std::vector<json> rows(const fs::path& run) {
  std::vector<json> out;
  std::ifstream in(run / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

double unix_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

TEST(LoaderMetrics, IntervalsAddUpToTheSummaryAndAgreeWithTheManifest) {
  const fs::path root = scratch("intervals");
  const strata::data::Manifest m = pack_images(root / "data");
  const auto shards = static_cast<int64_t>(m.shards.size());
  ASSERT_GE(shards, 5);
  auto train = loader(root / "data", root / "cache");
  strata::TrainConfig c = config();
  strata::SingleProcessCommunicator comm;
  auto model = strata::models::build_model(strata::models::spec_from_config(c, {1, 8, 8}));
  strata::Trainer trainer(c, (root / "run").string(), model, {1, 8, 8}, comm);
  const double t0 = unix_now();
  const strata::TrainSummary s = trainer.fit(*train, nullptr, nullptr);
  const double t1 = unix_now();

  std::map<int, strata::LoaderCounters> per_epoch;
  strata::LoaderCounters sum;
  int data_rows = 0;
  double last_time = 0;
  for (const json& r : rows(root / "run")) {
    ASSERT_TRUE(r.contains("timestamp") && r["timestamp"].is_number_float()) << r.dump();
    const double t = r["timestamp"];
    EXPECT_GE(t, t0 - 1) << "unix seconds: " << r.dump();
    EXPECT_LE(t, t1 + 1) << r.dump();
    EXPECT_GE(t, last_time) << "rows are written in time order";
    last_time = t;
    if (r["kind"] != "data") continue;
    ++data_rows;
    for (const char* k : {"cache_hits", "cache_misses", "retries", "evictions", "shards_staged",
                          "store_requests", "store_bytes", "staging_mb_per_second", "data_wait_seconds",
                          "data_wait_fraction", "bad_images", "seconds", "epoch"})
      ASSERT_TRUE(r.contains(k)) << "data row without " << k << ": " << r.dump();
    strata::LoaderCounters c;
    c.cache_hits = r["cache_hits"];
    c.cache_misses = r["cache_misses"];
    c.retries = r["retries"];
    c.evictions = r["evictions"];
    c.shards_staged = r["shards_staged"];
    c.store_requests = r["store_requests"];
    c.store_bytes = r["store_bytes"];
    c.data_wait_seconds = r["data_wait_seconds"];
    per_epoch[r["epoch"].get<int>()] += c;
    sum += c;
  }
  EXPECT_EQ(data_rows, 80 / 7 + 2) << "a row every 7 steps of 80 and each epoch's tail";
  // summary.json's totals are the sum of the intervals
  json j = json::parse(std::ifstream(root / "run" / "summary.json"));
  ASSERT_TRUE(j.contains("train_loader")) << j.dump(2);
  const json& l = j["train_loader"];
  EXPECT_EQ(l["store_bytes"].get<int64_t>(), sum.store_bytes);
  EXPECT_EQ(l["store_requests"].get<int64_t>(), sum.store_requests);
  EXPECT_EQ(l["cache_hits"].get<int64_t>(), sum.cache_hits);
  EXPECT_EQ(l["cache_misses"].get<int64_t>(), sum.cache_misses);
  EXPECT_EQ(l["shards_staged"].get<int64_t>(), sum.shards_staged);
  EXPECT_NEAR(l["data_wait_seconds"].get<double>(), sum.data_wait_seconds, 1e-9);
  EXPECT_EQ(s.train_loader, sum);
  // each shard opened once an epoch, found in the cache or fetched: hits + misses = shards staged
  EXPECT_EQ(sum.cache_hits + sum.cache_misses, sum.shards_staged);
  EXPECT_EQ(sum.shards_staged, 2 * shards);
  // a cold cache fetches every shard in the first epoch, the whole dataset's bytes, one GET each;
  // the second epoch finds them all
  EXPECT_EQ(per_epoch[1].cache_misses, shards);
  EXPECT_EQ(per_epoch[1].store_bytes, m.total_bytes());
  EXPECT_EQ(per_epoch[1].store_requests, shards);
  EXPECT_EQ(per_epoch[2].cache_hits, shards);
  EXPECT_EQ(per_epoch[2].cache_misses, 0);
  EXPECT_EQ(per_epoch[2].store_bytes, 0);
  EXPECT_EQ(sum.retries, 0);
  EXPECT_EQ(sum.evictions, 0);
  // the TensorBoard scalars are written beside them
  bool events = false;
  for (auto& e : fs::directory_iterator(root / "run" / "tensorboard")) events |= fs::file_size(e.path()) > 0;
  EXPECT_TRUE(events);
  fs::remove_all(root);
}

// A run bounded by trainer.max_steps shows "step N/M", never "epoch 1/E".
TEST(LoaderMetrics, AStepBoundedRunCountsStepsNotEpochs) {
  const fs::path root = scratch("max-steps");
  pack_images(root / "data");
  auto train = loader(root / "data", root / "cache");
  strata::TrainConfig c = config();
  c.trainer.epochs = 12;
  c.trainer.max_steps = 30;
  c.logging.every_steps = 10;
  c.logging.console = "plain";
  strata::SingleProcessCommunicator comm;
  auto model = strata::models::build_model(strata::models::spec_from_config(c, {1, 8, 8}));
  strata::Trainer trainer(c, (root / "run").string(), model, {1, 8, 8}, comm);
  testing::internal::CaptureStdout();
  trainer.fit(*train, nullptr, nullptr);
  const std::string console = testing::internal::GetCapturedStdout();
  EXPECT_EQ(console.find("epoch 1/12"), std::string::npos) << console;
  EXPECT_EQ(console.find('\r'), std::string::npos) << "no carriage return off a terminal: " << console;
  for (const char* want : {"step 10/30 loss", "step 20/30 loss", "step 30/30 loss"})
    EXPECT_NE(console.find(want), std::string::npos) << want << " in: " << console;
  std::ifstream log(root / "run" / "train.log");
  std::string text((std::istreambuf_iterator<char>(log)), {});
  EXPECT_NE(text.find("step 30/30 loss"), std::string::npos) << text;
  EXPECT_EQ(text.find("epoch 1/12"), std::string::npos) << text;
  fs::remove_all(root);
}

}  // namespace
