// Window arithmetic of the CUDA pooling kernels, plain C++ with STRATA_HD so the
// same functions run in the kernels and in host unit tests. Along one axis of
// size n, output cell i covers the padded cells [i*s - p, i*s - p + k); pools
// ignore padding, so the window is clipped to [0, n). Backward is written as a
// gather: input cell r collects from the outputs whose windows hold it, which is
// [first_window(r), last_window(r)] -- no atomics, a fixed summation order, and
// every input gradient cell written exactly once.
#pragma once
#include <cstdint>

#include "kernels/scalar_math.h"

namespace strata::cuda {

struct Span {
  int64_t begin, end;  // [begin, end)
};

// The unpadded cells of output cell i's window along one axis.
STRATA_HD inline Span pool_window(int64_t i, int64_t n, int64_t k, int64_t s, int64_t p) {
  int64_t b = i * s - p, e = b + k;
  return {b < 0 ? 0 : b, e > n ? n : e};
}

// The output cells (of `out` along this axis) whose windows hold input cell r.
STRATA_HD inline Span windows_holding(int64_t r, int64_t k, int64_t s, int64_t p, int64_t out) {
  int64_t rp = r + p;                          // r in padded coordinates
  int64_t lo = rp < k ? 0 : (rp - k) / s + 1;  // first i with i*s + k > rp
  int64_t hi = rp / s + 1;                     // one past the last i with i*s <= rp
  return {lo, hi < out ? hi : out};
}

}  // namespace strata::cuda
