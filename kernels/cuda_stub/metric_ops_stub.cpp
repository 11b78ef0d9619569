// Metric ops in a build without CUDA: a cuda view here means a bug upstream.
#include "base/error.h"
#include "kernels/metric_ops_backends.h"

namespace strata::cuda_metric {

void add_scaled(const TensorView&, double, const TensorView&) {
  throw Error("metric op add_scaled on a cuda tensor, but strata was built without CUDA");
}
void count_hits(const TensorView&, const TensorView&, const TensorView&, const TensorView&) {
  throw Error("metric op count_hits on a cuda tensor, but strata was built without CUDA");
}

void register_kernels(MetricOpStubs& s) {
  s.add_scaled.set(Device::cuda, &add_scaled);
  s.count_hits.set(Device::cuda, &count_hits);
}

}  // namespace strata::cuda_metric
