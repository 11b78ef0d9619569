#include "nn/optim/sgd.h"

#include "base/error.h"
#include "kernels/device_ops.h"

namespace strata {

SGD::SGD(NamedTensors params, const SGDOptions& opt) : Optimizer(std::move(params), opt.lr), opt_(opt) {
  if (opt.momentum < 0.0) throw Error("SGD: momentum must be >= 0, got " + std::to_string(opt.momentum));
  if (opt.weight_decay < 0.0)
    throw Error("SGD: weight_decay must be >= 0, got " + std::to_string(opt.weight_decay));
  if (opt.nesterov && (opt.momentum <= 0.0 || opt.dampening != 0.0))
    throw Error("SGD: Nesterov momentum needs momentum > 0 and zero dampening");
}

void SGD::update(const std::vector<Entry>& entries) {
  dev::SgdStep s;
  s.lr = static_cast<float>(lr());
  s.momentum = static_cast<float>(opt_.momentum);
  s.dampening = static_cast<float>(opt_.dampening);
  s.weight_decay = static_cast<float>(opt_.weight_decay);
  s.nesterov = opt_.nesterov;
  // Two groups at most: parameters whose momentum buffer starts as the gradient
  // this step (their first), and the rest.
  std::vector<TensorView> w[2], g[2], buf[2];
  for (const Entry& e : entries) {
    bool first = false;
    TensorView b;
    if (s.momentum != 0.0f) b = slot(*e.name, "momentum_buffer", e.param, &first).view();
    const int k = first ? 1 : 0;
    w[k].push_back(e.param.view());
    g[k].push_back(e.grad.view());
    buf[k].push_back(b);
  }
  for (int k = 0; k < 2; ++k) {
    if (w[k].empty()) continue;
    s.first_step = k == 1;
    dev::sgd_step(w[k].data(), g[k].data(), s.momentum != 0.0f ? buf[k].data() : nullptr, w[k].size(), s,
                  grad_scale());
  }
}

}  // namespace strata
