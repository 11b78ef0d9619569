#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "op_harness.h"

namespace strata::testing {
namespace {

// x, gamma, beta, running_mean, running_var; the running stats are constants of
// the gradient check (not differentiable, and rewritten in place by training).
OpCase bn(const char* label, Shape x, bool training, double momentum = 0.1) {
  int64_t C = x[1];
  OpAttrs a;
  a.training = training;
  a.momentum = momentum;
  InputSpec rm{{C}, false, 1, -0.5, 0.5};
  InputSpec rv{{C}, false, 1, 0.5, 1.5};
  rm.constant = rv.constant = true;
  return {label, {{x, false, 1, -2, 2}, {{C}, false, 1, 0.5, 1.5}, {{C}}, rm, rv}, a};
}

OpCase ln(const char* label, Shape x) {
  int64_t D = x.back();
  return {label, {{x, false, 1, -2, 2}, {{D}, false, 1, 0.5, 1.5}, {{D}}}, {}};
}

}  // namespace

STRATA_OP_CASES(batch_norm) {
  return {bn("train-2d", {8, 5}, true),
          bn("eval-2d", {8, 5}, false),
          bn("train-4d", {4, 3, 5, 6}, true),
          bn("eval-4d", {4, 3, 5, 6}, false),
          bn("train-3d-odd", {3, 7, 11}, true, 0.3),
          bn("train-two-rows", {2, 3}, true),
          bn("eval-empty-batch", {0, 3}, false),
          bn("train-large", {8, 32, 12, 12}, true),
          bn("eval-large", {8, 32, 12, 12}, false),
          bn("train-large-2d", {400, 96}, true)};
}

STRATA_OP_CASES(layer_norm) {
  return {ln("row", {9}), ln("rows", {4, 7}), ln("batched", {2, 3, 10}), ln("empty-batch", {0, 6}),
          ln("large", {48, 771})};
}

// The harness compares outputs only; the in-place running-stat update is checked
// here against PyTorch's rule (new = (1-m) old + m stat, unbiased variance), on
// the reference, the cpu kernel, and the cpu kernel in f16/bf16 storage.
TEST(BatchNorm, RunningStatsFollowPyTorch) {
  OpCase c = bn("stats", {4, 3, 5}, true, 0.25);
  OpInputs in = make_inputs(Op::batch_norm, c, DType::f64, 3);
  auto x = in.buffers[0].to_double(), rm0 = in.buffers[3].to_double(), rv0 = in.buffers[4].to_double();
  std::vector<double> want_m(3), want_v(3);
  for (int c_ = 0; c_ < 3; ++c_) {
    double s = 0, ss = 0;
    for (int n = 0; n < 4; ++n)
      for (int k = 0; k < 5; ++k) s += x[(n * 3 + c_) * 5 + k];
    double mean = s / 20;
    for (int n = 0; n < 4; ++n)
      for (int k = 0; k < 5; ++k) ss += std::pow(x[(n * 3 + c_) * 5 + k] - mean, 2);
    want_m[c_] = 0.75 * rm0[c_] + 0.25 * mean;
    want_v[c_] = 0.75 * rv0[c_] + 0.25 * ss / 19;
  }
  for (DType dt : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    OpInputs mine = convert_inputs(in, dt);
    std::vector<TensorView> iv;
    for (auto& b : mine.buffers) iv.push_back(b.view);
    std::vector<Buffer> outs;
    for (auto& s : op_info(Op::batch_norm)
                       .infer({{{4, 3, 5}, dt}, {{3}, dt}, {{3}, dt}, {{3}, dt}, {{3}, dt}}, c.attrs))
      outs.emplace_back(s.dtype, s.shape);
    std::vector<TensorView> ov;
    for (auto& b : outs) ov.push_back(b.view);
    if (dt == DType::f64)
      reference_backend().ops[static_cast<size_t>(Op::batch_norm)].forward(c.attrs, iv.data(), ov.data());
    else
      cpu_forward(Op::batch_norm, c.attrs, iv.data(), ov.data());
    double tol = dt == DType::f64 ? 1e-12 : dt == DType::f32 ? 1e-6 : dt == DType::f16 ? 2e-3 : 1.6e-2;
    auto got_m = mine.buffers[3].to_double(), got_v = mine.buffers[4].to_double();
    for (int c_ = 0; c_ < 3; ++c_) {
      EXPECT_NEAR(got_m[c_], want_m[c_], tol) << dtype_name(dt) << " running_mean[" << c_ << "]";
      EXPECT_NEAR(got_v[c_], want_v[c_], tol) << dtype_name(dt) << " running_var[" << c_ << "]";
    }
    EXPECT_TRUE(mine.buffers[3].sentinel_intact() && mine.buffers[4].sentinel_intact());
  }
}

TEST(BatchNorm, EvalLeavesRunningStatsAlone) {
  OpCase c = bn("eval", {4, 3}, false);
  OpInputs in = make_inputs(Op::batch_norm, c, DType::f32, 4);
  auto before = in.buffers[4].to_double();
  std::vector<TensorView> iv;
  for (auto& b : in.buffers) iv.push_back(b.view);
  Buffer y(DType::f32, {4, 3}), m(DType::f32, {3}), s(DType::f32, {3});
  TensorView ov[] = {y.view, m.view, s.view};
  cpu_forward(Op::batch_norm, c.attrs, iv.data(), ov);
  EXPECT_EQ(in.buffers[4].to_double(), before);
}

TEST(BatchNorm, TrainingOnOneValuePerChannelIsAShapeError) {
  OpAttrs a;
  a.training = true;
  EXPECT_THROW(op_info(Op::batch_norm)
                   .infer({{{1, 3}, DType::f32},
                           {{3}, DType::f32},
                           {{3}, DType::f32},
                           {{3}, DType::f32},
                           {{3}, DType::f32}},
                          a),
               ShapeError);
}

}  // namespace strata::testing
