#include "nn/modules/norm.h"

#include "base/error.h"
#include "core/ops.h"

namespace strata {

BatchNorm2d::BatchNorm2d(int64_t channels, double momentum, double eps)
    : channels_(channels), momentum_(momentum), eps_(eps) {
  if (channels <= 0)
    throw ShapeError("BatchNorm2d(" + std::to_string(channels) + "): channels must be positive");
  weight_ = register_parameter("weight", Tensor::ones({channels}));
  bias_ = register_parameter("bias", Tensor::zeros({channels}));
  running_mean_ = register_buffer("running_mean", Tensor::zeros({channels}));
  running_var_ = register_buffer("running_var", Tensor::ones({channels}));
}

Tensor BatchNorm2d::forward(const Tensor& x) { return normalise(x, false, false); }
Tensor BatchNorm2d::forward_relu(const Tensor& x) { return normalise(x, true, false); }
Tensor BatchNorm2d::forward_relu_max_pool_2x2(const Tensor& x) { return normalise(x, true, true); }

Tensor BatchNorm2d::normalise(const Tensor& x, bool relu, bool max_pool_2x2) {
  if ((x.dim() != 2 && x.dim() != 4) || x.size(1) != channels_)
    throw ShapeError("BatchNorm2d(" + std::to_string(channels_) + "): input " + x.str() + " must be [N, " +
                     std::to_string(channels_) + "] or [N, " + std::to_string(channels_) + ", H, W]");
  return batch_norm(x, weight_, bias_, running_mean_, running_var_, is_training(), momentum_, eps_, relu,
                    max_pool_2x2);
}

LayerNorm::LayerNorm(int64_t d, double eps) : d_(d), eps_(eps) {
  if (d <= 0) throw ShapeError("LayerNorm(" + std::to_string(d) + "): size must be positive");
  weight_ = register_parameter("weight", Tensor::ones({d}));
  bias_ = register_parameter("bias", Tensor::zeros({d}));
}

Tensor LayerNorm::forward(const Tensor& x) {
  if (x.dim() < 1 || x.size(-1) != d_)
    throw ShapeError("LayerNorm(" + std::to_string(d_) + "): input " + x.str() + " must end in " +
                     std::to_string(d_));
  return layer_norm(x, weight_, bias_, eps_);
}

}  // namespace strata
