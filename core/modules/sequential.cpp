#include "core/modules/sequential.h"

#include <string>

namespace strata {

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules) {
  for (auto& m : modules) add(m);
}

Sequential& Sequential::add(std::shared_ptr<Module> m) {
  layers_.push_back(register_module(std::to_string(layers_.size()), std::move(m)));
  return *this;
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor h = x;
  for (auto& m : layers_) h = m->forward(h);
  return h;
}

}  // namespace strata
