// The two implementations behind kernels/device_ops.h: cpu_dev in
// kernels/cpu/device_ops.cpp (+ device_optim.cpp, device_reduce.cpp), cuda_dev in
// kernels/cuda/device_ops.cu (+ device_multi_tensor.cu, device_normalize_u8.cu), or the
// throwing stub in kernels/cuda_stub. Same signatures as strata::dev, except
// synchronize, which each backend does for its own device.
//
// kernels/device_ops.cpp dispatches through DeviceOpStubs (kernels/
// dispatch_stub.h): one stub per device op, a column per device, filled by each
// backend's register_kernels from STRATA_DEVICE_OP_LIST, so a backend missing
// a device op fails to link.
#pragma once
#include "kernels/device_ops.h"
#include "kernels/runtime/dispatch_stub.h"

// Every device op with strata::dev's signature; synchronize is listed apart.
#define STRATA_DEVICE_OP_LIST(X) \
  X(fill)                        \
  X(convert)                     \
  X(strided_copy)                \
  X(copy)                        \
  X(axpy)                        \
  X(scale)                       \
  X(sum_of_squares)              \
  X(unscale_found_inf)           \
  X(sgd_step)                    \
  X(adamw_step)                  \
  X(normalize_u8)

namespace strata {

struct DeviceOpStubs {
#define STRATA_X(fn) DispatchStub<decltype(dev::fn)> fn{"device op " #fn};
  STRATA_DEVICE_OP_LIST(STRATA_X)
#undef STRATA_X
  DispatchStub<void()> synchronize{"device op synchronize"};
};

}  // namespace strata

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
  void synchronize();                                                                                      \
  /* Sets this backend's column of every stub. */                                                          \
  void register_kernels(DeviceOpStubs& s);

namespace strata::cpu_dev {
STRATA_DEVICE_OPS_DECLS
}
namespace strata::cuda_dev {
STRATA_DEVICE_OPS_DECLS
}
