#include "nn/grad_clip.h"

#include <cmath>

#include "base/error.h"
#include "kernels/device_ops.h"

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

// The FP32 gradients of `params` that exist.
std::vector<Tensor> f32_grads(const std::vector<Tensor>& params) {
  std::vector<Tensor> out;
  out.reserve(params.size());
  for (const Tensor& p : params) {
    Tensor g = f32_grad(p);
    if (g.defined()) out.push_back(g);
  }
  return out;
}

// Sum of squares of every gradient into one scalar on their device, one read.
double norm_of(const std::vector<Tensor>& grads) {
  if (grads.empty()) return 0.0;
  std::vector<TensorView> views;
  views.reserve(grads.size());
  for (const Tensor& g : grads) views.push_back(g.view());
  Tensor sum = Tensor::zeros({}, DType::f32, grads.front().device());
  dev::sum_of_squares(views.data(), views.size(), sum.view());
  return std::sqrt(sum.item());
}
}  // namespace

double grad_norm(const std::vector<Tensor>& params) { return norm_of(f32_grads(params)); }

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  if (!(max_norm > 0.0))
    throw ConfigError("clip_grad_norm: max_norm must be > 0, got " + std::to_string(max_norm));
  std::vector<Tensor> grads = f32_grads(params);
  double norm = norm_of(grads);
  if (!std::isfinite(norm)) return norm;
  double coef = max_norm / (norm + 1e-6);
  if (coef >= 1.0) return norm;
  for (const Tensor& g : grads) dev::scale(g.view(), coef);  // applied as a float, as before
  return norm;
}

namespace {
std::vector<Tensor> tensors_of(const NamedTensors& params) {
  std::vector<Tensor> ts;
  ts.reserve(params.size());
  for (auto& [n, t] : params) ts.push_back(t);
  return ts;
}
}  // namespace

double grad_norm(const NamedTensors& params) { return grad_norm(tensors_of(params)); }

double clip_grad_norm(const NamedTensors& params, double max_norm) {
  return clip_grad_norm(tensors_of(params), max_norm);
}

}  // namespace strata
