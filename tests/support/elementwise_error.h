// The error rule every kernel comparison in the op suites uses (CPU, CUDA, the
// host SIMT emulator): each element's difference relative to its own size plus
// a floor tied to the output's scale,
//     err = max_i |got_i - want_i| / (|want_i| + mean_j |want_j|),
// compared with a per-dtype tolerance (f32 2e-5, f16 4e-3, bf16 3e-2 in
// op_suite.cpp). The floor keeps elements near zero (a sum that cancels, a
// ReLU's zeros) from demanding more than the output's own scale allows, and
// nothing more: the rule it replaces divided the largest difference by
// max(1, max |want|), which for an output of small values (softmax over 20,000
// columns, a cross-entropy gradient over a 50,304-word vocabulary, attention
// gradients of 0.01) became an absolute 2e-5 or 3e-2, so a softmax writing
// zeros passed in bf16 and f16, and a denominator missing 544 of 20,000 columns
// passed in f32. Under this rule a kernel writing zeros scores at least
// max|want| / (max|want| + mean|want|) >= 0.5 wherever the output is not all
// zero, and an element off by 3% relative scores about 0.03.
// An output that is zero in exact arithmetic (attention's gradients over one
// key, batch norm's input gradient over two rows) has no scale of its own: the
// reference gives 0 or f64 noise, a correct kernel its own rounding noise. Such
// an output (max |want| below 1e-12) is compared against the scale of the data
// instead, 1: the suites draw inputs and output gradients from [-1, 1].
// A NaN or infinity on either side that the other does not match exactly is an
// infinite error (NaN never matches: an unwritten NaN pre-fill always fails).
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

namespace strata::testing {

// floor_override > 0: the floor to use instead of mean |want|, for an output that
// is the small difference of much larger terms (OpCase::error_scale).
inline double elementwise_error(const std::vector<double>& got, const std::vector<double>& want,
                                double floor_override = 0) {
  if (got.size() != want.size()) return INFINITY;
  double sum = 0, largest = 0;
  size_t n = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i]) || !std::isfinite(want[i])) {
      if (got[i] != want[i]) return INFINITY;
      continue;
    }
    sum += std::fabs(want[i]);
    largest = std::max(largest, std::fabs(want[i]));
    ++n;
  }
  const double floor = floor_override > 0 ? floor_override
                       : largest > 1e-12  ? sum / static_cast<double>(n)
                                          : 1.0;
  double e = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (std::isfinite(want[i])) e = std::max(e, std::fabs(got[i] - want[i]) / (std::fabs(want[i]) + floor));
  return e;
}

}  // namespace strata::testing
