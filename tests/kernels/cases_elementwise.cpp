#include "op_cases.h"

namespace strata::testing {
namespace {

std::vector<OpCase> binary_cases(double lo_b = -1, double hi_b = 1, double min_abs_b = 0) {
  auto b = [&](Shape s) { return InputSpec{s, false, 1, lo_b, hi_b, min_abs_b}; };
  return {
      {"same", {{{3, 5}}, b({3, 5})}, {}},
      {"row-broadcast", {{{4, 3, 6}}, b({6})}, {}},
      {"col-broadcast", {{{4, 3, 6}}, b({3, 1})}, {}},
      {"both-broadcast", {{{4, 1, 6}}, b({1, 3, 1})}, {}},
      {"scalar", {{{2, 7}}, b({})}, {}},
      {"large", {{{64, 1100}}, b({64, 1100})}, {}},
  };
}

std::vector<OpCase> unary_cases(double min_abs = 0) {
  InputSpec small{{3, 7}, false, 1, -3, 3, min_abs};
  InputSpec big{{40, 2000}, false, 1, -3, 3, min_abs};
  return {{"small", {small}, {}}, {"large", {big}, {}}};
}

}  // namespace

STRATA_OP_CASES(add) { return binary_cases(); }
STRATA_OP_CASES(sub) { return binary_cases(); }
STRATA_OP_CASES(mul) { return binary_cases(); }
STRATA_OP_CASES(div) { return binary_cases(0.5, 2.0, 0.5); }
STRATA_OP_CASES(relu) { return unary_cases(0.05); }
STRATA_OP_CASES(gelu) { return unary_cases(); }
STRATA_OP_CASES(tanh) { return unary_cases(); }
STRATA_OP_CASES(sigmoid) { return unary_cases(); }

}  // namespace strata::testing
