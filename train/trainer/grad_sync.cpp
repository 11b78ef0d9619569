#include "train/trainer/grad_sync.h"

namespace strata {

void AllreduceAfterBackward::finish() {
  if (comm_.size() == 1) return;
  for (auto& [name, p] : params_) {
    Tensor g = p.grad();
    if (!g.defined()) {  // every rank must join every collective: a missing grad is zero
      g = Tensor::zeros(p.shape(), p.dtype(), p.device());
      p.set_grad(g);
    }
    const size_t n = static_cast<size_t>(g.numel());
    if (g.device() == Device::cpu || comm_.backend() == "nccl") {  // the memory the communicator takes
      comm_.allreduce(g.device_data(), n, g.dtype(), ReduceOp::avg);
    } else {  // a host communicator and device gradients: through a host copy
      Tensor h = g.to(Device::cpu);
      comm_.allreduce(h.raw_data(), n, h.dtype(), ReduceOp::avg);
      g.copy_(h);
    }
  }
}

}  // namespace strata
