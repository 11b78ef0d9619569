#include "kernels/shape/common.h"

namespace strata::shape {

std::vector<OutputSpec> dropout_infer(const std::vector<OutputSpec>& in, const OpAttrs& a) {
  require_float(in[0], "dropout", "input");
  require(a.p >= 0 && a.p <= 1, "dropout", "p must be in [0, 1], got " + std::to_string(a.p));
  return {in[0], in[0]};  // output, and the scale mask in the input's dtype
}

}  // namespace strata::shape
