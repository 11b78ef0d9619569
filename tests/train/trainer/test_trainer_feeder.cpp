// The trainer through a DeviceFeeder that really copies (a synchronous host
// "device": the copy engine is not a pass-through, so every batch goes the GPU
// way: read one ahead, copied into the feeder's slots, the task reading the
// copies): the run is bit-identical to the CPU path, and a run stopped
// mid-epoch and resumed is bit-identical too, which it is only if checkpoints
// take the position of the last batch trained, not the loader's (a batch ahead).
#include <gtest/gtest.h>

#include <csignal>
#include <cstring>

#include "core/communicator.h"
#include "train/trainer/stop_signal.h"
#include "train/trainer/trainer.h"
#include "trainer_fixture.h"

namespace strata::testing {
namespace {

constexpr int64_t kDim = 16, kClasses = 4;

class StagingHostEngine final : public CopyEngine {
 public:
  Device device() const override { return Device::cpu; }
  bool pass_through() const override { return false; }
  std::unique_ptr<StreamFence> make_fence() override { return std::make_unique<StreamFence>(); }
  void copy_to_device(const void* src, void* dst, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    ++copies;
  }
  void record_after_copies(StreamFence&) override {}
  void record_after_compute(StreamFence&) override {}
  void copies_wait(StreamFence&) override {}
  void compute_waits(StreamFence&) override {}
  bool passed(StreamFence&) override { return true; }
  void wait(StreamFence&) override {}
  int64_t copies = 0;
};

struct Data {
  std::vector<float> x, tx;
  std::vector<int64_t> y, ty;
  Data() {
    synthetic_data(1024, kDim, kClasses, 7, x, y);
    synthetic_data(256, kDim, kClasses, 8, tx, ty);
  }
};

std::vector<float> weights(const Module& m) {
  std::vector<float> w;
  for (auto& [n, t] : m.named_parameters()) {
    auto v = t.to_float_vector();
    w.insert(w.end(), v.begin(), v.end());
  }
  return w;
}

// One fit() of `c`; `staged`: through a copying engine. Returns the weights.
std::vector<float> fit(const TrainConfig& c, const Data& d, const std::string& dir, bool staged,
                       TrainSummary* summary = nullptr, int64_t* copies = nullptr) {
  MemoryBatchSource src(d.x, d.y, {kDim}, 32, 3, false);
  MemoryBatchSource test(d.tx, d.ty, {kDim}, 64, 0, false);
  SingleProcessCommunicator comm;
  auto model = build(c, {kDim});
  Trainer t(c, dir, model, {kDim}, comm);
  auto engine = std::make_unique<StagingHostEngine>();
  StagingHostEngine* e = engine.get();
  if (staged) t.set_copy_engine(std::move(engine));
  TrainSummary s = t.fit(src, nullptr, &test);
  if (summary) *summary = s;
  if (copies) *copies = staged ? e->copies : 0;
  return weights(*model);
}

TEST(TrainerFeeder, ACopyingFeederTrainsBitForBitAsTheHostPath) {
  TrainConfig c = quiet_config();
  c.trainer.epochs = 2;
  c.model.dropout = 0.2;
  TrainSummary host_s, staged_s;
  int64_t copies = 0;
  const auto host = fit(c, Data(), temp_dir("feeder-host"), false, &host_s);
  const auto staged = fit(c, Data(), temp_dir("feeder-staged"), true, &staged_s, &copies);
  EXPECT_EQ(host, staged);
  // two fields of every training batch, and of the test set's at each epoch's evaluation and at the end
  EXPECT_EQ(copies, 2 * (2 * 1024 / 32 + 3 * 256 / 64));
  EXPECT_DOUBLE_EQ(host_s.test_accuracy, staged_s.test_accuracy);
  EXPECT_DOUBLE_EQ(host_s.test_loss, staged_s.test_loss);
}

TEST(TrainerFeeder, AStopMidEpochResumesAtTheBatchAfterTheLastTrainedOne) {
  TrainConfig c = quiet_config();
  c.trainer.epochs = 2;
  c.model.dropout = 0.2;
  const Data d;
  const auto full = fit(c, d, temp_dir("feeder-full"), true);
  const std::string dir = temp_dir("feeder-cut");
  request_stop(SIGTERM);  // after the first step: the feeder has read batch 2 already
  fit(c, d, dir, true);
  request_stop(0);
  c.checkpoint.resume = "auto";
  const auto resumed = fit(c, d, dir, true);
  EXPECT_EQ(resumed, full) << "the resumed run skipped or repeated a batch";
}

}  // namespace
}  // namespace strata::testing
