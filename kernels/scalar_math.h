// Scalar math written once for the CPU kernels and the CUDA kernels: elementwise
// formulas, their derivatives, the optimizer updates and the counter-based RNG.
// The reference kernels (kernels/reference) deliberately do NOT use this header:
// they restate each formula in double precision so that a mistake here is caught.
#pragma once
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define STRATA_HD __host__ __device__
#else
#define STRATA_HD
#endif

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

// GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
template <typename T>
STRATA_HD inline T gelu(T x) {
  const T k = T(0.7978845608028654), c = T(0.044715);
  return T(0.5) * x * (T(1) + std::tanh(k * (x + c * x * x * x)));
}
template <typename T>
STRATA_HD inline T gelu_grad(T x) {
  const T k = T(0.7978845608028654), c = T(0.044715);
  T u = k * (x + c * x * x * x);
  T t = std::tanh(u);
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
  w *= decay;
  // m.lerp_(g, 1 - beta1) (two-sided, as torch's lerp), v.mul_(beta2).addcmul_(g, g, 1 - beta2);
  // explicit fmas as in torch's vectorised CPU kernels (see sgd_update)
  m = one_minus_beta1 < 0.5f ? std::fma(one_minus_beta1, g - m, m)
                             : std::fma(m - g, 1.0f - one_minus_beta1, g);
  v = std::fma(one_minus_beta2 * g, g, v * beta2);
  float denom = std::sqrt(v) / bc2_sqrt + eps;
  w += -step_size * m / denom;
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
