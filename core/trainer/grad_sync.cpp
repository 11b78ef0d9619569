#include "core/trainer/grad_sync.h"

namespace strata {

void AllreduceAfterBackward::finish() {
  if (comm_.size() == 1) return;
  for (auto& [name, p] : params_) {
    Tensor g = p.grad();
    if (!g.defined()) {  // every rank must join every collective: a missing grad is zero
      g = Tensor::zeros(p.shape(), p.dtype());
      p.set_grad(g);
    }
    comm_.allreduce(g.raw_data(), static_cast<size_t>(g.numel()), g.dtype(), ReduceOp::avg);
  }
}

}  // namespace strata
