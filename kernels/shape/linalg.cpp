#include "kernels/broadcast.h"
#include "kernels/shape/common.h"

namespace strata::shape {
namespace {

std::string pair(const OutputSpec& a, const OutputSpec& b) {
  return shape_str(a.shape) + " and " + shape_str(b.shape);
}

}  // namespace

std::vector<OutputSpec> matmul_infer(const std::vector<OutputSpec>& in, const OpAttrs&) {
  const char* op = "matmul";
  require_float(in[0], op, "a");
  require(in[0].dtype == in[1].dtype, op,
          std::string("dtypes differ: ") + dtype_name(in[0].dtype) + " and " + dtype_name(in[1].dtype));
  const Shape &a = in[0].shape, &b = in[1].shape;
  require(a.size() >= 2 && b.size() >= 2, op, "operands must have rank >= 2, got " + pair(in[0], in[1]));
  require(a.back() == b[b.size() - 2], op, "inner dimensions differ: " + pair(in[0], in[1]));
  Shape batch_a(a.begin(), a.end() - 2), batch_b(b.begin(), b.end() - 2);
  Shape out;
  try {
    out = broadcast_plan(batch_a, batch_b, op).out;
  } catch (const ShapeError&) {
    throw ShapeError(std::string(op) + ": batch dimensions do not broadcast: " + pair(in[0], in[1]));
  }
  out.push_back(a[a.size() - 2]);
  out.push_back(b.back());
  return {{out, in[0].dtype}};
}

std::vector<OutputSpec> linear_infer(const std::vector<OutputSpec>& in, const OpAttrs&) {
  const char* op = "linear";
  require_float(in[0], op, "x");
  for (int i = 1; i < 3; ++i)
    require(in[i].dtype == in[0].dtype, op,
            std::string("dtypes differ: ") + dtype_name(in[0].dtype) + " and " + dtype_name(in[i].dtype));
  const Shape &x = in[0].shape, &w = in[1].shape, &b = in[2].shape;
  require(!x.empty(), op, "x must have rank >= 1, got " + shape_str(x));
  require(w.size() == 2 && w[1] == x.back(), op,
          "weight must be [N, K] with K = x's last dimension: x " + shape_str(x) + ", w " + shape_str(w));
  require(b.size() == 1 && b[0] == w[0], op, "bias must be [N]: w " + shape_str(w) + ", b " + shape_str(b));
  Shape out = x;
  out.back() = w[0];
  return {{out, in[0].dtype}};
}

}  // namespace strata::shape
