// Picks the metric ops' implementation by the views' device (the one check of
// kernels/runtime/view_device.h) through the metric ops' dispatch stubs
// (kernels/metric_ops_backends.h); the views of one call must share it.
#include "kernels/metric_ops.h"

#include <string>

#include "base/error.h"
#include "kernels/metric_ops_backends.h"
#include "kernels/runtime/view_device.h"

namespace strata::dev {
namespace {

void require_f64_scalar(const TensorView& acc, const char* op, const char* what) {
  if (acc.dtype != DType::f64 || acc.numel() != 1)
    throw Error(std::string("metric op ") + op + ": " + what + " must be one f64 element, got " +
                dtype_name(acc.dtype) + shape_str(acc.shape));
}

const MetricOpStubs& stubs() {
  return registered_stubs<MetricOpStubs, &cpu_metric::register_kernels, &cuda_metric::register_kernels>();
}

}  // namespace

void add_scaled(const TensorView& x, double alpha, const TensorView& acc) {
  require_f64_scalar(acc, "add_scaled", "acc");
  if (x.numel() != 1) throw Error("metric op add_scaled: x must be one element, got " + shape_str(x.shape));
  stubs().add_scaled(common_device("metric op add_scaled", {{"x", x}, {"acc", acc}}), x, alpha, acc);
}

void count_hits(const TensorView& logits, const TensorView& labels, const TensorView& top1,
                const TensorView& top5) {
  require_f64_scalar(top1, "count_hits", "top1");
  if (top5.defined()) require_f64_scalar(top5, "count_hits", "top5");
  if (logits.shape.size() != 2 || labels.dtype != DType::i64 || labels.numel() != logits.shape[0])
    throw Error("metric op count_hits: expected (B, C) logits and B i64 labels, got logits " +
                shape_str(logits.shape) + " and labels " + dtype_name(labels.dtype) +
                shape_str(labels.shape));
  Device d = common_device("metric op count_hits",
                           {{"logits", logits}, {"labels", labels}, {"top1", top1}, {"top5", top5}});
  stubs().count_hits(d, logits, labels, top1, top5);
}

}  // namespace strata::dev
