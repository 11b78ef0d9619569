#include "kernels/shape/common.h"

namespace strata::shape {
namespace {

// A norm parameter or running statistic is stored in x's dtype or in FP32 beside
// half activations (stat_dtype(x): f32, or f64 for f64 x), each one independently.
void require_param_dtype(const OutputSpec& p, const OutputSpec& x, const char* op, const char* name) {
  require(p.dtype == x.dtype || p.dtype == stat_dtype(x.dtype), op,
          std::string(name) + " dtype " + dtype_name(p.dtype) + " must be the input's (" +
              dtype_name(x.dtype) + ") or " + dtype_name(stat_dtype(x.dtype)));
}

}  // namespace

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
    require_param_dtype(in[i], x, op, names[i]);
  }
  // the unbiased variance for the running statistics needs two values per channel (as PyTorch)
  require(!a.training || shape_numel(x.shape) / C > 1, op,
          "training needs more than one value per channel, got input " + shape_str(x.shape));
  require(a.eps > 0, op, "eps must be positive, got " + std::to_string(a.eps));
  DType st = stat_dtype(x.dtype);
  if (!a.max_pool_2x2) return {{x.shape, x.dtype}, {Shape{C}, st}, {Shape{C}, st}, {Shape{0}, DType::i32}};
  require(x.shape.size() == 4 && x.shape[2] >= 2 && x.shape[3] >= 2, op,
          "a fused 2x2 max pool needs input [N, C, H, W] with H, W >= 2, got " + shape_str(x.shape));
  Shape pooled{x.shape[0], C, x.shape[2] / 2, x.shape[3] / 2};
  return {{pooled, x.dtype}, {Shape{C}, st}, {Shape{C}, st}, {pooled, DType::i32}};
}

std::vector<OutputSpec> layer_norm_infer(const std::vector<OutputSpec>& in, const OpAttrs& a) {
  const char* op = "layer_norm";
  const OutputSpec& x = in[0];
  require_float(x, op, "input");
  require(!x.shape.empty(), op, "input must be [..., D], got shape []");
  int64_t D = x.shape.back();
  for (int i = 1; i < 3; ++i) {
    const char* name = i == 1 ? "gamma" : "beta";
    require(in[i].shape == Shape{D}, op,
            std::string(name) + " must be [" + std::to_string(D) + "] for input " + shape_str(x.shape) +
                ", got " + shape_str(in[i].shape));
    require_param_dtype(in[i], x, op, name);
  }
  require(a.eps > 0, op, "eps must be positive, got " + std::to_string(a.eps));
  Shape rows(x.shape.begin(), x.shape.end() - 1);
  DType st = stat_dtype(x.dtype);
  return {{x.shape, x.dtype}, {rows, st}, {rows, st}};
}

}  // namespace strata::shape
