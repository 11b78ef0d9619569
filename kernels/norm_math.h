// Per-channel (batch_norm) and per-row (layer_norm) math written once for the CPU
// and the CUDA kernels; they differ only in how they walk memory and reduce.
// Both backends normalise with the biased variance and update the running
// variance with the unbiased one (PyTorch's semantics), from the centred sum of
// squares m2: CUDA takes it in a second pass around the mean, the CPU in one
// pass around a value of the channel (memory-bound there), so their m2 agree to
// rounding, not bit for bit. The reference
// kernels restate these formulas in double on purpose (see scalar_math.h).
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>

#include "kernels/scalar_math.h"

namespace strata::norm {

// 1 / sqrt(var + eps) from the centred sum of squares `m2` of `count` values
// (the biased variance m2 / count normalises, as in training mode).
STRATA_HD inline float invstd_from_m2(double m2, double count, double eps) {
  return static_cast<float>(1.0 / std::sqrt(m2 / count + eps));
}

// Running statistics after one training batch: new = (1 - momentum) old + momentum
// batch, with the unbiased variance m2 / (count - 1) (count > 1: the shape rule).
STRATA_HD inline float running_mean_update(double old, double mean, double momentum) {
  return static_cast<float>((1 - momentum) * old + momentum * mean);
}
STRATA_HD inline float running_var_update(double old, double m2, double count, double momentum) {
  return static_cast<float>((1 - momentum) * old + momentum * m2 / (count - 1));
}

// batch_norm's dx for one element, with xhat = (x - mean) invstd, gs = gamma invstd,
// mean_g / mean_gx the channel means of g and g xhat:
//   training: gs (g - mean_g - xhat mean_gx)   (the batch statistics depend on x)
//   eval:     gs g
STRATA_HD inline float batch_norm_dx(float g, float xhat, float gs, float mean_g, float mean_gx,
                                     bool training) {
  return training ? gs * (g - mean_g - xhat * mean_gx) : gs * g;
}

// batch_norm's output before any ReLU: x scale + shift, with scale = gamma invstd
// and shift = beta - mean scale (batch_norm_scale_shift). With a fused ReLU the
// backward pass recomputes it from x (the same expression, so the same value and
// the same mask) instead of reading y: the gradient of relu(bn(x)) is bn's with
// g zeroed where it is <= 0.
struct ScaleShift {
  float scale, shift;
};
STRATA_HD inline ScaleShift batch_norm_scale_shift(float gamma, float beta, float mean, float invstd) {
  float scale = gamma * invstd;
  return {scale, beta - mean * scale};
}
STRATA_HD inline float batch_norm_affine(float x, ScaleShift s) { return x * s.scale + s.shift; }
STRATA_HD inline float batch_norm_out(float pre, bool relu) { return relu ? math::relu(pre) : pre; }
STRATA_HD inline float batch_norm_grad_through_relu(float g, float pre, bool relu) {
#if defined(__CUDA_ARCH__)
  return relu && !(pre > 0.0f) ? 0.0f : g;  // a predicated select
#else
  // g's bits under a mask, not a select: GCC (trapping math) compiles the select
  // to a branch per element, mispredicted about half the time on activations
  // (the CNN's fused backward ran 5x slower than without the ReLU)
  uint32_t keep = 0u - static_cast<uint32_t>(!relu || pre > 0.0f);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(g) & keep);
#endif
}

// layer_norm's dx for one element of a row: rstd (dxhat - m1 - xhat m2) with
// dxhat = g gamma and m1 / m2 the row means of dxhat and dxhat xhat.
STRATA_HD inline float layer_norm_dx(float dxhat, float xhat, float rstd, float m1, float m2) {
  return rstd * (dxhat - m1 - xhat * m2);
}

}  // namespace strata::norm
