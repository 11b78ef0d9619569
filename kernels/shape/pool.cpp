#include "kernels/shape/common.h"

namespace strata::shape {
namespace {

// [N,C,H,W] -> [N,C,Ho,Wo]; every window must hold at least one unpadded cell.
Shape pooled(const OutputSpec& x, const OpAttrs& a, const char* op) {
  require_float(x, op, "x");
  require(x.shape.size() == 4, op, "x must be [N,C,H,W], got " + shape_str(x.shape));
  Shape out = {x.shape[0], x.shape[1], 0, 0};
  for (int d = 0; d < 2; ++d) {
    int64_t size = x.shape[2 + d], k = a.kernel[d], s = a.stride[d], p = a.padding[d];
    std::string attrs =
        "kernel " + std::to_string(k) + ", stride " + std::to_string(s) + ", padding " + std::to_string(p);
    require(k > 0 && s > 0 && p >= 0 && 2 * p <= k, op,
            "needs kernel > 0, stride > 0, 0 <= padding <= kernel/2; got " + attrs);
    require(size + 2 * p >= k, op,
            "kernel larger than the padded input " + shape_str(x.shape) + ": " + attrs);
    out[2 + d] = (size + 2 * p - k) / s + 1;
  }
  return out;
}

}  // namespace

std::vector<OutputSpec> max_pool2d_infer(const std::vector<OutputSpec>& in, const OpAttrs& a) {
  Shape out = pooled(in[0], a, "max_pool2d");
  return {{out, in[0].dtype}, {out, DType::i64}};
}

std::vector<OutputSpec> avg_pool2d_infer(const std::vector<OutputSpec>& in, const OpAttrs& a) {
  return {{pooled(in[0], a, "avg_pool2d"), in[0].dtype}};
}

std::vector<OutputSpec> global_avg_pool2d_infer(const std::vector<OutputSpec>& in, const OpAttrs&) {
  require_float(in[0], "global_avg_pool2d", "x");
  const Shape& x = in[0].shape;
  require(x.size() == 4, "global_avg_pool2d", "x must be [N,C,H,W], got " + shape_str(x));
  return {{{x[0], x[1]}, in[0].dtype}};
}

}  // namespace strata::shape
