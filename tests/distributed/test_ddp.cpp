// DataParallel on whatever rank count mpirun gives (CTest runs 2 and 4; NCCL 1
// and 2, since one GPU serves one rank):
// equivalence with one process on the whole global batch, the model check,
// buckets started during backward, accumulation steps that stay local,
// parameters without a gradient (the buffer policy: ddp_buffers_test.cpp). Built twice: over MPI on
// the CPU (test_ddp) and over NCCL on CUDA devices (test_ddp_nccl, gpu label,
// STRATA_DDP_NCCL; SKIPPED with the reason without a device per local rank).
#include <gtest/gtest.h>

#include <csignal>

#include "base/error.h"
#include "core/autograd.h"
#include "core/ops.h"
#include "core/random.h"
#include "ddp_fixture.h"
#include "distributed/data_parallel.h"
#include "nn/modules/linear.h"
#include "train/trainer/stop_signal.h"
#include "train/trainer/trainer.h"
#include "trainer_fixture.h"

namespace strata::testing {
namespace {

constexpr int64_t kDim = 16, kClasses = 4;

TrainConfig mlp_config() {
  TrainConfig c = quiet_config();
  c.model.hidden = {32, 32};
  c.optimizer.lr = 0.05;
  return c;
}

// Built on the host (the same initial weights on every device), then moved.
std::shared_ptr<Module> build_on_device(const TrainConfig& c) {
  auto m = build(c, {kDim});
  m->to(kDevice);
  return m;
}

std::shared_ptr<Module> build_seeded(TrainConfig c, int64_t seed) {
  c.seed = seed;
  return build_on_device(c);
}

// One process on the global batch vs N ranks: the same sums in other orders
// (CPU); on a GPU the GEMMs also pick other reduction orders for other batch sizes.
constexpr double kEquivalenceTolerance = kDevice == Device::cpu ? 1e-5 : 1e-4;

// 50 steps on `world` ranks of batch B end where one process on batch world*B does.
TEST(DataParallel, MatchesOneProcessOnTheGlobalBatch) {
  SUITE_COMM_OR_SKIP(comm);
  const int W = comm.size(), r = comm.rank();
  const int64_t B = 8, steps = 50, G = B * W;
  std::vector<float> x;
  std::vector<int64_t> y;
  synthetic_data(steps * G, kDim, kClasses, 7, x, y);
  TrainConfig c = mlp_config();

  // Ranks other than 0 start from different weights: the broadcast must fix that.
  auto model = build_seeded(c, c.seed + r);
  DataParallel ddp(comm, model);
  Trainer t(c, temp_dir("ddp-eq-r" + std::to_string(r)), model, {kDim}, comm);
  t.set_gradient_sync(ddp.make_gradient_sync());
  t.set_buffer_sync([&] { ddp.sync_buffers(); });
  SliceSource src(x, y, kDim, B, r, W);
  TrainSummary s = t.fit(src, nullptr, nullptr);
  EXPECT_EQ(s.steps, steps);
  EXPECT_TRUE(same_on_every_rank(comm, *model)) << "replicas diverged";

  if (r == 0) {
    SingleProcessCommunicator one;
    auto ref = build_seeded(c, c.seed);
    Trainer rt(c, temp_dir("ddp-eq-ref"), ref, {kDim}, one);
    MemoryBatchSource all(x, y, {kDim}, G, 0, /*shuffle=*/false);
    rt.fit(all, nullptr, nullptr);
    double d = max_rel_diff(*model, *ref);
    EXPECT_LT(d, kEquivalenceTolerance) << W << " ranks x batch " << B << " vs 1 process x batch " << G;
    std::printf("[ddp] %s, %d ranks x %ld vs 1 x %ld after %ld steps: max relative difference %.3g\n",
                comm.backend().c_str(), W, static_cast<long>(B), static_cast<long>(G),
                static_cast<long>(steps), d);
    EXPECT_GT(max_rel_diff(*model, *build_seeded(c, c.seed)), 1e-3) << "training moved the weights";
  }
}

// A scheduler's signal reaches the ranks one by one: here only the last rank
// holds SIGUSR1 when the first step ends. Every rank stops after that step and
// reports SIGUSR1 (rank 0 logs it and exits 128+10), not a stand-in signal.
TEST(DataParallel, RanksStopTogetherOnTheSignalOneRankHolds) {
  SUITE_COMM_OR_SKIP(comm);
  const int W = comm.size(), r = comm.rank();
  const int64_t B = 8;
  std::vector<float> x;
  std::vector<int64_t> y;
  synthetic_data(20 * B * W, kDim, kClasses, 7, x, y);
  TrainConfig c = mlp_config();
  auto model = build_on_device(c);
  DataParallel ddp(comm, model);
  Trainer t(c, temp_dir("ddp-stop-r" + std::to_string(r)), model, {kDim}, comm);
  t.set_gradient_sync(ddp.make_gradient_sync());
  SliceSource src(x, y, kDim, B, r, W);
  if (r == W - 1) request_stop(SIGUSR1);
  TrainSummary s = t.fit(src, nullptr, nullptr);
  request_stop(0);
  EXPECT_EQ(s.interrupted_by_signal, SIGUSR1) << "rank " << r;
  EXPECT_EQ(s.steps, 1) << "rank " << r;
}

TEST(DataParallel, DifferentModelsAreAnErrorNamingTheParameter) {
  SUITE_COMM_OR_SKIP(comm);
  const int last = comm.size() - 1;
  TrainConfig c = mlp_config();
  if (comm.rank() == last) c.model.hidden = {32, 33};
  auto model = build_on_device(c);
  if (comm.size() == 1) {  // test_ddp_nccl_np1 (one GPU): nothing to disagree with
    EXPECT_NO_THROW(DataParallel(comm, model));
    return;
  }
  // the first entry that differs: the second layer's weight ([32, 32] vs [33, 32])
  std::string name = model->named_parameters()[2].first;
  try {
    DataParallel ddp(comm, model);
    FAIL() << "no error on rank " << comm.rank();
  } catch (const CommError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("'" + name + "'"), std::string::npos) << m;
    EXPECT_NE(m.find("rank(s) " + std::to_string(last)), std::string::npos) << m;
    EXPECT_NE(m.find("[32, 32]"), std::string::npos) << m;
    EXPECT_NE(m.find("[33, 32]"), std::string::npos) << m;
    if (comm.rank() == 0) std::printf("[ddp] %s\n", m.c_str());
  }
  // Same names and shapes: no error (and the broadcast makes the weights equal).
  TrainConfig same = mlp_config();
  auto ok = build_seeded(same, 100 + comm.rank());
  EXPECT_NO_THROW(DataParallel(comm, ok));
  EXPECT_TRUE(same_on_every_rank(comm, *ok));
}

struct LocalBatch {
  Tensor x, y;
};

// A batch that differs per rank, so that gradients differ before the sync.
LocalBatch local_batch(int rank, int64_t n = 8) {
  std::vector<float> x;
  std::vector<int64_t> y;
  synthetic_data(n, kDim, kClasses, 1000 + static_cast<uint64_t>(rank), x, y);
  return {Tensor::from_vector(x, {n, kDim}, DType::f32, kDevice), Tensor::from_vector_i64(y, {n}, kDevice)};
}

void forward_backward(Module& m, const LocalBatch& b) { cross_entropy(m(b.x), b.y).backward(); }

std::vector<std::vector<float>> grads_of(const Module& m) {
  std::vector<std::vector<float>> g;
  for (auto& [n, p] : m.named_parameters())
    g.push_back(p.grad().defined() ? p.grad().to_float_vector()
                                   : std::vector<float>(static_cast<size_t>(p.numel()), 0.0f));
  return g;
}

void expect_near_all(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b,
                     const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t k = 0; k < a[i].size(); ++k)
      ASSERT_NEAR(a[i][k], b[i][k], 1e-6f * (1.0f + std::fabs(b[i][k])))
          << what << ": parameter " << i << " element " << k;
}

