// The two implementations behind kernels/device_ops.h: cpu_dev in
// kernels/cpu/device_ops.cpp, cuda_dev in kernels/cuda/device_ops.cu (or the
// throwing stub in kernels/cuda_stub). Same signatures as strata::dev.
#pragma once
#include "kernels/device_ops.h"

#define STRATA_DEVICE_OPS_DECLS                                                                            \
  void fill(const TensorView& dst, double value);                                                          \
  void convert(const TensorView& src, const TensorView& dst);                                              \
  void strided_copy(const TensorView& src, const std::vector<int64_t>& strides, const TensorView& dst);    \
  void copy(const TensorView& src, const TensorView& dst);                                                 \
  void axpy(double alpha, const TensorView& x, const TensorView& y);                                       \
  void scale(const TensorView& x, double s);                                                               \
  void sum_of_squares(const TensorView* xs, size_t n, const TensorView& out);                              \
  void unscale_found_inf(const TensorView* grads, size_t n, float inv_scale, const TensorView& found_inf); \
  void sgd_step(const TensorView* w, const TensorView* g, const TensorView* buf, size_t n,                 \
                const dev::SgdStep& s, float grad_scale);                                                  \
  void adamw_step(const TensorView* w, const TensorView* g, const TensorView* m, const TensorView* v,      \
                  size_t n, const dev::AdamWStep& s, float grad_scale);                                    \
  void normalize_u8(const TensorView& src, const TensorView& dst, const float* mean, const float* std,     \
                    size_t channels);                                                                      \
  void synchronize();

namespace strata::cpu_dev {
STRATA_DEVICE_OPS_DECLS
}
namespace strata::cuda_dev {
STRATA_DEVICE_OPS_DECLS
}
