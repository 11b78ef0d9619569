// Picks the implementation of each device op from its views' device (the one
// check of kernels/runtime/view_device.h) through the device ops' dispatch stubs
// (kernels/device_ops_backends.h); views of one call must agree, except in
// copy(), which the CUDA side does across devices.
#include "kernels/device_ops.h"

#include <string>

#include "base/error.h"
#include "kernels/device_ops_backends.h"
#include "kernels/runtime/view_device.h"

namespace strata::dev {
namespace {

const DeviceOpStubs& stubs() {
  return registered_stubs<DeviceOpStubs, &cpu_dev::register_kernels, &cuda_dev::register_kernels>();
}

}  // namespace

void fill(const TensorView& dst, double value) { stubs().fill(dst.device, dst, value); }
void convert(const TensorView& src, const TensorView& dst) {
  stubs().convert(common_device("device op convert", {{"src", src}, {"dst", dst}}), src, dst);
}
void strided_copy(const TensorView& src, const std::vector<int64_t>& strides, const TensorView& dst) {
  stubs().strided_copy(common_device("device op strided_copy", {{"src", src}, {"dst", dst}}), src, strides,
                       dst);
}
void copy(const TensorView& src, const TensorView& dst) {
  // Between devices (or a device and the host) the CUDA side moves the bytes.
  const bool host = src.device == Device::cpu && dst.device == Device::cpu;
  stubs().copy(host ? Device::cpu : Device::cuda, src, dst);
}
void axpy(double alpha, const TensorView& x, const TensorView& y) {
  stubs().axpy(common_device("device op axpy", {{"x", x}, {"y", y}}), alpha, x, y);
}
void scale(const TensorView& x, double s) { stubs().scale(x.device, x, s); }
void sum_of_squares(const TensorView* xs, size_t n, const TensorView& out) {
  stubs().sum_of_squares(common_device("device op sum_of_squares", {{"xs", xs, n}, {"out", out}}), xs, n,
                         out);
}
void unscale_found_inf(const TensorView* grads, size_t n, float inv_scale, const TensorView& found_inf) {
  Device d = common_device("device op unscale_found_inf", {{"grads", grads, n}, {"found_inf", found_inf}});
  stubs().unscale_found_inf(d, grads, n, inv_scale, found_inf);
}
void sgd_step(const TensorView* w, const TensorView* g, const TensorView* buf, size_t n, const SgdStep& s,
              float grad_scale) {
  Device d = common_device("device op sgd_step", {{"w", w, n}, {"g", g, n}, {"buf", buf, n}});
  stubs().sgd_step(d, w, g, buf, n, s, grad_scale);
}
void adamw_step(const TensorView* w, const TensorView* g, const TensorView* m, const TensorView* v, size_t n,
                const AdamWStep& s, float grad_scale) {
  Device d = common_device("device op adamw_step", {{"w", w, n}, {"g", g, n}, {"m", m, n}, {"v", v, n}});
  stubs().adamw_step(d, w, g, m, v, n, s, grad_scale);
}
void normalize_u8(const TensorView& src, const TensorView& dst, const float* mean, const float* std,
                  size_t channels) {
  if (src.dtype != DType::u8 ||
      (dst.dtype != DType::f32 && dst.dtype != DType::bf16 && dst.dtype != DType::f16))
    throw Error(std::string("device op normalize_u8: ") + dtype_name(src.dtype) + " into " +
                dtype_name(dst.dtype) + " (u8 into f32, bf16 or f16)");
  if (src.numel() != dst.numel())
    throw Error("device op normalize_u8: " + shape_str(src.shape) + " into " + shape_str(dst.shape));
  if (channels == 0 || channels > kMaxU8Channels ||
      (channels > 1 && (src.shape.size() < 2 || src.shape[1] != static_cast<int64_t>(channels))))
    throw Error("device op normalize_u8: " + std::to_string(channels) + " channels (mean/std entries) for " +
                shape_str(src.shape) +
                "; (B, C, ...) with C = channels <= " + std::to_string(kMaxU8Channels) + ", or one for all");
  Device d = common_device("device op normalize_u8", {{"src", src}, {"dst", dst}});
  stubs().normalize_u8(d, src, dst, mean, std, channels);
}

void synchronize(Device d) { stubs().synchronize(d); }

}  // namespace strata::dev
