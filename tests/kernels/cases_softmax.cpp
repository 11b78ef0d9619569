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
  };
}

OpCase ce(const char* label, int64_t n, int64_t c, double smoothing) {
  OpAttrs a;
  a.label_smoothing = smoothing;
  return {label, {{{n, c}, false, 1, -3, 3}, {{n}, true, c}}, a};
}

}  // namespace

STRATA_OP_CASES(softmax) { return last_axis_cases(); }
STRATA_OP_CASES(log_softmax) { return last_axis_cases(); }
STRATA_OP_CASES(cross_entropy) {
  return {ce("small", 4, 5, 0), ce("smooth", 6, 7, 0.1), ce("two-class", 3, 2, 0.1), ce("single", 1, 3, 0),
          ce("large", 48, 1000, 0.1)};
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
}

}  // namespace strata::testing
