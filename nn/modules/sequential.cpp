#include "nn/modules/sequential.h"

#include <string>
#include <typeinfo>

#include "nn/modules/activation.h"
#include "nn/modules/norm.h"

namespace strata {

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules) {
  for (auto& m : modules) add(m);
}

Sequential& Sequential::add(std::shared_ptr<Module> m) {
  layers_.push_back(register_module(std::to_string(layers_.size()), std::move(m)));
  return *this;
}

namespace {

// exact types: a subclass may have its own forward, which fusing would skip
bool is_exactly(const std::shared_ptr<Module>& m, const std::type_info& t) { return typeid(*m) == t; }

}  // namespace

Tensor Sequential::forward(const Tensor& x) {
  Tensor h = x;
  for (size_t i = 0; i < layers_.size(); ++i) {
    size_t left = layers_.size() - i;
    if (left >= 2 && is_exactly(layers_[i], typeid(BatchNorm2d)) &&
        is_exactly(layers_[i + 1], typeid(ReLU))) {
      auto* bn = static_cast<BatchNorm2d*>(layers_[i].get());
      // the pool too when it is 2x2 at stride 2 over [N, C, H, W] (else its own errors)
      if (left >= 3 && is_exactly(layers_[i + 2], typeid(MaxPool2d)) &&
          static_cast<const MaxPool2d&>(*layers_[i + 2]).is_2x2_stride_2() && h.dim() == 4 &&
          h.size(2) >= 2 && h.size(3) >= 2) {
        h = bn->forward_relu_max_pool_2x2(h);
        i += 2;
        continue;
      }
      h = bn->forward_relu(h);
      ++i;
      continue;
    }
    h = layers_[i]->forward(h);
  }
  return h;
}

}  // namespace strata
