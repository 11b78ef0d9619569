// Normalisation layers. Their parameters and statistics stay FP32 under mixed
// precision; ops.h casts gamma/beta to the activation dtype where they differ.
#pragma once
#include "core/module.h"

namespace strata {

// BatchNorm over channel 1 of [N, C, H, W] (BatchNorm2d) or [N, C] (BatchNorm1d).
// Training normalises with the batch statistics and updates the running ones
// (new = (1 - momentum) old + momentum batch, unbiased variance); eval uses the running ones.
class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(int64_t channels, double momentum = 0.1, double eps = 1e-5);
  Tensor forward(const Tensor& x) override;
  // relu(forward(x)) as one op: what Sequential runs for a BatchNorm2d followed
  // by a ReLU, and what a model writing the pair by hand should call
  Tensor forward_relu(const Tensor& x);
  // max_pool2d(relu(forward(x)), 2) as one op, for [N, C, H, W]: what Sequential
  // runs for a BatchNorm2d, a ReLU and a MaxPool2d(2)
  Tensor forward_relu_max_pool_2x2(const Tensor& x);
  std::string type_name() const override { return "BatchNorm2d"; }

  const Tensor& running_mean() const { return running_mean_; }
  const Tensor& running_var() const { return running_var_; }

 private:
  Tensor normalise(const Tensor& x, bool relu, bool max_pool_2x2);

  int64_t channels_;
  double momentum_, eps_;
  Tensor weight_, bias_, running_mean_, running_var_;
};

// LayerNorm over the last dimension D, with a learned scale and shift.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t d, double eps = 1e-5);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "LayerNorm"; }

 private:
  int64_t d_;
  double eps_;
  Tensor weight_, bias_;
};

}  // namespace strata
