// The two implementations behind kernels/metric_ops.h: cpu_metric in
// kernels/cpu/metric_ops.cpp, cuda_metric in kernels/cuda/metric_ops.cu (or the
// throwing stub in kernels/cuda_stub). Same signatures as strata::dev.
// kernels/metric_ops.cpp dispatches through MetricOpStubs (kernels/
// dispatch_stub.h), whose columns each backend's register_kernels fills.
#pragma once
#include "kernels/metric_ops.h"
#include "kernels/runtime/dispatch_stub.h"

namespace strata {

struct MetricOpStubs {
  DispatchStub<decltype(dev::add_scaled)> add_scaled{"metric op add_scaled"};
  DispatchStub<decltype(dev::count_hits)> count_hits{"metric op count_hits"};
};

}  // namespace strata

#define STRATA_METRIC_OPS_DECLS                                                               \
  void add_scaled(const TensorView& x, double alpha, const TensorView& acc);                  \
  void count_hits(const TensorView& logits, const TensorView& labels, const TensorView& top1, \
                  const TensorView& top5);                                                    \
  /* Sets this backend's column of both stubs. */                                             \
  void register_kernels(MetricOpStubs& s);

namespace strata::cpu_metric {
STRATA_METRIC_OPS_DECLS
}
namespace strata::cuda_metric {
STRATA_METRIC_OPS_DECLS
}
