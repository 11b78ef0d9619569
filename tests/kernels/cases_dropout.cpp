#include <gtest/gtest.h>

#include <cmath>

#include "op_harness.h"

namespace strata::testing {
namespace {

OpCase drop(const char* label, Shape x, double p, bool training, uint64_t seed = 7) {
  OpAttrs a;
  a.p = p;
  a.training = training;
  a.seed = seed;
  return {label, {{x}}, a};
}

}  // namespace

STRATA_OP_CASES(dropout) {
  return {drop("train", {6, 7}, 0.3, true), drop("train-half", {3, 5, 11}, 0.5, true, 123),
          drop("eval", {4, 9}, 0.3, false), drop("p0", {4, 9}, 0.0, true),
          drop("p1", {5, 3}, 1.0, true),    drop("large", {40, 1000}, 0.1, true, 99)};
}

// The mask is a pure function of (seed, index): the same seed drops the same
// elements, another seed others, and the dropped fraction is near p.
TEST(Dropout, MaskDependsOnlyOnSeedAndIndex) {
  OpCase a = drop("a", {100000}, 0.25, true, 5), b = drop("b", {100000}, 0.25, true, 6);
  OpInputs in = make_inputs(Op::dropout, a, DType::f32, 1);
  auto m1 = run_cpu(Op::dropout, a.attrs, in, DType::f32, nullptr).outputs[1].to_double();
  auto m2 = run_cpu(Op::dropout, a.attrs, in, DType::f32, nullptr).outputs[1].to_double();
  auto m3 = run_cpu(Op::dropout, b.attrs, in, DType::f32, nullptr).outputs[1].to_double();
  EXPECT_EQ(m1, m2);
  EXPECT_NE(m1, m3);
  double dropped = 0;
  for (double m : m1) {
    dropped += m == 0;
    ASSERT_TRUE(m == 0 || std::fabs(m - 1 / 0.75) < 1e-6) << m;
  }
  EXPECT_NEAR(dropped / 100000, 0.25, 0.01);
}

}  // namespace strata::testing
