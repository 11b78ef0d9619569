// ResNet for small images (He et al. 2016, the CIFAR-style layout): a 3x3 stem
// conv-BN-ReLU, stages of basic residual blocks (the first at stride 1, each later
// one halving the resolution in its first block), global average pooling and a
// Linear head. Registered as "resnet" (models/resnet.cpp); docs/models.md.
// Parameter names follow torchvision's: conv1, bn1, layer<i>.<j>.{conv1, bn1,
// conv2, bn2, downsample.0, downsample.1}, fc.
#pragma once
#include <memory>

#include "core/module.h"
#include "core/random.h"
#include "nn/modules/conv.h"
#include "nn/modules/norm.h"
#include "nn/modules/sequential.h"

namespace strata::models {

// out = relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), conv1 at `stride`.
// The shortcut is the identity when the shape is kept, else a projection:
// downsample = 1x1 conv at `stride` + BN. Convs have no bias (BN follows each).
class BasicBlock : public Module {
 public:
  // zero_init_residual: bn2's scale starts at 0, so the block starts as the
  // identity on its (non-negative) input; see resnet.cpp for why.
  BasicBlock(int64_t in, int64_t out, int64_t stride, Generator* gen, bool zero_init_residual = false);
  Tensor forward(const Tensor& x) override;  // (N, in, H, W) -> (N, out, ceil(H/s), ceil(W/s))
  std::string type_name() const override { return "BasicBlock"; }
  bool has_projection() const { return downsample_ != nullptr; }

 private:
  int64_t in_, out_;
  std::shared_ptr<Conv2d> conv1_, conv2_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_;
  std::shared_ptr<Sequential> downsample_;  // null: identity shortcut
};

}  // namespace strata::models
