// A 2x2 max-pool window, written once for max_pool2d's 2x2 stride-2 path on the
// CPU and for batch_norm's fused pool on the CPU and CUDA: the first maximum of
// a (top left), b (top right), c (bottom left), d (bottom right) in row-major
// order (max_pool2d's tie rule) and where it is. Selects, not branches, so that
// the CPU's loops over windows vectorise (pool.cpp and norm.cpp are built
// without trapping math, which otherwise keeps each select a branch).
#pragma once

#include "kernels/scalar_math.h"

namespace strata::pool {

// I: the index type the caller stores (int32_t or int64_t); below = the plane's
// width, the offset of the bottom row. The offset is selected with the value, not
// computed from a cell number afterwards: that was 1.6 -> 2.3 ms for
// max_pool2d's 2x2 forward on the CNN's first block.
template <typename I>
struct WindowMax {
  float value;
  I offset;  // of the maximum from the window's top-left element: 0, 1, below or below + 1
};
template <typename I>
STRATA_HD inline WindowMax<I> window_max_2x2(float a, float b, float c, float d, I below) {
  float m = a;
  I q = 0;
  bool more = b > m;
  m = more ? b : m;
  q = more ? I{1} : q;
  more = c > m;
  m = more ? c : m;
  q = more ? below : q;
  more = d > m;
  return {more ? d : m, more ? below + 1 : q};
}

}  // namespace strata::pool
