#include "nn/optim/optimizer.h"

#include <cmath>
#include <set>

#include "base/error.h"
#include "core/autograd.h"

namespace strata {

Optimizer::Optimizer(NamedTensors params, double lr) : params_(std::move(params)), lr_(lr) {
  std::set<std::string> names;
  for (auto& [n, p] : params_) {
    if (!p.defined()) throw Error("optimizer: parameter '" + n + "' is undefined");
    if (p.dtype() != DType::f32 || !p.is_contiguous())
      throw Error("optimizer: parameter '" + n + "' must be a contiguous FP32 tensor, got " + p.str());
    if (!names.insert(n).second) throw Error("optimizer: parameter name '" + n + "' appears twice");
  }
  set_lr(lr);
}

void Optimizer::set_lr(double lr) {
  if (!(lr >= 0.0)) throw Error("optimizer: learning rate must be >= 0, got " + std::to_string(lr));
  lr_ = lr;
}

void Optimizer::step(float grad_scale) {
  if (!(grad_scale > 0.0f) || !std::isfinite(grad_scale))
    throw Error("optimizer: grad_scale must be finite and > 0, got " + std::to_string(grad_scale));
  NoGradGuard no_grad;
  ++step_;
  grad_scale_ = grad_scale;
  std::vector<Entry> entries;
  entries.reserve(params_.size());
  for (auto& [n, p] : params_) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (g.numel() != p.numel())
      throw ShapeError("optimizer: gradient " + g.str() + " does not match parameter '" + n + "' " + p.str());
    if (g.dtype() != DType::f32 && g.dtype() != DType::f16 && g.dtype() != DType::bf16) g = g.to(DType::f32);
    entries.push_back({&n, p, g.contiguous()});
  }
  if (!entries.empty()) update(entries);
}

void Optimizer::zero_grad() {
  for (auto& [n, p] : params_) p.zero_grad();
}

Tensor& Optimizer::slot(const std::string& name, const std::string& s, const Tensor& param, bool* created) {
  auto key = name + "." + s;
  auto it = state_.find(key);
  if (created) *created = it == state_.end();
  if (it == state_.end())
    it = state_.emplace(key, Tensor::zeros(param.shape(), DType::f32, param.device())).first;
  else if (it->second.device() != param.device())  // the model moved after the state was made
    it->second.to_(param.device());
  return it->second;
}

OptimizerState Optimizer::state() const {
  OptimizerState s;
  s.step = step_;
  for (auto& [k, t] : state_) {
    Tensor host = t.to(Device::cpu);  // a copy already unless t is on the host
    s.tensors.emplace(k, host.same(t) ? t.clone() : host);
  }
  export_state(s.tensors);
  return s;
}

void Optimizer::load_state(const OptimizerState& s) {
  std::map<std::string, const Tensor*> by_name;
  for (auto& [n, p] : params_) by_name[n] = &p;
  std::map<std::string, Tensor> loaded;
  for (auto& [k, t] : s.tensors) {
    auto dot = k.rfind('.');
    auto p = dot == std::string::npos ? by_name.end() : by_name.find(k.substr(0, dot));
    if (p == by_name.end()) throw Error(type_name() + " load_state: '" + k + "' names no parameter");
    if (t.numel() != p->second->numel() && t.numel() != 1)
      throw ShapeError(type_name() + " load_state: '" + k + "' " + t.str() + " does not fit " +
                       p->second->str());
    // per-parameter scalars (step counts) stay on the host; slots go beside their parameter
    const bool scalar = t.numel() == 1 && p->second->numel() != 1;
    Tensor c = Tensor::empty(scalar ? Shape{} : p->second->shape(), DType::f32,
                             scalar ? Device::cpu : p->second->device());
    c.copy_(t);
    loaded.emplace(k, c);
  }
  state_ = std::move(loaded);
  step_ = s.step;
  state_loaded();
}

}  // namespace strata
