#include "op_cases.h"

namespace strata::testing {
namespace {

std::vector<OpCase> reduce_cases() {
  auto attrs = [](std::vector<int64_t> axes, bool keep) {
    OpAttrs a;
    a.axes = std::move(axes);
    a.keepdim = keep;
    return a;
  };
  return {
      {"all", {{{4, 5, 6}}}, attrs({}, false)},
      {"last", {{{4, 5, 6}}}, attrs({-1}, false)},
      {"first-keep", {{{4, 5, 6}}}, attrs({0}, true)},
      {"middle", {{{4, 5, 6}}}, attrs({1}, false)},
      {"two", {{{4, 5, 6}}}, attrs({0, 2}, true)},
      {"rows-large", {{{300, 1000}}}, attrs({1}, false)},
      // few outputs over many elements: the CUDA launcher splits each reduction
      // (rows: 2 segments of 4500; columns: 3 splits of 33 or 34) and sums the
      // partials in a second kernel
      {"rows-split", {{{2, 9000}}}, attrs({1}, false)},
      {"columns-split", {{{100, 3}}}, attrs({0}, false)},
  };
}

}  // namespace

STRATA_OP_CASES(sum) { return reduce_cases(); }
STRATA_OP_CASES(mean) { return reduce_cases(); }

}  // namespace strata::testing
