#include "nn/modules/linear.h"

#include <cmath>

#include "base/error.h"
#include "core/init.h"
#include "core/ops.h"
#include "core/precision.h"

namespace strata {

Linear::Linear(int64_t in, int64_t out, bool bias, Generator* gen) : in_(in), out_(out) {
  if (in <= 0 || out <= 0)
    throw ShapeError("Linear(" + std::to_string(in) + ", " + std::to_string(out) +
                     "): sizes must be positive");
  Generator& g = gen ? *gen : default_generator();
  Tensor w = Tensor::empty({out, in});
  init::kaiming_uniform_(w, g, std::sqrt(5.0));
  weight_ = register_parameter("weight", w);
  if (bias) {
    double bound = 1.0 / std::sqrt(static_cast<double>(in));
    Tensor b = Tensor::empty({out});
    init::uniform_(b, g, -bound, bound);
    bias_ = register_parameter("bias", b);
  } else {
    zero_bias_ = register_buffer("zero_bias", Tensor::zeros({out}),
                                 /*persistent=*/false);  // the op takes a bias; this one takes no gradient
  }
}

Tensor Linear::forward(const Tensor& x) {
  if (x.dim() < 1 || x.size(-1) != in_)
    throw ShapeError("Linear(" + std::to_string(in_) + ", " + std::to_string(out_) + "): input " + x.str() +
                     " must end in " + std::to_string(in_));
  DType cd = compute_dtype();
  Tensor b = bias_.defined() ? bias_ : zero_bias_;
  return linear(cast(x, cd), cast(weight_, cd), cast(b, cd));
}

}  // namespace strata
