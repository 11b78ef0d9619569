// The kernels' error rule (tests/support/elementwise_error.h) on outputs built
// by hand: what it must reject (zeros, a label-only gradient, a 3% error, NaN)
// and what it must accept (rounding).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "elementwise_error.h"

namespace strata::testing {
namespace {

// a softmax row over n columns: every value about 1/n
std::vector<double> softmax_row(int n) {
  std::vector<double> y(static_cast<size_t>(n));
  double s = 0;
  for (int i = 0; i < n; ++i) s += y[static_cast<size_t>(i)] = std::exp(std::sin(i * 0.37));
  for (auto& v : y) v /= s;
  return y;
}

TEST(ElementwiseError, ZerosFailWhateverTheOutputsScale) {
  auto want = softmax_row(20000);  // values about 5e-5: the old rule saw 5e-5 absolute
  std::vector<double> zeros(want.size(), 0.0);
  EXPECT_GE(elementwise_error(zeros, want), 0.5);
}

// Every element 2.8% too large: each scores 0.028 |y| / (|y| + mean |y|), about
// two thirds of 2.8% for the largest, far over f32's 2e-5 and f16's 4e-3.
TEST(ElementwiseError, ARelativeErrorOfThreePercentScoresAFewPercent) {
  auto want = softmax_row(20000), got = want;
  for (auto& v : got) v *= 1.0 / (1 - 544.0 / 20000);  // the denominator missing 544 columns
  double e = elementwise_error(got, want);
  EXPECT_GT(e, 0.015);
  EXPECT_LT(e, 0.028);
}

TEST(ElementwiseError, ALabelOnlyGradientFails) {
  // d loss / d logits of one row: (p - onehot) / N; the label's term is large, the rest tiny
  const int C = 50304, label = 7;
  std::vector<double> want(C), got(C, 0.0);
  for (int c = 0; c < C; ++c) want[c] = (1.0 / C - (c == label)) / 64;
  got[label] = want[label];
  EXPECT_GE(elementwise_error(got, want), 0.3);
}

TEST(ElementwiseError, RoundingPassesNanFails) {
  auto want = softmax_row(1000), got = want;
  for (auto& v : got) v = static_cast<float>(v);  // f32 rounding: 2^-24 relative
  EXPECT_LT(elementwise_error(got, want), 1e-7);
  got[3] = NAN;
  EXPECT_EQ(elementwise_error(got, want), INFINITY);
  EXPECT_EQ(elementwise_error({1.0, 2.0}, {1.0}), INFINITY);
}

TEST(ElementwiseError, AnOutputZeroInExactArithmeticIsMeasuredAgainstTheDatasScale) {
  // a correct kernel's rounding noise where the exact result is 0
  EXPECT_LT(elementwise_error({3e-8, -2e-8}, {0.0, 1e-17}), 1e-7);
  EXPECT_GT(elementwise_error({0.5, 0.0}, {0.0, 0.0}), 0.4);
}

}  // namespace
}  // namespace strata::testing