// One bucket per parameter: the last layer's bucket must be in flight while
// backward still works on the first layer, and all of them before backward returns.
TEST(BucketedGradientSync, BucketsStartDuringBackward) {
  SUITE_COMM_OR_SKIP(comm);
  TrainConfig c = mlp_config();
  auto model = build_on_device(c);
  DataParallel ddp(comm, model, BucketOptions{1, 1});
  auto sync = ddp.make_gradient_sync();
  auto params = model->named_parameters();
  ASSERT_EQ(sync->num_buckets(), params.size());
  EXPECT_EQ(sync->reduces_on_device(), kDevice == Device::cuda) << comm.backend();
  EXPECT_EQ(sync->bucket_names()[0][0], params.back().first) << "bucket 0 holds the last parameter";
  std::vector<std::pair<size_t, bool>> starts;
  sync->set_on_bucket_start([&](size_t b, bool in_backward) { starts.push_back({b, in_backward}); });
  // The first layer's weight is among the last gradients backward produces.
  size_t started_when_first_layer_done = 0;
  params[0].second.add_grad_ready_hook(
      [&](Tensor&) { started_when_first_layer_done = sync->buckets_started(); });

  LocalBatch b = local_batch(comm.rank());
  sync->begin_step(true);
  forward_backward(*model, b);
  EXPECT_GE(started_when_first_layer_done, 1u)
      << "no bucket had started when the first layer's gradient was done";
  ASSERT_EQ(starts.size(), params.size()) << "every bucket starts before backward returns";
  for (size_t i = 0; i < starts.size(); ++i) {
    EXPECT_EQ(starts[i].first, i) << "buckets start in order";
    EXPECT_TRUE(starts[i].second);
  }
  EXPECT_EQ(sync->stats().started_in_backward, static_cast<int64_t>(params.size()));

  auto local = grads_of(*model);
  for (auto& g : local) comm.allreduce(g.data(), g.size(), DType::f32, ReduceOp::avg);
  sync->finish();
  expect_near_all(grads_of(*model), local, "averaged gradient");
  EXPECT_EQ(sync->stats().steps, 1);
  EXPECT_GT(sync->stats().comm_seconds, 0.0);
}

