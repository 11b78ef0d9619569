// Core on a CUDA device end to end: a small MLP (one bias-less Linear, so the
// non-persistent zero bias moves too) built twice from one seed, one copy moved
// with Module::to(cuda); forward, cross-entropy, backward and an SGD momentum step
// on each; the loss, gradients and updated weights must agree within float
// tolerance. Also: a tensor's round trip through the device, and host access to
// a device tensor throwing; optimizer state following a model moved after its
// first step. SKIPPED with the reason when there is no device.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/error.h"
#include "core/ops.h"
#include "core/random.h"
#include "kernels/cuda/runtime.h"
#include "nn/modules/modules.h"
#include "nn/optim/sgd.h"

using namespace strata;

namespace {

std::shared_ptr<Sequential> mlp(uint64_t seed) {
  Generator g(seed);
  auto net = std::make_shared<Sequential>();
  net->emplace<Linear>(8, 16, true, &g).emplace<ReLU>().emplace<Linear>(16, 4, /*bias=*/false, &g);
  return net;
}

void expect_close(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], 1e-5f * (1.0f + std::fabs(b[i]))) << what << " element " << i;
}

}  // namespace

TEST(CudaCore, TensorRoundTripAndHostAccessError) {
  auto st = cuda::device_status();
  if (st.device_count == 0) GTEST_SKIP() << st.reason;
  Tensor h = Tensor::from_vector({1, -2, 3.5f, 4, 5, 6}, {2, 3});
  Tensor d = h.to(Device::cuda);
  EXPECT_EQ(d.device(), Device::cuda);
  EXPECT_EQ(d.view().device, Device::cuda);
  EXPECT_THROW((void)d.data<float>(), Error);
  EXPECT_EQ(d.to(Device::cpu).to_float_vector(), h.to_float_vector());
  EXPECT_EQ(d.to(DType::f16).to_float_vector(), h.to_float_vector());
  EXPECT_EQ(Tensor::zeros({3}, DType::f32, Device::cuda).to_float_vector(), std::vector<float>(3, 0.0f));
  EXPECT_EQ(Tensor::scalar(2.5, DType::f32, Device::cuda).item(), 2.5);
}

TEST(CudaCore, MlpStepOnCudaMatchesTheCpu) {
  auto st = cuda::device_status();
  if (st.device_count == 0) GTEST_SKIP() << st.reason;
  auto cpu_net = mlp(7), gpu_net = mlp(7);
  auto gpu_params = gpu_net->named_parameters();
  gpu_net->to(Device::cuda);
  ASSERT_EQ(gpu_net->device(), Device::cuda);
  for (auto& [n, t] : gpu_params) EXPECT_EQ(t.device(), Device::cuda) << n << ": handle not moved in place";

  Generator g(11);
  Tensor x = Tensor::normal({5, 8}, 0.0, 1.0, g);
  Tensor labels = Tensor::from_vector_i64({0, 3, 1, 2, 3}, {5});
  SGDOptions so;
  so.lr = 0.1;
  so.momentum = 0.9;
  SGD cpu_opt(cpu_net->named_parameters(), so), gpu_opt(gpu_net->named_parameters(), so);
  for (int step = 0; step < 3; ++step) {
    Tensor lc = cross_entropy((*cpu_net)(x), labels);
    Tensor lg = cross_entropy((*gpu_net)(x.to(Device::cuda)), labels.to(Device::cuda));
    EXPECT_EQ(lg.device(), Device::cuda);
    EXPECT_NEAR(lg.item(), lc.item(), 1e-5 * (1 + std::fabs(lc.item()))) << "step " << step;
    cpu_opt.zero_grad();
    gpu_opt.zero_grad();
    lc.backward();
    lg.backward();
    auto pc = cpu_net->named_parameters(), pg = gpu_net->named_parameters();
    for (size_t i = 0; i < pc.size(); ++i) {
      ASSERT_EQ(pg[i].second.grad().device(), Device::cuda) << pg[i].first;
      expect_close(pg[i].second.grad().to_float_vector(), pc[i].second.grad().to_float_vector(),
                   pc[i].first.c_str());
    }
    cpu_opt.step();
    gpu_opt.step();
    for (size_t i = 0; i < pc.size(); ++i)
      expect_close(pg[i].second.to_float_vector(), pc[i].second.to_float_vector(), pc[i].first.c_str());
  }
}

TEST(CudaCore, OptimizerStateFollowsAModelMovedAfterItsFirstStep) {
  auto st = cuda::device_status();
  if (st.device_count == 0) GTEST_SKIP() << st.reason;
  auto stay = mlp(5), moved = mlp(5);
  Generator g(6);
  Tensor x = Tensor::normal({4, 8}, 0.0, 1.0, g);
  Tensor labels = Tensor::from_vector_i64({1, 0, 3, 2}, {4});
  SGDOptions so;
  so.lr = 0.05;
  so.momentum = 0.9;
  SGD a(stay->named_parameters(), so), b(moved->named_parameters(), so);
  for (int step = 0; step < 3; ++step) {
    if (step == 1) moved->to(Device::cuda);  // momentum buffers exist on the host by now
    const Device d = moved->device();
    a.zero_grad();
    b.zero_grad();
    cross_entropy((*stay)(x), labels).backward();
    cross_entropy((*moved)(x.to(d)), labels.to(d)).backward();
    a.step();
    b.step();
  }
  for (auto& [n, t] : b.state().tensors)
    EXPECT_EQ(t.device(), Device::cpu) << n << ": state() is a host copy";
  auto pa = stay->named_parameters(), pb = moved->named_parameters();
  for (size_t i = 0; i < pa.size(); ++i)
    expect_close(pb[i].second.to_float_vector(), pa[i].second.to_float_vector(), pa[i].first.c_str());
}
