#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "op_harness.h"

namespace strata::testing {
namespace {

std::vector<OpCase> last_axis_cases() {
  return {
      {"row", {{{7}, false, 1, -3, 3}}, {}},
      {"rows", {{{5, 9}, false, 1, -3, 3}}, {}},
      {"batched", {{{2, 3, 4}, false, 1, -3, 3}}, {}},
      {"one-col", {{{4, 1}}}, {}},
      {"empty-batch", {{{0, 6}}}, {}},
      {"large", {{{40, 1031}, false, 1, -6, 6}}, {}},
      // rows longer than one block's stride; a larger step keeps the finite
      // difference of a 40000-term objective above its rounding noise
      {"wide-row", {{{2, 20000}, false, 1, -6, 6}}, {}, 1.0, 1e-4},
  };
}

OpCase ce(const char* label, int64_t n, int64_t c, double smoothing, double range = 3) {
  OpAttrs a;
  a.label_smoothing = smoothing;
  return {label, {{{n, c}, false, 1, -range, range}, {{n}, true, c}}, a};
}

// log sum_c exp(x[i, c]) of each row, straight from the definition (logits are small enough here).
std::vector<double> row_lse(const std::vector<double>& x, int64_t n, int64_t c) {
  std::vector<double> r(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double s = 0;
    for (int64_t j = 0; j < c; ++j) s += std::exp(x[static_cast<size_t>(i * c + j)]);
    r[static_cast<size_t>(i)] = std::log(s);
  }
  return r;
}

}  // namespace

STRATA_OP_CASES(softmax) { return last_axis_cases(); }
STRATA_OP_CASES(log_softmax) { return last_axis_cases(); }
STRATA_OP_CASES(cross_entropy) {
  return {ce("small", 4, 5, 0),      ce("smooth", 6, 7, 0.1),       ce("two-class", 3, 2, 0.1),
          ce("single", 1, 3, 0),     ce("large", 48, 1000, 0.1),    ce("wide-logits", 8, 33, 0.2, 30),
          ce("vocab", 3, 5003, 0.1), ce("gpt-vocab", 2, 50257, 0.1)};  // a whole 1024-thread block per row on
                                                                       // CUDA
}

TEST(CrossEntropy, LabelOutOfRangeNamesTheIndex) {
  OpCase c = ce("bad", 3, 4, 0);
  OpInputs in = make_inputs(Op::cross_entropy, c, DType::f32, 1);
  in.buffers[1].view.as<int64_t>()[2] = 4;
  for (bool reference : {true, false}) {
    try {
      if (reference)
        run_reference(Op::cross_entropy, c.attrs, in, nullptr);
      else
        run_cpu(Op::cross_entropy, c.attrs, in, DType::f32, nullptr);
      FAIL() << "no error for an out-of-range label";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("label 4 at index 2"), std::string::npos) << e.what();
    }
  }
}

// loss for uniform logits is log(C) whatever the smoothing: a hand-computed anchor.
TEST(CrossEntropy, UniformLogitsGiveLogC) {
  OpCase c = ce("uniform", 2, 8, 0.1);
  OpInputs in = make_inputs(Op::cross_entropy, c, DType::f32, 1);
  in.buffers[0].from_double(std::vector<double>(16, 0.5));
  auto r = run_cpu(Op::cross_entropy, c.attrs, in, DType::f32, nullptr);
  EXPECT_NEAR(r.outputs[0].to_double()[0], std::log(8.0), 1e-6);
  for (double lse : r.outputs[1].to_double()) EXPECT_NEAR(lse, 0.5 + std::log(8.0), 1e-6);
}

// The saved auxiliary is the row log-sum-exp [N] (not probabilities), on every backend.
TEST(CrossEntropy, SavesRowLogSumExp) {
  OpCase c = ce("lse", 5, 11, 0.1);
  OpInputs in = make_inputs(Op::cross_entropy, c, DType::f32, 3);
  auto want = row_lse(in.buffers[0].to_double(), 5, 11);
  auto ref = run_reference(Op::cross_entropy, c.attrs, in, nullptr);
  auto cpu = run_cpu(Op::cross_entropy, c.attrs, in, DType::f32, nullptr);
  ASSERT_EQ(ref.outputs[1].view.shape, Shape{5});
  ASSERT_EQ(cpu.outputs[1].view.shape, Shape{5});
  auto r = ref.outputs[1].to_double(), g = cpu.outputs[1].to_double();
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(r[i], want[i], 1e-12) << "reference row " << i;
    EXPECT_NEAR(g[i], want[i], 1e-5 * std::fabs(want[i])) << "cpu row " << i;
  }
}

// loss and lse are statistics: f32 beside half logits, f64 beside f64 ones.
TEST(CrossEntropy, StatisticsAreFp32BesideHalfLogits) {
  for (DType dt : {DType::f16, DType::bf16, DType::f32, DType::f64}) {
    auto out = op_info(Op::cross_entropy).infer({{{4, 6}, dt}, {{4}, DType::i64}}, OpAttrs{});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].shape, Shape{});
    EXPECT_EQ(out[1].shape, Shape{4});
    EXPECT_EQ(out[0].dtype, stat_dtype(dt)) << dtype_name(dt);
    EXPECT_EQ(out[1].dtype, stat_dtype(dt)) << dtype_name(dt);
  }
}

}  // namespace strata::testing
