#include "kernels/shape/common.h"

namespace strata::shape {

std::vector<OutputSpec> conv2d_infer(const std::vector<OutputSpec>& in, const OpAttrs& a) {
  const char* op = "conv2d";
  require_float(in[0], op, "x");
  for (int i = 1; i < 3; ++i)
    require(in[i].dtype == in[0].dtype, op,
            std::string("dtypes differ: ") + dtype_name(in[0].dtype) + " and " + dtype_name(in[i].dtype));
  const Shape &x = in[0].shape, &w = in[1].shape, &b = in[2].shape;
  std::string shapes = "x " + shape_str(x) + ", w " + shape_str(w) + ", b " + shape_str(b);
  require(x.size() == 4 && w.size() == 4, op, "x must be [N,C,H,W] and w [O,C,kh,kw]: " + shapes);
  require(w[1] == x[1], op, "channels of x and w differ: " + shapes);
  require(b.size() == 1 && b[0] == w[0], op, "bias must be [O]: " + shapes);
  require(a.stride[0] > 0 && a.stride[1] > 0 && a.padding[0] >= 0 && a.padding[1] >= 0, op,
          "stride must be positive and padding non-negative");
  int64_t ho = (x[2] + 2 * a.padding[0] - w[2]) / a.stride[0] + 1;
  int64_t wo = (x[3] + 2 * a.padding[1] - w[3]) / a.stride[1] + 1;
  require(x[2] + 2 * a.padding[0] >= w[2] && x[3] + 2 * a.padding[1] >= w[3] && ho > 0 && wo > 0, op,
          "kernel larger than the padded input: " + shapes);
  return {{{x[0], w[0], ho, wo}, in[0].dtype}};
}

}  // namespace strata::shape
