#include "kernels/shape/common.h"

namespace strata::shape {

std::vector<OutputSpec> batch_norm_infer(const std::vector<OutputSpec>& in, const OpAttrs& a) {
  const char* op = "batch_norm";
  const OutputSpec& x = in[0];
  require_float(x, op, "input");
  require(x.shape.size() >= 2, op, "input must be [N, C, ...], got " + shape_str(x.shape));
  int64_t C = x.shape[1];
  const char* names[] = {"", "gamma", "beta", "running_mean", "running_var"};
  for (int i = 1; i < 5; ++i) {
    require(in[i].shape == Shape{C}, op,
            std::string(names[i]) + " must be [" + std::to_string(C) + "] for input " + shape_str(x.shape) +
                ", got " + shape_str(in[i].shape));
    require(in[i].dtype == x.dtype, op,
            std::string(names[i]) + " dtype " + dtype_name(in[i].dtype) + " differs from input " +
                dtype_name(x.dtype));
  }
  // the unbiased variance for the running statistics needs two values per channel (as PyTorch)
  require(!a.training || shape_numel(x.shape) / C > 1, op,
          "training needs more than one value per channel, got input " + shape_str(x.shape));
  require(a.eps > 0, op, "eps must be positive, got " + std::to_string(a.eps));
  return {{x.shape, x.dtype}, {Shape{C}, x.dtype}, {Shape{C}, x.dtype}};
}

std::vector<OutputSpec> layer_norm_infer(const std::vector<OutputSpec>& in, const OpAttrs& a) {
  const char* op = "layer_norm";
  const OutputSpec& x = in[0];
  require_float(x, op, "input");
  require(!x.shape.empty(), op, "input must be [..., D], got shape []");
  int64_t D = x.shape.back();
  for (int i = 1; i < 3; ++i) {
    require(in[i].shape == Shape{D}, op,
            std::string(i == 1 ? "gamma" : "beta") + " must be [" + std::to_string(D) + "] for input " +
                shape_str(x.shape) + ", got " + shape_str(in[i].shape));
    require(in[i].dtype == x.dtype, op,
            std::string("parameter dtype ") + dtype_name(in[i].dtype) + " differs from input " +
                dtype_name(x.dtype));
  }
  require(a.eps > 0, op, "eps must be positive, got " + std::to_string(a.eps));
  Shape rows(x.shape.begin(), x.shape.end() - 1);
  return {{x.shape, x.dtype}, {rows, x.dtype}, {rows, x.dtype}};
}

}  // namespace strata::shape