// Default bucket sizes on a small model: one bucket; larger caps group several.
TEST(BucketedGradientSync, BucketsFollowReverseOrderAndSizes) {
  SUITE_COMM_OR_SKIP(comm);
  TrainConfig c = mlp_config();
  auto model = build_on_device(c);
  auto params = model->named_parameters();
  BucketedGradientSync one(comm, params);
  EXPECT_EQ(one.num_buckets(), 1u);
  // weights 32x16, 32x32, 4x32 (+ biases): first bucket <= 600 B = the last layer (528 B);
  // then <= 4300 B: the middle layer (4224 B) but not also the first bias (+128 B).
  BucketedGradientSync some(comm, params, BucketOptions{600, 4300});
  auto names = some.bucket_names();
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names[0], (std::vector<std::string>{params[5].first, params[4].first}));
  EXPECT_EQ(names[1], (std::vector<std::string>{params[3].first, params[2].first}));
  EXPECT_EQ(names[2], (std::vector<std::string>{params[1].first, params[0].first}));
}

// Micro-steps of an accumulation window stay local; the last one syncs the sum.
// (Under NCCL the counting wrapper hides the stream-ordered communicator, so
// these buckets take the host-copy path; the counts are the same.)
TEST(BucketedGradientSync, AccumulationMicroStepsDoNotCommunicate) {
  SUITE_COMM_OR_SKIP(inner);
  CountingCommunicator comm(inner);
  TrainConfig c = mlp_config();
  auto model = build_on_device(c);
  DataParallel ddp(comm, model, BucketOptions{1, 1});
  auto sync = ddp.make_gradient_sync();
  int before = comm.async_allreduces + comm.allreduces;
  for (int micro = 0; micro < 3; ++micro) {
    sync->begin_step(false);
    forward_backward(*model, local_batch(comm.rank() * 10 + micro));
  }
  EXPECT_EQ(comm.async_allreduces + comm.allreduces, before) << "a non-syncing micro-step communicated";
  EXPECT_EQ(sync->buckets_started(), 0u);
  sync->begin_step(true);
  forward_backward(*model, local_batch(comm.rank() * 10 + 3));
  auto local = grads_of(*model);  // the window's sum on this rank
  for (auto& g : local) inner.allreduce(g.data(), g.size(), DType::f32, ReduceOp::avg);
  sync->finish();
  EXPECT_EQ(comm.async_allreduces, static_cast<int>(sync->num_buckets()));
  EXPECT_EQ(comm.allreduces, 0);
  expect_near_all(grads_of(*model), local, "accumulated gradient");

  // Through the trainer: accumulate 2 over 8 micro-batches = 4 syncs.
  CountingCommunicator counted(inner);
  auto m2 = build_on_device(c);
  DataParallel ddp2(counted, m2);
  TrainConfig ca = c;
  ca.trainer.accumulate = 2;
  Trainer t(ca, temp_dir("ddp-acc-r" + std::to_string(comm.rank())), m2, {kDim}, inner);
  auto s2 = ddp2.make_gradient_sync();
  auto* s2p = s2.get();
  t.set_gradient_sync(std::move(s2));
  std::vector<float> x;
  std::vector<int64_t> y;
  synthetic_data(8 * 4 * comm.size(), kDim, kClasses, 5, x, y);
  SliceSource src(x, y, kDim, 4, comm.rank(), comm.size());
  int a0 = counted.async_allreduces;
  TrainSummary sum = t.fit(src, nullptr, nullptr);
  EXPECT_EQ(sum.steps, 4);
  EXPECT_EQ(counted.async_allreduces - a0, 4 * static_cast<int>(s2p->num_buckets()));
  EXPECT_EQ(s2p->stats().steps, 4);
}

