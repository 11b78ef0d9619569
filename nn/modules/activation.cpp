#include "nn/modules/activation.h"

#include "core/ops.h"

namespace strata {

Tensor ReLU::forward(const Tensor& x) { return relu(x); }
Tensor GELU::forward(const Tensor& x) { return gelu(x); }
Tensor Flatten::forward(const Tensor& x) { return flatten(x, start_dim_); }
Tensor MaxPool2d::forward(const Tensor& x) { return max_pool2d(x, kernel_, stride_, padding_); }
Tensor GlobalAvgPool2d::forward(const Tensor& x) { return global_avg_pool2d(x); }

}  // namespace strata
