// Parameter-free layers for building MLPs and CNNs with Sequential.
#pragma once
#include "core/module.h"

namespace strata {

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "ReLU"; }
};

class GELU : public Module {  // tanh approximation (kernels/scalar_math.h)
 public:
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "GELU"; }
};

class Flatten : public Module {  // (N, ...) -> (N, prod) from start_dim on
 public:
  explicit Flatten(int64_t start_dim = 1) : start_dim_(start_dim) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Flatten"; }

 private:
  int64_t start_dim_;
};

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(int64_t kernel, int64_t stride = 0, int64_t padding = 0)  // stride 0 = kernel
      : kernel_(kernel), stride_(stride), padding_(padding) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "MaxPool2d"; }
  // 2x2 windows at stride 2, unpadded: the pool batch_norm can fuse
  bool is_2x2_stride_2() const { return kernel_ == 2 && (stride_ == 2 || stride_ == 0) && padding_ == 0; }

 private:
  int64_t kernel_, stride_, padding_;
};

class GlobalAvgPool2d : public Module {  // (N, C, H, W) -> (N, C)
 public:
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "GlobalAvgPool2d"; }
};

}  // namespace strata
