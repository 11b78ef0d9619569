// CPU metric ops (kernels/metric_ops.h): plain loops; a batch's rows are few
// enough that threading would cost more than it saves.
#include <cstdint>

#include "base/error.h"
#include "kernels/metric_math.h"
#include "kernels/metric_ops_backends.h"
#include "kernels/runtime/half.h"

namespace strata::cpu_metric {
namespace {

float load(const TensorView& v, int64_t i) {
  switch (v.dtype) {
    case DType::f32:
      return static_cast<const float*>(v.data)[i];
    case DType::f16:
      return f16_bits_to_float(static_cast<const uint16_t*>(v.data)[i]);
    case DType::bf16:
      return bf16_bits_to_float(static_cast<const uint16_t*>(v.data)[i]);
    case DType::f64:
      return static_cast<float>(static_cast<const double*>(v.data)[i]);
    default:
      throw Error(std::string("metric op: ") + dtype_name(v.dtype) + " is not a floating dtype");
  }
}

}  // namespace

void add_scaled(const TensorView& x, double alpha, const TensorView& acc) {
  // f64 x stays double; the others are what item() would have read
  const double v =
      x.dtype == DType::f64 ? *static_cast<const double*>(x.data) : static_cast<double>(load(x, 0));
  *static_cast<double*>(acc.data) += alpha * v;
}

void count_hits(const TensorView& logits, const TensorView& labels, const TensorView& top1,
                const TensorView& top5) {
  const int64_t rows = logits.shape[0], classes = logits.shape[1];
  const int64_t* label = static_cast<const int64_t*>(labels.data);
  int64_t hits1 = 0, hits5 = 0;
  for (int64_t i = 0; i < rows; ++i) {
    if (label[i] < 0 || label[i] >= classes)
      throw Error("metric op count_hits: label " + std::to_string(label[i]) + " of row " + std::to_string(i) +
                  " is outside [0, " + std::to_string(classes) + ")");
    const int64_t above =
        math::classes_above([&](int64_t j) { return load(logits, i * classes + j); }, classes, label[i]);
    hits1 += above == 0;
    hits5 += above < 5;
  }
  *static_cast<double*>(top1.data) += static_cast<double>(hits1);
  if (top5.defined()) *static_cast<double*>(top5.data) += static_cast<double>(hits5);
}

void register_kernels(MetricOpStubs& s) {
  s.add_scaled.set(Device::cpu, &add_scaled);
  s.count_hits.set(Device::cpu, &count_hits);
}

}  // namespace strata::cpu_metric
