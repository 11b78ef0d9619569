#include "nn/modules/conv.h"

#include <cmath>

#include "base/error.h"
#include "core/init.h"
#include "core/ops.h"
#include "core/precision.h"

namespace strata {

Conv2d::Conv2d(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding, bool bias,
               Generator* gen)
    : in_(in), out_(out), kernel_(kernel), stride_(stride), padding_(padding) {
  if (in <= 0 || out <= 0 || kernel <= 0 || stride <= 0 || padding < 0)
    throw ShapeError("Conv2d(in " + std::to_string(in) + ", out " + std::to_string(out) + ", kernel " +
                     std::to_string(kernel) + ", stride " + std::to_string(stride) + ", padding " +
                     std::to_string(padding) + "): invalid arguments");
  Generator& g = gen ? *gen : default_generator();
  Tensor w = Tensor::empty({out, in, kernel, kernel});
  init::kaiming_uniform_(w, g, std::sqrt(5.0));
  weight_ = register_parameter("weight", w);
  if (bias) {
    double bound = 1.0 / std::sqrt(static_cast<double>(in * kernel * kernel));
    Tensor b = Tensor::empty({out});
    init::uniform_(b, g, -bound, bound);
    bias_ = register_parameter("bias", b);
  } else {
    zero_bias_ = register_buffer("zero_bias", Tensor::zeros({out}),
                                 /*persistent=*/false);  // the op takes a bias; this one takes no gradient
  }
}

Tensor Conv2d::forward(const Tensor& x) {
  if (x.dim() != 4 || x.size(1) != in_)
    throw ShapeError("Conv2d(" + std::to_string(in_) + " -> " + std::to_string(out_) + "): input " + x.str() +
                     " must be [N, " + std::to_string(in_) + ", H, W]");
  DType cd = compute_dtype();
  Tensor b = bias_.defined() ? bias_ : zero_bias_;
  return conv2d(cast(x, cd), cast(weight_, cd), cast(b, cd), stride_, padding_);
}

}  // namespace strata