// A parameter with no gradient on some ranks joins the allreduce as zeros.
class TwoPaths : public Module {
 public:
  explicit TwoPaths(bool use_b) : use_b_(use_b) {
    Generator g(3);
    a_ = register_module("a", std::make_shared<Linear>(kDim, kClasses, true, &g));
    b_ = register_module("b", std::make_shared<Linear>(kDim, kClasses, true, &g));
  }
  Tensor forward(const Tensor& x) override { return use_b_ ? add((*a_)(x), (*b_)(x)) : (*a_)(x); }
  std::shared_ptr<Linear> a_, b_;
  bool use_b_;
};

TEST(BucketedGradientSync, ParametersWithoutAGradientJoinAsZeros) {
  SUITE_COMM_OR_SKIP(comm);
  auto model = std::make_shared<TwoPaths>(comm.rank() == 0);  // only rank 0 uses b
  model->to(kDevice);
  DataParallel ddp(comm, model);
  auto sync = ddp.make_gradient_sync();
  sync->begin_step(true);
  forward_backward(*model, local_batch(comm.rank()));
  std::vector<float> gb(static_cast<size_t>(kDim * kClasses), 0.0f);
  if (comm.rank() == 0)
    gb = model->b_->weight().grad().to_float_vector();
  else
    EXPECT_FALSE(model->b_->weight().grad().defined());
  comm.broadcast(gb.data(), gb.size(), DType::f32, 0);
  sync->finish();
  ASSERT_TRUE(model->b_->weight().grad().defined());
  auto got = model->b_->weight().grad().to_float_vector();
  for (size_t i = 0; i < gb.size(); ++i) ASSERT_NEAR(got[i], gb[i] / comm.size(), 1e-6f) << i;
}

}  // namespace
}  // namespace strata::testing
