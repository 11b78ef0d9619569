#include "core/modules/sequential.h"

#include <string>
#include <typeinfo>

#include "core/modules/activation.h"
#include "core/modules/norm.h"

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
  for (size_t i = 0; i < layers_.size(); ++i) {
    // exact types: a subclass may have its own forward, which fusing would skip
    const Module& m = *layers_[i];
    if (typeid(m) == typeid(BatchNorm2d) && i + 1 < layers_.size() &&
        typeid(*layers_[i + 1]) == typeid(ReLU)) {
      h = static_cast<BatchNorm2d*>(layers_[i].get())->forward_relu(h);
      ++i;
      continue;
    }
    h = layers_[i]->forward(h);
  }
  return h;
}

}  // namespace strata
