#include "core/optim/sgd.h"

#include "base/error.h"
#include "kernels/parallel.h"
#include "kernels/scalar_math.h"

namespace strata {

SGD::SGD(NamedTensors params, const SGDOptions& opt) : Optimizer(std::move(params), opt.lr), opt_(opt) {
  if (opt.momentum < 0.0) throw Error("SGD: momentum must be >= 0, got " + std::to_string(opt.momentum));
  if (opt.weight_decay < 0.0)
    throw Error("SGD: weight_decay must be >= 0, got " + std::to_string(opt.weight_decay));
  if (opt.nesterov && (opt.momentum <= 0.0 || opt.dampening != 0.0))
    throw Error("SGD: Nesterov momentum needs momentum > 0 and zero dampening");
}

void SGD::update(const std::string& name, Tensor& param, const Tensor& grad) {
  const float rate = static_cast<float>(this->lr()), mu = static_cast<float>(opt_.momentum),
              damp = static_cast<float>(opt_.dampening), wd = static_cast<float>(opt_.weight_decay);
  const bool nesterov = opt_.nesterov;
  float* w = param.data<float>();
  const float* g = grad.data<float>();
  bool first = false;
  float* buf = mu != 0.0f ? slot(name, "momentum_buffer", param, &first).data<float>() : nullptr;
  parallel_for(param.numel(), kOptimizerGrain, [&](int64_t s, int64_t e) {
    float unused = 0.0f;
    for (int64_t i = s; i < e; ++i)
      math::sgd_update(w[i], g[i], buf ? buf[i] : unused, rate, mu, damp, wd, nesterov, first);
  });
}

}  // namespace strata
