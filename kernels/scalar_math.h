// Scalar math written once for the CPU kernels and the CUDA kernels: elementwise
// formulas, their derivatives, the optimizer updates and the counter-based RNG.
// The reference kernels (kernels/reference) deliberately do NOT use this header:
// they restate each formula in double precision so that a mistake here is caught.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/runtime/host_device.h"

namespace strata::math {

template <typename T>
STRATA_HD inline T relu(T x) {
  return x > T(0) ? x : T(0);
}
template <typename T>
STRATA_HD inline T relu_grad(T x) {
  return x > T(0) ? T(1) : T(0);
}

template <typename T>
STRATA_HD inline T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

// e^y for y in [-87, 88]: y = n ln2 + r with |r| <= ln2/2, e^r by its Taylor
// polynomial of degree 6 (truncation below 1.3e-7 relative), 2^n written into
// the exponent bits. Plain arithmetic with no call and no branch, so a loop
// over it vectorises; glibc's expf, expm1f and tanhf are scalar calls, and in
// GELU they were 27% of the tiny GPT's CPU step (measured with
// bench/train_vs_torch.sh, see docs/benchmarks.md).
STRATA_HD inline float exp_poly(float y) {
  const float log2e = 1.44269504088896341f, ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
  const float round_magic = 12582912.0f;  // 1.5 * 2^23: adding and subtracting it rounds to an integer
  float n = y * log2e + round_magic;
  n = n - round_magic;
  float r = y - n * ln2_hi;
  r = r - n * ln2_lo;  // ln2 in two parts, so that r keeps its low bits
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) * (1 << 23);
#if defined(__CUDA_ARCH__)
  return p * __int_as_float(bits);
#else
  float scale;
  __builtin_memcpy(&scale, &bits, sizeof scale);
  return p * scale;
#endif
}

// min(a, cap) for a >= 0 (or NaN, which gives cap), compared as integers:
// non-negative floats order as their bit patterns do. A float compare-and-select
// is left a branch by GCC under the default -ftrapping-math, which stops the
// loop around it from vectorising.
STRATA_HD inline float cap_nonnegative(float a, float cap) {
#if defined(__CUDA_ARCH__)
  return fminf(a, cap);
#else
  int32_t ai, ci;
  __builtin_memcpy(&ai, &a, sizeof ai);
  __builtin_memcpy(&ci, &cap, sizeof ci);
  ai = ai < ci ? ai : ci;
  __builtin_memcpy(&a, &ai, sizeof a);
  return a;
#endif
}

// tanh(u) = sign(u) (1 - 2 / (e^{2|u|} + 1)), from exp_poly, with |u| capped at
// 10 (where tanh rounds to exactly 1 in float). Its error is absolute, about
// 1e-7: near 0 the subtraction loses the relative precision that std::tanh
// keeps, so it serves GELU, where tanh is added to 1, and not the tanh op itself.
STRATA_HD inline float tanh_poly(float u) {
  const float a = cap_nonnegative(std::fabs(u), 10.0f);
  const float t = 1.0f - 2.0f / (exp_poly(2.0f * a) + 1.0f);
  return std::copysign(t, u);  // not `u < 0 ? -t : t`: GCC leaves that a branch
}
STRATA_HD inline double tanh_poly(double u) { return std::tanh(u); }

// GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
template <typename T>
STRATA_HD inline T gelu(T x) {
  const T k = T(0.7978845608028654), c = T(0.044715);
  return T(0.5) * x * (T(1) + tanh_poly(k * (x + c * x * x * x)));
}
template <typename T>
STRATA_HD inline T gelu_grad(T x) {
  const T k = T(0.7978845608028654), c = T(0.044715);
  T u = k * (x + c * x * x * x);
  T t = tanh_poly(u);
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * k * (T(1) + T(3) * c * x * x);
}

// Softmax statistics of a row seen one element (or one partial row) at a time:
// the running maximum m and s = sum exp(x - m), rescaled whenever m grows (the
// "online softmax" of Milakov and Gimelshein, 2018). One read of the row then
// gives its log-sum-exp, and partial results of threads merge in any grouping,
// which is what a warp or block reduction needs. -inf elements (masked logits)
// contribute nothing; a NaN element makes the result NaN.
template <typename T>
struct OnlineLse {
  T m = -INFINITY;
  T s = 0;

  STRATA_HD void add(T x) {
    if (x > m) {
      s = s * std::exp(m - x) + T(1);  // exp(-inf) = 0 for the first finite element
      m = x;
    } else if (x != -INFINITY) {
      s += std::exp(x - m);
    }
  }
  STRATA_HD void merge(T om, T os) {
    T nm = m > om ? m : om;
    if (nm == -INFINITY) {  // both empty or all -inf (exp(-inf - -inf) would be NaN); s is 0 or NaN
      s += os;
      return;
    }
    s = s * std::exp(m - nm) + os * std::exp(om - nm);
    m = nm;
  }
  STRATA_HD T lse() const { return m + std::log(s); }
};

