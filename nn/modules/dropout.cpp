#include "nn/modules/dropout.h"

#include "base/error.h"
#include "core/ops.h"

namespace strata {

Dropout::Dropout(double p, Generator* gen) : p_(p), gen_((gen ? *gen : default_generator()).next_u64()) {
  if (!(p >= 0.0 && p < 1.0)) throw Error("Dropout(" + std::to_string(p) + "): p must be in [0, 1)");
}

Tensor Dropout::forward(const Tensor& x) {
  if (!is_training() || p_ == 0.0) return x;
  return dropout(x, p_, true, gen_.next_u64());
}

}  // namespace strata
