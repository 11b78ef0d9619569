#include "kernels/shape/common.h"

namespace strata::shape {
namespace {

std::vector<OutputSpec> last_axis(const std::vector<OutputSpec>& in, const char* op) {
  require_float(in[0], op, "input");
  require(!in[0].shape.empty(), op, "input must have at least one axis, got shape []");
  return {in[0]};
}

}  // namespace

std::vector<OutputSpec> softmax_infer(const std::vector<OutputSpec>& in, const OpAttrs&) {
  return last_axis(in, "softmax");
}
std::vector<OutputSpec> log_softmax_infer(const std::vector<OutputSpec>& in, const OpAttrs&) {
  return last_axis(in, "log_softmax");
}

std::vector<OutputSpec> cross_entropy_infer(const std::vector<OutputSpec>& in, const OpAttrs& a) {
  const char* op = "cross_entropy";
  const OutputSpec &logits = in[0], &labels = in[1];
  require_float(logits, op, "logits");
  require(logits.shape.size() == 2, op, "logits must be [N, C], got " + shape_str(logits.shape));
  require(labels.dtype == DType::i64, op, std::string("labels must be i64, got ") + dtype_name(labels.dtype));
  require(labels.shape.size() == 1 && labels.shape[0] == logits.shape[0], op,
          "labels must be [N] for logits " + shape_str(logits.shape) + ", got " + shape_str(labels.shape));
  require(logits.shape[0] > 0 && logits.shape[1] > 0, op, "empty logits " + shape_str(logits.shape));
  require(a.label_smoothing >= 0 && a.label_smoothing <= 1, op,
          "label_smoothing must be in [0, 1], got " + std::to_string(a.label_smoothing));
  // loss and the per-row log-sum-exp are statistics: FP32 beside half logits
  DType stat = stat_dtype(logits.dtype);
  return {{Shape{}, stat}, {Shape{logits.shape[0]}, stat}};
}

}  // namespace strata::shape
