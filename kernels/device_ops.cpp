// Picks the implementation of each device op from its views' device; views of
// one call must agree (copy() excepted, which the CUDA side does across devices).
#include "kernels/device_ops.h"

#include <string>

#include "base/error.h"
#include "kernels/device_ops_backends.h"
#include "kernels/view_device.h"

namespace strata::dev {
namespace {

Device device_of(const char* op, std::initializer_list<const TensorView*> views) {
  return common_device((std::string("device op ") + op).c_str(), views);
}

Device device_of_lists(const char* op, std::initializer_list<std::pair<const TensorView*, size_t>> lists,
                       const TensorView* extra = nullptr) {
  const TensorView* first = nullptr;
  auto visit = [&](const TensorView& v) {
    if (!v.defined()) return;
    if (!first)
      first = &v;
    else if (v.device != first->device)
      throw Error(std::string("device op ") + op + ": views on " + device_name(first->device) + " and " +
                  device_name(v.device));
  };
  for (auto [p, n] : lists)
    for (size_t i = 0; p && i < n; ++i) visit(p[i]);
  if (extra) visit(*extra);
  return first ? first->device : Device::cpu;
}

}  // namespace

#define STRATA_DEV_CALL(d, fn, ...) \
  ((d) == Device::cpu ? cpu_dev::fn(__VA_ARGS__) : cuda_dev::fn(__VA_ARGS__))

void fill(const TensorView& dst, double value) { STRATA_DEV_CALL(dst.device, fill, dst, value); }
void convert(const TensorView& src, const TensorView& dst) {
  STRATA_DEV_CALL(device_of("convert", {&src, &dst}), convert, src, dst);
}
void strided_copy(const TensorView& src, const std::vector<int64_t>& strides, const TensorView& dst) {
  STRATA_DEV_CALL(device_of("strided_copy", {&src, &dst}), strided_copy, src, strides, dst);
}
void copy(const TensorView& src, const TensorView& dst) {
  if (src.device == Device::cpu && dst.device == Device::cpu) return cpu_dev::copy(src, dst);
  cuda_dev::copy(src, dst);
}
void axpy(double alpha, const TensorView& x, const TensorView& y) {
  STRATA_DEV_CALL(device_of("axpy", {&x, &y}), axpy, alpha, x, y);
}
void scale(const TensorView& x, double s) { STRATA_DEV_CALL(x.device, scale, x, s); }
void sum_of_squares(const TensorView* xs, size_t n, const TensorView& out) {
  STRATA_DEV_CALL(device_of_lists("sum_of_squares", {{xs, n}}, &out), sum_of_squares, xs, n, out);
}
void unscale_found_inf(const TensorView* grads, size_t n, float inv_scale, const TensorView& found_inf) {
  STRATA_DEV_CALL(device_of_lists("unscale_found_inf", {{grads, n}}, &found_inf), unscale_found_inf, grads, n,
                  inv_scale, found_inf);
}
void sgd_step(const TensorView* w, const TensorView* g, const TensorView* buf, size_t n, const SgdStep& s,
              float grad_scale) {
  Device d = device_of_lists("sgd_step", {{w, n}, {g, n}, {buf, buf ? n : 0}});
  STRATA_DEV_CALL(d, sgd_step, w, g, buf, n, s, grad_scale);
}
void adamw_step(const TensorView* w, const TensorView* g, const TensorView* m, const TensorView* v, size_t n,
                const AdamWStep& s, float grad_scale) {
  Device d = device_of_lists("adamw_step", {{w, n}, {g, n}, {m, n}, {v, n}});
  STRATA_DEV_CALL(d, adamw_step, w, g, m, v, n, s, grad_scale);
}
void normalize_u8(const TensorView& src, const TensorView& dst, const float* mean, const float* std,
                  size_t channels) {
  if (src.dtype != DType::u8 || dst.dtype != DType::f32)
    throw Error(std::string("device op normalize_u8: ") + dtype_name(src.dtype) + " into " +
                dtype_name(dst.dtype) + " (u8 into f32)");
  if (src.numel() != dst.numel())
    throw Error("device op normalize_u8: " + shape_str(src.shape) + " into " + shape_str(dst.shape));
  if (channels == 0 || channels > kMaxU8Channels ||
      (channels > 1 && (src.shape.size() < 2 || src.shape[1] != static_cast<int64_t>(channels))))
    throw Error("device op normalize_u8: " + std::to_string(channels) + " channels (mean/std entries) for " +
                shape_str(src.shape) +
                "; (B, C, ...) with C = channels <= " + std::to_string(kMaxU8Channels) + ", or one for all");
  STRATA_DEV_CALL(device_of("normalize_u8", {&src, &dst}), normalize_u8, src, dst, mean, std, channels);
}

void synchronize(Device d) {
  if (d == Device::cuda) cuda_dev::synchronize();
}

#undef STRATA_DEV_CALL

}  // namespace strata::dev