// Cross-entropy of one row with label smoothing eps over C classes, from the
// row's log-sum-exp: -sum_c t_c (x_c - lse) with t = (1 - eps) onehot(label) + eps/C,
// which is (1 - eps)(lse - x_label) + eps (lse - mean_c x_c).
template <typename T>
STRATA_HD inline T cross_entropy_row_loss(T lse, T x_label, T mean_x, T eps) {
  return (T(1) - eps) * (lse - x_label) + eps * (lse - mean_x);
}

// d(scale * row loss)/d x_c = scale * (softmax_c - t_c), the softmax recomputed from
// the saved log-sum-exp (no [N, C] probabilities kept); smooth = eps/C, hit = 1 - eps.
template <typename T>
STRATA_HD inline T cross_entropy_grad(T x, T lse, bool is_label, T smooth, T hit, T scale) {
  return scale * (std::exp(x - lse) - smooth - (is_label ? hit : T(0)));
}

// Backward from the saved output y (tanh, sigmoid), grad g first: the evaluation
// order is part of the contract, so the CPU and CUDA kernels round alike.
template <typename T>
STRATA_HD inline T tanh_backward(T g, T y) {
  return g * (T(1) - y * y);
}
template <typename T>
STRATA_HD inline T sigmoid_backward(T g, T y) {
  return g * y * (T(1) - y);
}

// Partial derivatives of a / b.
template <typename T>
STRATA_HD inline T div_grad_a(T, T b) {
  return T(1) / b;
}
template <typename T>
STRATA_HD inline T div_grad_b(T a, T b) {
  return -a / (b * b);
}

// splitmix64: a counter-based generator, so a dropout mask is a pure function
// of (seed, element index) on every backend.
STRATA_HD inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
// Uniform in [0, 1) from (seed, index), 24 bits of precision.
STRATA_HD inline float uniform01(uint64_t seed, uint64_t index) {
  return static_cast<float>(splitmix64(seed * 0x100000001b3ull ^ splitmix64(index)) >> 40) *
         (1.0f / 16777216.0f);
}

// AdamW (decoupled weight decay), one element, in torch.optim.AdamW's operation
// order so that trajectories agree with PyTorch to float rounding. The caller
// computes the per-step scalars in double and rounds them once, as PyTorch does:
// decay = 1 - lr*wd, step_size = lr / (1 - beta1^t), bc2_sqrt = sqrt(1 - beta2^t),
// one_minus_beta1 = 1 - beta1, one_minus_beta2 = 1 - beta2.
STRATA_HD inline void adamw_update(float& w, float g, float& m, float& v, float decay, float beta2,
                                   float one_minus_beta1, float one_minus_beta2, float eps, float step_size,
                                   float bc2_sqrt) {
  // m.lerp_(g, 1 - beta1) (two-sided, as torch's lerp), v.mul_(beta2).addcmul_(g, g, 1 - beta2);
  // explicit fmas as in torch's vectorised CPU kernels (see sgd_update)
  m = one_minus_beta1 < 0.5f ? std::fma(one_minus_beta1, g - m, m)
                             : std::fma(m - g, 1.0f - one_minus_beta1, g);
  v = std::fma(one_minus_beta2 * g, g, v * beta2);
  float denom = std::sqrt(v) / bc2_sqrt + eps;
  // w * decay - step_size * m / denom in one rounding, written as the fma it is:
  // as `w *= decay; w += ...`, GCC contracted the pair in its vectorised loop and
  // not in scalar code (and nvcc contracts by default), so the bits of a step
  // depended on how the loop was compiled.
  w = std::fma(w, decay, -step_size * m / denom);
}

// SGD with momentum, PyTorch semantics and rounding: g += wd*w; buf = g on the first
// step, else buf = mu*buf (rounded) + (1-dampening)*g; nesterov: g + mu*buf; w -= lr*g.
// The multiply-adds are explicit fmas, as torch's vectorised CPU kernels compute
// add(x, alpha=a), so that trajectories agree with torch.optim.SGD to the bit
// rather than depending on how a compiler contracts each expression.
STRATA_HD inline void sgd_update(float& w, float g, float& buf, float lr, float momentum, float dampening,
                                 float weight_decay, bool nesterov, bool first_step) {
  if (weight_decay != 0.0f) g = std::fma(weight_decay, w, g);
  if (momentum != 0.0f) {
    buf = first_step ? g : std::fma(1.0f - dampening, g, momentum * buf);
    g = nesterov ? std::fma(momentum, buf, g) : buf;
  }
  w = std::fma(-lr, g, w);
}

// Loss-scale unscale and finite check: returns false when g is inf or NaN.
STRATA_HD inline bool unscale(float& g, float inv_scale) {
  g *= inv_scale;
  return std::isfinite(g);
}

}  // namespace strata::math
