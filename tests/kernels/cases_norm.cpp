#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "base/error.h"
#include "op_harness.h"

namespace strata::testing {
namespace {

// x, gamma, beta, running_mean, running_var; the running stats are constants of
// the gradient check (not differentiable, and rewritten in place by training).
// fp32: gamma, beta and the running statistics stored in f32 beside a half x, as
// mixed precision keeps them (the harness runs them as the case dtype until it
// honours InputSpec::fp32; both must pass).
// relu: the fused ReLU (y = max(0, bn(x))); pool: the fused 2x2 max pool after it.
OpCase bn(const char* label, Shape x, bool training, double momentum = 0.1, bool fp32 = false,
          bool relu = false, bool pool = false) {
  int64_t C = x[1];
  OpAttrs a;
  a.training = training;
  a.relu = relu;
  a.max_pool_2x2 = pool;
  a.momentum = momentum;
  InputSpec gamma{{C}, false, 1, 0.5, 1.5}, beta{{C}};
  InputSpec rm{{C}, false, 1, -0.5, 0.5};
  InputSpec rv{{C}, false, 1, 0.5, 1.5};
  rm.constant = rv.constant = true;
  gamma.fp32 = beta.fp32 = rm.fp32 = rv.fp32 = fp32;
  return {label, {{x, false, 1, -2, 2}, gamma, beta, rm, rv}, a};
}

OpCase ln(const char* label, Shape x, bool fp32 = false) {
  int64_t D = x.back();
  InputSpec gamma{{D}, false, 1, 0.5, 1.5}, beta{{D}};
  gamma.fp32 = beta.fp32 = fp32;
  return {label, {{x, false, 1, -2, 2}, gamma, beta}, {}};
}

// Runs op through cpu dispatch with x (and grad_out) in `xdt` and the parameters
// (inputs 1..) in `pdt`; returns the outputs, the grads and the parameter buffers
// as they are after the call (batch_norm's running statistics are updated in place).
struct MixedRun {
  OpInputs in;
  std::vector<Buffer> outs, grads;
};

MixedRun run_mixed(Op op, const OpCase& c, const OpInputs& src, DType xdt, DType pdt,
                   const std::vector<double>& gout) {
  MixedRun r;
  for (size_t i = 0; i < src.buffers.size(); ++i) {
    r.in.buffers.emplace_back(i == 0 ? xdt : pdt, src.buffers[i].view.shape);
    r.in.buffers.back().from_double(src.buffers[i].to_double());
  }
  std::vector<OutputSpec> specs;
  std::vector<TensorView> iv, ov;
  for (auto& b : r.in.buffers) {
    specs.push_back({b.view.shape, b.view.dtype});
    iv.push_back(b.view);
  }
  for (auto& o : op_info(op).infer(specs, c.attrs)) {
    r.outs.emplace_back(o.dtype, o.shape);
    ov.push_back(r.outs.back().view);
  }
  cpu_forward(op, c.attrs, iv.data(), ov.data());
  Buffer go(xdt, r.outs[0].view.shape);
  go.from_double(gout);
  std::vector<TensorView> gv;
  for (auto& b : r.in.buffers) {
    r.grads.emplace_back(b.view.dtype, b.view.shape);
    gv.push_back(r.grads.back().view);
  }
  if (op == Op::batch_norm) gv[3] = gv[4] = TensorView{};  // running stats take no gradient
  cpu_backward(op, c.attrs, iv.data(), ov.data(), go.view, gv.data());
  return r;
}

// Half x with f32 parameters against the same values run all in f32: x and
// grad_out are rounded to the half dtype first, so the FP32 results (statistics,
// dgamma, dbeta, running stats) must agree to f32 rounding and the half results
// (y, dx) to one half rounding. A half round trip of any FP32 buffer fails this.
void expect_mixed_matches_f32(Op op, const OpCase& c, DType half) {
  OpInputs src = make_inputs(op, c, DType::f64, 11);
  Buffer xr(half, src.buffers[0].view.shape);
  xr.from_double(src.buffers[0].to_double());
  src.buffers[0].from_double(xr.to_double());
  Shape yshape = output_specs(op, c.attrs, src, DType::f64)[0].shape;  // x's, or pooled
  std::vector<double> gout(static_cast<size_t>(shape_numel(yshape)));
  for (size_t i = 0; i < gout.size(); ++i) gout[i] = std::sin(0.7 * static_cast<double>(i) + 0.3);
  Buffer gr(half, yshape);
  gr.from_double(gout);
  gout = gr.to_double();
  MixedRun mixed = run_mixed(op, c, src, half, DType::f32, gout);
  MixedRun wide = run_mixed(op, c, src, DType::f32, DType::f32, gout);
  double half_tol = half == DType::f16 ? 2e-3 : 1.6e-2;
  std::string what = std::string(op_info(op).name) + " " + c.label + " " + dtype_name(half) + " ";
  for (size_t i = 0; i < mixed.outs.size(); ++i) {
    DType ints = wide.outs[i].view.dtype;  // batch_norm's pool indices: the same in both runs, exactly
    bool index = !is_floating(ints);
    EXPECT_EQ(mixed.outs[i].view.dtype, index ? ints : i == 0 ? half : DType::f32) << what << "output " << i;
    if (index)
      EXPECT_EQ(mixed.outs[i].to_double(), wide.outs[i].to_double()) << what << "output " << i;
    else
      EXPECT_LE(scaled_error(mixed.outs[i].to_double(), wide.outs[i].to_double()), i == 0 ? half_tol : 1e-6)
          << what << "output " << i;
    EXPECT_TRUE(mixed.outs[i].sentinel_intact()) << what << "output " << i;
  }
  for (size_t i = 1; i < mixed.in.buffers.size(); ++i)
    EXPECT_LE(scaled_error(mixed.in.buffers[i].to_double(), wide.in.buffers[i].to_double()), 1e-6)
        << what << "parameter " << i << " after forward";
  for (size_t i = 0; i < mixed.grads.size(); ++i) {
    if (!mixed.grads[i].view.defined() || (op == Op::batch_norm && i >= 3)) continue;
    EXPECT_LE(scaled_error(mixed.grads[i].to_double(), wide.grads[i].to_double()), i == 0 ? half_tol : 1e-5)
        << what << "grad of input " << i;
    EXPECT_TRUE(mixed.grads[i].sentinel_intact()) << what << "grad of input " << i;
  }
}

}  // namespace

// Two rows per channel: the normalised values are +-(1 - eps/(2 var)), so the
// input gradient, (g - mean g - x_hat mean(g x_hat)) gamma / sigma, is the
// difference of terms of about 1 that cancel to about 3e-4: a correct f32
// kernel is off by its rounding of those terms (2.5e-7), 4e-4 of the result.
// Measured against the terms' size instead (OpCase::error_scale).
OpCase two_rows() {
  OpCase c = bn("train-two-rows", {2, 3}, true);
  c.error_scale = 1.0;
  return c;
}

// x around 100 with a spread of 1: the statistics must not come from
// sum x^2 - M mean^2, which cancels in f32 products (the CPU kernel sums
// around a value of each channel). Half storage cannot hold the spread at 100.
OpCase bn_offset(const char* label, Shape x) {
  OpCase c = bn(label, std::move(x), true);
  c.inputs[0].lo = 100;
  c.inputs[0].hi = 102;
  c.half = false;
  return c;
}

STRATA_OP_CASES(batch_norm) {
  return {bn("train-2d", {8, 5}, true), bn_offset("train-offset-mean", {4, 3, 5, 6}),
          bn_offset("train-offset-mean-large", {8, 32, 12, 12}), bn("eval-2d", {8, 5}, false),
          bn("train-4d", {4, 3, 5, 6}, true), bn("eval-4d", {4, 3, 5, 6}, false),
          bn("train-3d-odd", {3, 7, 11}, true, 0.3), two_rows(), bn("eval-empty-batch", {0, 3}, false),
          bn("train-large", {8, 32, 12, 12}, true), bn("eval-large", {8, 32, 12, 12}, false),
          bn("train-large-2d", {400, 96}, true), bn("train-4d-fp32-params", {4, 3, 5, 6}, true, 0.1, true),
          bn("eval-4d-fp32-params", {4, 3, 5, 6}, false, 0.1, true),
          bn("train-2d-fp32-params", {16, 7}, true, 0.2, true),
          bn("train-4d-relu", {4, 3, 5, 6}, true, 0.1, false, true),
          bn("eval-4d-relu", {4, 3, 5, 6}, false, 0.1, false, true),
          bn("train-2d-relu", {8, 5}, true, 0.1, false, true),
          bn("train-large-relu", {8, 32, 12, 12}, true, 0.1, false, true),
          bn("train-4d-fp32-params-relu", {4, 3, 5, 6}, true, 0.1, true, true),
          // the fused 2x2 max pool: odd H or W (a last row or column in no window),
          // with and without the ReLU, eval, FP32 parameters, a plane of a CNN's size
          bn("train-pool-relu", {4, 3, 6, 8}, true, 0.1, false, true, true),
          bn("train-pool-relu-odd", {3, 2, 5, 7}, true, 0.1, false, true, true),
          bn("train-pool", {4, 3, 6, 5}, true, 0.1, false, false, true),
          bn("eval-pool-relu", {4, 3, 6, 6}, false, 0.1, false, true, true),
          bn("eval-pool-odd", {2, 3, 3, 4}, false, 0.1, false, false, true),
          bn("train-pool-relu-fp32-params", {4, 3, 4, 6}, true, 0.1, true, true, true),
          bn("train-pool-relu-large", {8, 16, 28, 28}, true, 0.1, false, true, true)};
}

STRATA_OP_CASES(layer_norm) {
  return {ln("row", {9}),
          ln("rows", {4, 7}),
          ln("batched", {2, 3, 10}),
          ln("empty-batch", {0, 6}),
          ln("large", {48, 771}),
          ln("rows-fp32-params", {5, 33}, true),
          ln("batched-fp32-params", {2, 3, 64}, true)};
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
  std::vector<Buffer> outs;  // every output the op has (y, mean, invstd, the pool's indices)
  for (auto& s : output_specs(Op::batch_norm, c.attrs, in, DType::f32)) outs.emplace_back(s.dtype, s.shape);
  std::vector<TensorView> ov;
  for (auto& b : outs) ov.push_back(b.view);
  cpu_forward(Op::batch_norm, c.attrs, iv.data(), ov.data());
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

// The fused pool halves H and W (flooring, as max_pool2d) and needs a 4-d input
// with H, W >= 2; the error names the shape.
TEST(BatchNorm, FusedPoolHalvesThePlaneAndNeedsFourDimensions) {
  OpAttrs a;
  a.training = true;
  a.relu = a.max_pool_2x2 = true;
  auto specs = [](Shape x) {
    std::vector<OutputSpec> s{{x, DType::f32}};
    for (int i = 0; i < 4; ++i) s.push_back({{x[1]}, DType::f32});
    return s;
  };
  EXPECT_EQ(op_info(Op::batch_norm).infer(specs({2, 3, 7, 6}), a)[0].shape, (Shape{2, 3, 3, 3}));
  for (Shape bad : {Shape{4, 3}, Shape{2, 3, 8}, Shape{2, 3, 1, 8}, Shape{2, 3, 8, 1}}) {
    try {
      op_info(Op::batch_norm).infer(specs(bad), a);
      ADD_FAILURE() << "batch_norm with a fused pool accepted " << shape_str(bad);
    } catch (const ShapeError& e) {
      EXPECT_NE(std::string(e.what()).find(shape_str(bad)), std::string::npos) << e.what();
    }
  }
}

}  // namespace strata::testing

namespace strata::testing {

TEST(NormMixedStorage, HalfInputWithFp32ParametersMatchesF32) {
  for (DType half : {DType::f16, DType::bf16}) {
    expect_mixed_matches_f32(Op::batch_norm, bn("train", {4, 3, 5, 6}, true, 0.1, true), half);
    expect_mixed_matches_f32(Op::batch_norm, bn("eval", {6, 5}, false, 0.1, true), half);
    expect_mixed_matches_f32(Op::batch_norm, bn("train-pool", {4, 3, 6, 6}, true, 0.1, true, true, true),
                             half);
    expect_mixed_matches_f32(Op::layer_norm, ln("rows", {6, 40}, true), half);
  }
}

TEST(NormMixedStorage, ParameterDtypeMustBeInputsOrFp32) {
  OpAttrs a;
  auto bn_specs = [](DType x, DType p, int which) {
    std::vector<OutputSpec> s{{{4, 3}, x}, {{3}, x}, {{3}, x}, {{3}, x}, {{3}, x}};
    s[static_cast<size_t>(which)].dtype = p;
    return s;
  };
  for (int i = 1; i < 5; ++i) {
    auto out = op_info(Op::batch_norm).infer(bn_specs(DType::bf16, DType::f32, i), a);
    EXPECT_EQ(out[0].dtype, DType::bf16);
    EXPECT_EQ(out[1].dtype, DType::f32);
    EXPECT_EQ(out[2].dtype, DType::f32);
    const char* names[] = {"", "gamma", "beta", "running_mean", "running_var"};
    for (auto [x, p] : {std::pair{DType::f16, DType::bf16}, std::pair{DType::f32, DType::f16},
                        std::pair{DType::f64, DType::f32}}) {
      try {
        op_info(Op::batch_norm).infer(bn_specs(x, p, i), a);
        ADD_FAILURE() << "batch_norm accepted " << names[i] << " " << dtype_name(p) << " beside "
                      << dtype_name(x);
      } catch (const ShapeError& e) {
        std::string m = e.what();
        EXPECT_NE(m.find(names[i]), std::string::npos) << m;
        EXPECT_NE(m.find(dtype_name(p)), std::string::npos) << m;
        EXPECT_NE(m.find(dtype_name(x)), std::string::npos) << m;
      }
    }
  }
  auto ln_out =
      op_info(Op::layer_norm).infer({{{2, 8}, DType::f16}, {{8}, DType::f32}, {{8}, DType::f16}}, a);
  EXPECT_EQ(ln_out[1].dtype, DType::f32);
  EXPECT_EQ(ln_out[2].dtype, DType::f32);
  EXPECT_THROW(
      op_info(Op::layer_norm).infer({{{2, 8}, DType::f16}, {{8}, DType::f16}, {{8}, DType::bf16}}, a),
      ShapeError);
}

}  // namespace strata::testing
