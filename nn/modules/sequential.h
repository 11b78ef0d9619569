// Sequential: owns an ordered list of modules named "0", "1", ...; forward feeds
// each one's output to the next. A BatchNorm2d directly followed by a ReLU runs
// as one fused op (BatchNorm2d::forward_relu): the same values and gradients,
// one pass over the activations fewer each way; with a 2x2 stride-2 MaxPool2d
// after them, the three run as one (forward_relu_max_pool_2x2), which writes only
// the pooled output. They stay modules of their own, so parameter names and
// checkpoints do not change.
#pragma once
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

#include "core/module.h"

namespace strata {

class Sequential : public Module {
 public:
  Sequential() = default;
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);

  Sequential& add(std::shared_ptr<Module> m);
  // Builds M(args...) in place: seq.emplace<Linear>(4, 8).emplace<ReLU>()
  template <typename M, typename... Args>
  Sequential& emplace(Args&&... args) {
    return add(std::make_shared<M>(std::forward<Args>(args)...));
  }

  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Sequential"; }
  size_t size() const { return layers_.size(); }
  const std::shared_ptr<Module>& operator[](size_t i) const { return layers_.at(i); }

 private:
  std::vector<std::shared_ptr<Module>> layers_;
};

}  // namespace strata
