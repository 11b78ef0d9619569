#include "kernels/broadcast.h"
#include "kernels/shape/common.h"

namespace strata::shape {
namespace {

std::vector<OutputSpec> binary(const std::vector<OutputSpec>& in, const char* op) {
  require_float(in[0], op, "lhs");
  require(in[0].dtype == in[1].dtype, op,
          std::string("dtypes differ: ") + dtype_name(in[0].dtype) + " and " + dtype_name(in[1].dtype));
  return {{broadcast_plan(in[0].shape, in[1].shape, op).out, in[0].dtype}};
}

std::vector<OutputSpec> unary(const std::vector<OutputSpec>& in, const char* op) {
  require_float(in[0], op, "input");
  return {in[0]};
}

}  // namespace

std::vector<OutputSpec> add_infer(const std::vector<OutputSpec>& in, const OpAttrs&) {
  return binary(in, "add");
}
std::vector<OutputSpec> sub_infer(const std::vector<OutputSpec>& in, const OpAttrs&) {
  return binary(in, "sub");
}
std::vector<OutputSpec> mul_infer(const std::vector<OutputSpec>& in, const OpAttrs&) {
  return binary(in, "mul");
}
std::vector<OutputSpec> div_infer(const std::vector<OutputSpec>& in, const OpAttrs&) {
  return binary(in, "div");
}
std::vector<OutputSpec> relu_infer(const std::vector<OutputSpec>& in, const OpAttrs&) {
  return unary(in, "relu");
}
std::vector<OutputSpec> gelu_infer(const std::vector<OutputSpec>& in, const OpAttrs&) {
  return unary(in, "gelu");
}
std::vector<OutputSpec> tanh_infer(const std::vector<OutputSpec>& in, const OpAttrs&) {
  return unary(in, "tanh");
}
std::vector<OutputSpec> sigmoid_infer(const std::vector<OutputSpec>& in, const OpAttrs&) {
  return unary(in, "sigmoid");
}

}  // namespace strata::shape
