// CPU multi-tensor optimizer steps (kernels/device_ops.h sgd_step, adamw_step):
// one pass over each parameter reading w, g and the state once and writing w and
// the state once, every element through math::sgd_update / math::adamw_update
// (kernels/scalar_math.h), the functions the CUDA kernels call too. Gradients may
// be f32, f16 or bf16 and are multiplied by grad_scale as they are read; with f32
// gradients and a scale of 1 the read is the value itself, so trajectories stay
// bit-exact against torch.optim.
#include "kernels/cpu/device_elements.h"
#include "kernels/device_ops_backends.h"
#include "kernels/runtime/parallel.h"
#include "kernels/scalar_math.h"

namespace strata::cpu_dev {
using namespace detail;

namespace {

void check_param(const char* op, size_t t, const TensorView& w, const TensorView& g) {
  require(w.defined() && w.dtype == DType::f32, op,
          "parameter " + std::to_string(t) + " must be an f32 master, got " +
              (w.defined() ? describe(w) : std::string("undefined")));
  require(g.defined() && is_float_like(g.dtype) && g.numel() == w.numel(), op,
          "gradient " + std::to_string(t) + " " + (g.defined() ? describe(g) : std::string("undefined")) +
              " does not fit parameter " + describe(w));
}

void check_state(const char* op, size_t t, const char* slot, const TensorView& s, const TensorView& w) {
  require(s.defined() && s.dtype == DType::f32 && s.numel() == w.numel(), op,
          std::string(slot) + " of parameter " + std::to_string(t) + " " +
              (s.defined() ? describe(s) : std::string("undefined")) + " does not fit " + describe(w));
}

// Calls fn(i, g_i) over [s, e) with the gradient read as a scaled float.
template <typename Fn>
void for_each_grad(const TensorView& g, float grad_scale, int64_t s, int64_t e, Fn&& fn) {
  if (g.dtype == DType::f32 && grad_scale == 1.0f) {
    const float* p = g.as<float>();
    for (int64_t i = s; i < e; ++i) fn(i, p[i]);
  } else if (g.dtype == DType::f32) {
    const float* p = g.as<float>();
    for (int64_t i = s; i < e; ++i) fn(i, p[i] * grad_scale);
  } else {
    for (int64_t i = s; i < e; ++i) fn(i, load_float(g.data, g.dtype, i) * grad_scale);
  }
}

// AdamW over f32 gradients on pointers declared unaliased, so that GCC
// vectorises it: through for_each_grad's closure the loop stayed scalar (18% of
// the MLP's CPU step, measured with bench/train_vs_torch.sh, see
// docs/benchmarks.md). A vector lane rounds each IEEE operation as scalar code
// does, and g * 1 is g, so the bits are the same.
void adamw_f32(float* __restrict w, const float* __restrict g, float* __restrict m, float* __restrict v,
               int64_t n, float grad_scale, const dev::AdamWStep& step) {
  const dev::AdamWStep s = step;  // a local copy: its fields stay in registers
  for (int64_t i = 0; i < n; ++i)
    math::adamw_update(w[i], g[i] * grad_scale, m[i], v[i], s.decay, s.beta2, s.one_minus_beta1,
                       s.one_minus_beta2, s.eps, s.step_size, s.bc2_sqrt);
}

}  // namespace

void sgd_step(const TensorView* w, const TensorView* g, const TensorView* buf, size_t n,
              const dev::SgdStep& s, float grad_scale) {
  const bool momentum = s.momentum != 0.0f;
  for (size_t t = 0; t < n; ++t) {
    check_param("sgd_step", t, w[t], g[t]);
    if (momentum) {
      require(buf != nullptr, "sgd_step", "momentum needs momentum buffers");
      check_state("sgd_step", t, "momentum buffer", buf[t], w[t]);
    }
    float* pw = w[t].as<float>();
    float* pb = momentum ? buf[t].as<float>() : nullptr;
    parallel_for(w[t].numel(), kGrain, [&](int64_t b, int64_t e) {
      float unused = 0.0f;
      for_each_grad(g[t], grad_scale, b, e, [&](int64_t i, float gi) {
        math::sgd_update(pw[i], gi, pb ? pb[i] : unused, s.lr, s.momentum, s.dampening, s.weight_decay,
                         s.nesterov, s.first_step);
      });
    });
  }
}

void adamw_step(const TensorView* w, const TensorView* g, const TensorView* m, const TensorView* v, size_t n,
                const dev::AdamWStep& s, float grad_scale) {
  for (size_t t = 0; t < n; ++t) {
    check_param("adamw_step", t, w[t], g[t]);
    check_state("adamw_step", t, "exp_avg", m[t], w[t]);
    check_state("adamw_step", t, "exp_avg_sq", v[t], w[t]);
    float* pw = w[t].as<float>();
    float* pm = m[t].as<float>();
    float* pv = v[t].as<float>();
    parallel_for(w[t].numel(), kGrain, [&](int64_t b, int64_t e) {
      if (g[t].dtype == DType::f32)
        return adamw_f32(pw + b, g[t].as<float>() + b, pm + b, pv + b, e - b, grad_scale, s);
      for_each_grad(g[t], grad_scale, b, e, [&](int64_t i, float gi) {
        math::adamw_update(pw[i], gi, pm[i], pv[i], s.decay, s.beta2, s.one_minus_beta1, s.one_minus_beta2,
                           s.eps, s.step_size, s.bc2_sqrt);
      });
    });
  }
}

}  // namespace strata::cpu_dev
