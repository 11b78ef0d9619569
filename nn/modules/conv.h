// Conv2d over NCHW input, square kernel, symmetric stride and padding. Under an
// AutocastGuard the input and FP32 master weights are cast to the compute dtype.
#pragma once
#include "core/module.h"
#include "core/random.h"

namespace strata {

class Conv2d : public Module {
 public:
  // Weight [out, in, k, k] and bias ~ U(+-1/sqrt(in*k*k)) as PyTorch's default.
  Conv2d(int64_t in, int64_t out, int64_t kernel, int64_t stride = 1, int64_t padding = 0, bool bias = true,
         Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;  // (N, in, H, W) -> (N, out, H', W')
  std::string type_name() const override { return "Conv2d"; }

  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }

 private:
  int64_t in_, out_, kernel_, stride_, padding_;
  Tensor weight_, bias_, zero_bias_;
};

}  // namespace strata
