// Linear: y = x W^T + b, W [out, in]. Under an AutocastGuard the input and the FP32
// master weights are cast to the compute dtype (differentiably, so gradients reach
// the masters in FP32).
#pragma once
#include "core/module.h"
#include "core/random.h"

namespace strata {

class Linear : public Module {
 public:
  // Weight and bias ~ U(+-1/sqrt(in)) as PyTorch's default, drawn from `gen`
  // (default_generator() when null).
  Linear(int64_t in, int64_t out, bool bias = true, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;  // (.., in) -> (.., out)
  std::string type_name() const override { return "Linear"; }

  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }  // undefined without bias
  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }

 private:
  int64_t in_, out_;
  Tensor weight_, bias_, zero_bias_;
};

}  // namespace strata
