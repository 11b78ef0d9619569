#include "op_cases.h"

namespace strata::testing {
namespace {

OpAttrs window(int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw) {
  OpAttrs a;
  a.kernel[0] = kh;
  a.kernel[1] = kw;
  a.stride[0] = sh;
  a.stride[1] = sw;
  a.padding[0] = ph;
  a.padding[1] = pw;
  return a;
}

// conv2d case: x [n,c,h,w], w [o,c,kh,kw], b [o]
OpCase conv(std::string label, Shape x, int64_t o, int64_t kh, int64_t kw, OpAttrs a) {
  return {std::move(label), {{x}, {{o, x[1], kh, kw}}, {{o}}}, a};
}

}  // namespace

STRATA_OP_CASES(conv2d) {
  return {
      conv("3x3", {2, 3, 5, 6}, 4, 3, 3, window(1, 1, 1, 1, 0, 0)),
      conv("3x3-pad", {2, 2, 5, 5}, 3, 3, 3, window(1, 1, 1, 1, 1, 1)),
      conv("stride2-pad", {1, 3, 7, 6}, 2, 3, 3, window(1, 1, 2, 2, 1, 1)),
      conv("nonsquare", {2, 2, 6, 7}, 3, 2, 3, window(1, 1, 2, 1, 0, 1)),
      conv("1x1", {3, 4, 3, 5}, 5, 1, 1, window(1, 1, 1, 1, 0, 0)),
      conv("1x1-stride2", {2, 3, 5, 5}, 2, 1, 1, window(1, 1, 2, 2, 0, 0)),
      conv("pad-exceeds", {1, 1, 2, 3}, 2, 3, 3, window(1, 1, 1, 2, 2, 1)),
      // fast path: images split over threads (K = 108 per dot product)
      conv("large", {4, 12, 12, 12}, 16, 3, 3, window(1, 1, 1, 1, 1, 1)),
      // one image: multithreaded GEMMs instead
      conv("large-one-image", {1, 32, 16, 16}, 16, 3, 3, window(1, 1, 2, 2, 1, 1)),
      conv("large-1x1", {4, 64, 8, 8}, 32, 1, 1, window(1, 1, 1, 1, 0, 0)),
      // col (144 x 2115 floats) exceeds the 1 MB block: row blocks of 40 and 7
      conv("col-blocks", {1, 16, 47, 45}, 4, 3, 3, window(1, 1, 1, 1, 1, 1)),
  };
}

STRATA_OP_CASES(max_pool2d) {
  return {
      {"2x2", {{{2, 3, 4, 6}}}, window(2, 2, 2, 2, 0, 0)},
      // the 2x2 stride-2 fast path: odd sizes drop the last row and column
      {"2x2-odd", {{{2, 3, 7, 9}}}, window(2, 2, 2, 2, 0, 0)},
      {"2x2-large", {{{4, 16, 28, 28}}}, window(2, 2, 2, 2, 0, 0)},
      {"3x3-s2-pad", {{{1, 2, 7, 5}}}, window(3, 3, 2, 2, 1, 1)},
      {"overlap", {{{2, 2, 5, 5}}}, window(3, 3, 1, 1, 0, 0)},
      {"nonsquare", {{{2, 1, 6, 7}}}, window(2, 3, 2, 1, 1, 1)},
      {"large", {{{4, 16, 32, 32}}}, window(3, 3, 2, 2, 1, 1)},
  };
}

STRATA_OP_CASES(avg_pool2d) {
  return {
      {"2x2", {{{2, 3, 4, 6}}}, window(2, 2, 2, 2, 0, 0)},
      {"3x3-s2-pad", {{{1, 2, 7, 5}}}, window(3, 3, 2, 2, 1, 1)},
      {"overlap", {{{2, 2, 5, 5}}}, window(3, 3, 1, 1, 0, 0)},
      {"nonsquare", {{{2, 1, 6, 7}}}, window(2, 3, 2, 1, 1, 1)},
      {"large", {{{4, 16, 32, 32}}}, window(3, 3, 2, 2, 1, 1)},
  };
}

STRATA_OP_CASES(global_avg_pool2d) {
  return {
      {"small", {{{2, 3, 4, 5}}}, {}},
      {"one-cell", {{{3, 2, 1, 1}}}, {}},
      {"large", {{{8, 32, 14, 14}}}, {}},
  };
}

}  // namespace strata::testing
