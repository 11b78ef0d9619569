// DataParallel's buffer policy (part of the test_ddp / test_ddp_nccl suite, see
// ddp_test.cpp): BatchNorm-style statistics averaged, integer buffers rank 0's,
// and the trainer calling the buffer sync once per epoch end.
#include <gtest/gtest.h>

#include "ddp_fixture.h"
#include "distributed/data_parallel.h"
#include "train/trainer/trainer.h"
#include "trainer_fixture.h"

namespace strata::testing {
namespace {

constexpr int64_t kDim = 16, kClasses = 4;

// Policy: floating-point buffers averaged over ranks, integer buffers rank 0's.
class WithBuffers : public Module {
 public:
  explicit WithBuffers(int rank) {
    w_ = register_parameter("w", Tensor::zeros({2}));
    mean_ = register_buffer("running_mean", Tensor::full({3}, rank + 1.0));
    count_ = register_buffer("batches", Tensor::full({1}, rank + 5.0, DType::i64));
  }
  Tensor forward(const Tensor& x) override { return x; }
  Tensor w_, mean_, count_;
};

TEST(DataParallel, SyncBuffersAveragesRunningStatistics) {
  SUITE_COMM_OR_SKIP(comm);
  auto m = std::make_shared<WithBuffers>(comm.rank());
  m->to(kDevice);
  DataParallel ddp(comm, m);
  EXPECT_EQ(m->mean_.to_float_vector()[0], 1.0f) << "construction broadcasts rank 0's buffers";
  m->mean_.fill_(comm.rank() + 1.0);  // ranks' statistics drift apart while training
  m->count_.fill_(comm.rank() + 5.0);
  ddp.sync_buffers();
  float avg = (comm.size() + 1) / 2.0f;
  for (float v : m->mean_.to_float_vector()) EXPECT_FLOAT_EQ(v, avg);
  EXPECT_EQ(m->count_.to_i64_vector()[0], 5);
}

// The trainer calls the buffer sync at each epoch's end, before evaluation and
// before checkpoints -- once per point, only when training ran since the last.
TEST(DataParallel, TrainerCallsTheBufferSync) {
  SUITE_COMM_OR_SKIP(comm);
  TrainConfig c = quiet_config();
  c.model.hidden = {32, 32};
  c.trainer.epochs = 3;
  c.trainer.eval_every_epochs = 1;
  auto model = build(c, {kDim});
  model->to(kDevice);
  Trainer t(c, temp_dir("ddp-buf-r" + std::to_string(comm.rank())), model, {kDim}, comm);
  int calls = 0;
  t.set_buffer_sync([&] { ++calls; });
  std::vector<float> x;
  std::vector<int64_t> y;
  synthetic_data(16 * comm.size(), kDim, kClasses, 5, x, y);
  SliceSource src(x, y, kDim, 4, comm.rank(), comm.size());
  MemoryBatchSource val(x, y, {kDim}, 4, 0, false);
  t.fit(src, &val, nullptr);
  EXPECT_EQ(calls, 3);  // epoch ends; evaluation right after adds none
}

}  // namespace
}  // namespace strata::testing
