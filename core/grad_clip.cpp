#include "core/grad_clip.h"

#include <cmath>

#include "base/error.h"

namespace strata {
namespace {
// The gradient of `p` as a contiguous FP32 tensor that is p's gradient (converted in place if needed).
Tensor f32_grad(const Tensor& p) {
  Tensor g = p.grad();
  if (!g.defined()) return g;
  if (g.dtype() != DType::f32 || !g.is_contiguous()) {
    g = g.to(DType::f32).contiguous();
    Tensor handle = p;
    handle.set_grad(g);
  }
  return g;
}
}  // namespace

double grad_norm(const std::vector<Tensor>& params) {
  double sum = 0.0;
  for (const Tensor& p : params) {
    Tensor g = f32_grad(p);
    if (!g.defined()) continue;
    const float* d = g.data<float>();
    for (int64_t i = 0, n = g.numel(); i < n; ++i)
      sum += static_cast<double>(d[i]) * static_cast<double>(d[i]);
  }
  return std::sqrt(sum);
}

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  if (!(max_norm > 0.0))
    throw ConfigError("clip_grad_norm: max_norm must be > 0, got " + std::to_string(max_norm));
  double norm = grad_norm(params);
  if (!std::isfinite(norm)) return norm;
  double coef = max_norm / (norm + 1e-6);
  if (coef >= 1.0) return norm;
  const float c = static_cast<float>(coef);
  for (const Tensor& p : params) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    float* d = g.data<float>();
    for (int64_t i = 0, n = g.numel(); i < n; ++i) d[i] *= c;
  }
  return norm;
}

double clip_grad_norm(const NamedTensors& params, double max_norm) {
  std::vector<Tensor> ts;
  ts.reserve(params.size());
  for (auto& [n, t] : params) ts.push_back(t);
  return clip_grad_norm(ts, max_norm);
}

}  // namespace strata
