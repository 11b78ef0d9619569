#include "core/module.h"

#include "base/error.h"

namespace strata {

void Module::check_name(const std::string& name) const {
  if (name.empty() || name.find('.') != std::string::npos)
    throw Error(type_name() + ": invalid member name '" + name + "' (non-empty, no '.')");
  auto taken = [&](const auto& list) {
    for (const auto& [n, _] : list)
      if (n == name) return true;
    return false;
  };
  if (taken(params_) || taken(buffers_) || taken(transient_buffers_) || taken(children_))
    throw Error(type_name() + ": member name '" + name + "' is already registered");
}

Tensor Module::register_parameter(const std::string& name, Tensor t) {
  check_name(name);
  if (!t.defined()) throw Error(type_name() + ": parameter '" + name + "' is undefined");
  if (t.dtype() != DType::f32)
    throw Error(type_name() + ": parameter '" + name + "' must be an FP32 master copy, got " + t.str());
  if (t.grad_fn()) t = t.detach();
  t = t.contiguous();
  t.set_requires_grad(true);
  params_.emplace_back(name, t);
  return t;
}

Tensor Module::register_buffer(const std::string& name, Tensor t, bool persistent) {
  check_name(name);
  if (!t.defined()) throw Error(type_name() + ": buffer '" + name + "' is undefined");
  (persistent ? buffers_ : transient_buffers_).emplace_back(name, t);
  return t;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> m) {
  check_name(name);
  if (!m) throw Error(type_name() + ": child module '" + name + "' is null");
  m->train(training_);
  children_.emplace_back(name, std::move(m));
}

void Module::collect(const std::string& prefix, bool params, NamedTensors& out) const {
  for (const auto& [n, t] : params ? params_ : buffers_) out.emplace_back(prefix + n, t);
  for (const auto& [n, c] : children_) c->collect(prefix + n + ".", params, out);
}

NamedTensors Module::named_parameters() const {
  NamedTensors out;
  collect("", true, out);
  return out;
}

NamedTensors Module::named_buffers() const {
  NamedTensors out;
  collect("", false, out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [_, t] : named_parameters()) out.push_back(t);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (auto& [_, t] : named_parameters()) n += t.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [_, c] : children_) c->train(on);
}

void Module::to(Device device) {
  for (auto* list : {&params_, &buffers_, &transient_buffers_})
    for (auto& [_, t] : *list) t.to_(device);
  for (auto& [_, c] : children_) c->to(device);
}

Device Module::device() const {
  for (const NamedTensors& list : {named_parameters(), named_buffers()})
    if (!list.empty()) return list.front().second.device();
  return Device::cpu;
}

void Module::zero_grad() {
  for (auto& [_, t] : named_parameters()) t.zero_grad();
}

}  // namespace strata
