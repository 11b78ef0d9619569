// The GPT on a CUDA device: a tiny GPT built twice from one seed, one copy moved
// with Module::to(cuda); forward, cross-entropy and backward on each. Logits,
// loss and every gradient must agree with the CPU run (FP32, TF32 off); under a
// bf16 autocast the device loss must stay within bf16 tolerance of the FP32 one.
// SKIPPED with the reason when there is no device.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/ops.h"
#include "core/precision.h"
#include "device_buffer.h"
#include "kernels/cuda/runtime.h"
#include "models/registry.h"

using namespace strata;

namespace {

models::ModelSpec tiny() {
  models::ModelSpec s;
  s.name = "gpt";
  s.vocab_size = 64;
  s.context = 32;
  s.layers = 2;
  s.heads = 4;
  s.width = 64;
  s.seed = 11;
  return s;
}

// max |a - b| relative to max |b|; a NaN or infinity in a is an infinite error
// (std::max(err, NaN) keeps err: a NaN would have passed)
double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    err = std::max(err, std::abs(double(a[i]) - b[i]));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  return scale > 0 ? err / scale : err;
}

Tensor loss_of(Module& m, const std::vector<int64_t>& ids, Device d, int64_t B, int64_t T, int64_t V) {
  std::vector<int64_t> x(ids.begin(), ids.end() - B), y(ids.begin() + B, ids.end());
  Tensor logits = m(Tensor::from_vector_i64(x, {B, T}).to(d));
  return cross_entropy(reshape(logits, {B * T, V}), Tensor::from_vector_i64(y, {B * T}).to(d));
}

}  // namespace

TEST(CudaGpt, ForwardAndBackwardMatchTheCpu) {
  STRATA_SKIP_WITHOUT_DEVICE();
  const int64_t B = 2, T = 32, V = 64;
  std::vector<int64_t> ids(static_cast<size_t>(B * T + B));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 37 + 5) % V);
  auto cpu = models::build_model(tiny()), dev = models::build_model(tiny());
  dev->to(Device::cuda);
  Tensor lc = loss_of(*cpu, ids, Device::cpu, B, T, V), ld = loss_of(*dev, ids, Device::cuda, B, T, V);
  EXPECT_NEAR(ld.item(), lc.item(), 1e-5 * std::abs(lc.item()));
  lc.backward();
  ld.backward();
  auto pc = cpu->named_parameters(), pd = dev->named_parameters();
  ASSERT_EQ(pc.size(), pd.size());
  for (size_t i = 0; i < pc.size(); ++i) {
    ASSERT_TRUE(pd[i].second.grad().defined()) << pd[i].first;
    EXPECT_LT(rel_error(pd[i].second.grad().to(Device::cpu).to_float_vector(),
                        pc[i].second.grad().to_float_vector()),
              1e-4)
        << pd[i].first;
  }
}

TEST(CudaGpt, Bf16AutocastLossStaysClose) {
  STRATA_SKIP_WITHOUT_DEVICE();
  const int64_t B = 2, T = 32, V = 64;
  std::vector<int64_t> ids(static_cast<size_t>(B * T + B));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 13 + 1) % V);
  auto dev = models::build_model(tiny());
  dev->to(Device::cuda);
  double f32 = loss_of(*dev, ids, Device::cuda, B, T, V).item();
  AutocastGuard bf16(DType::bf16);
  Tensor l = loss_of(*dev, ids, Device::cuda, B, T, V);
  EXPECT_NEAR(l.item(), f32, 2e-2 * std::abs(f32));
  l.backward();
  for (auto& [n, p] : dev->named_parameters()) EXPECT_TRUE(p.grad().defined()) << n;
}
