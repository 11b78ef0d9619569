// Device ops: the few loops core runs itself, outside the op table (tensor fill,
// convert and copy, gradient accumulation, optimizer steps, loss-scale unscale
// and finite check, gradient norms). Each is one function here with a CPU and a
// CUDA implementation, chosen by the views' device; the per-element math comes
// from kernels/scalar_math.h on both, so the two differ only in how they walk
// memory. All views are contiguous. Views of one call share a device, except
// copy(), which moves bytes between devices.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/runtime/tensor_view.h"

namespace strata::dev {

// dst[i] = value, converted to dst's dtype.
void fill(const TensorView& dst, double value);
// dst[i] = src[i] converted between dtypes (floats, halves and integers); same numel.
void convert(const TensorView& src, const TensorView& dst);
// Gathers the strided view of src (src.data is its first element, src.shape its
// logical shape, `strides` in elements) into the contiguous dst (same dtype).
void strided_copy(const TensorView& src, const std::vector<int64_t>& strides, const TensorView& dst);
// Copies src into dst, same dtype and numel, between any two devices. Returns when
// dst may be read by the host (a copy into host memory has finished).
void copy(const TensorView& src, const TensorView& dst);
// y += alpha * x; x may have another floating dtype than y; FP32 arithmetic.
void axpy(double alpha, const TensorView& x, const TensorView& y);
// x *= s (floating x).
void scale(const TensorView& x, double s);
// out += sum over the n tensors of sum(x^2); out is an f32 scalar on the same
// device (so a global norm needs one small read, not one per tensor).
void sum_of_squares(const TensorView* xs, size_t n, const TensorView& out);
// g *= inv_scale for each gradient; found_inf (f32 scalar, same device) is set to
// 1 when any unscaled value is inf or NaN. It is never reset here.
void unscale_found_inf(const TensorView* grads, size_t n, float inv_scale, const TensorView& found_inf);

// Multi-tensor optimizer steps over n parameters: w (f32 masters), g (f32 or
// half gradients, multiplied by grad_scale as read), state (f32). The per-step
// scalars are computed by the optimizer in double and rounded once, as PyTorch
// does; each element goes through math::sgd_update / math::adamw_update.
struct SgdStep {
  float lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  bool first_step = false;  // momentum buffers start as the gradient
};
// buf may be undefined views when momentum == 0.
void sgd_step(const TensorView* w, const TensorView* g, const TensorView* buf, size_t n, const SgdStep& s,
              float grad_scale = 1.0f);

struct AdamWStep {
  float decay = 1, beta2 = 0, one_minus_beta1 = 0, one_minus_beta2 = 0, eps = 0, step_size = 0, bc2_sqrt = 1;
};
void adamw_step(const TensorView* w, const TensorView* g, const TensorView* m, const TensorView* v, size_t n,
                const AdamWStep& s, float grad_scale = 1.0f);

// u8 pixels to model input: dst = (src (u8) / 255 - mean[c]) / std[c] by
// math::normalize_u8 (kernels/pixel_math.h), as the loader's NormalizeU8 does.
// dst is f32, or bf16 / f16 (a model's compute dtype): the value is computed in
// f32 as for an f32 dst and rounded once to dst's dtype (nearest even), the bits
// a later cast of the f32 result would give. src and dst are (B, C, ...) with c
// the element's channel when channels = C > 1; one mean/std for every element
// when channels = 1. At most kMaxU8Channels.
constexpr size_t kMaxU8Channels = 64;
void normalize_u8(const TensorView& src, const TensorView& dst, const float* mean, const float* std,
                  size_t channels);

// Blocks the host until all queued work on the device has finished (no-op on cpu).
void synchronize(Device d);

}  // namespace strata::dev
