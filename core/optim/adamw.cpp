#include "core/optim/adamw.h"

#include <cmath>

#include "base/error.h"
#include "kernels/parallel.h"
#include "kernels/scalar_math.h"

namespace strata {

AdamW::AdamW(NamedTensors params, const AdamWOptions& opt) : Optimizer(std::move(params), opt.lr), opt_(opt) {
  if (!(opt.beta1 >= 0.0 && opt.beta1 < 1.0) || !(opt.beta2 >= 0.0 && opt.beta2 < 1.0))
    throw Error("AdamW: betas must be in [0, 1), got (" + std::to_string(opt.beta1) + ", " +
                std::to_string(opt.beta2) + ")");
  if (!(opt.eps >= 0.0)) throw Error("AdamW: eps must be >= 0, got " + std::to_string(opt.eps));
  if (!(opt.weight_decay >= 0.0))
    throw Error("AdamW: weight_decay must be >= 0, got " + std::to_string(opt.weight_decay));
}

void AdamW::update(const std::string& name, Tensor& param, const Tensor& grad) {
  // per-parameter step count, kept as an FP32 scalar as PyTorch does
  auto it = state_.find(name + ".step");
  if (it == state_.end()) it = state_.emplace(name + ".step", Tensor::scalar(0.0)).first;
  double t = it->second.item() + 1.0;
  it->second.fill_(t);
  // per-step scalars in double, rounded once (as torch.optim.AdamW's Python floats)
  const double lr = this->lr();
  const float decay = static_cast<float>(1.0 - lr * opt_.weight_decay);
  const float step_size = static_cast<float>(lr / (1.0 - std::pow(opt_.beta1, t)));
  const float bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(opt_.beta2, t)));
  const float b2 = static_cast<float>(opt_.beta2), omb1 = static_cast<float>(1.0 - opt_.beta1),
              omb2 = static_cast<float>(1.0 - opt_.beta2), eps = static_cast<float>(opt_.eps);
  float* w = param.data<float>();
  const float* g = grad.data<float>();
  float* m = slot(name, "exp_avg", param).data<float>();
  float* v = slot(name, "exp_avg_sq", param).data<float>();
  parallel_for(param.numel(), kOptimizerGrain, [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i)
      math::adamw_update(w[i], g[i], m[i], v[i], decay, b2, omb1, omb2, eps, step_size, bc2_sqrt);
  });
}

}  // namespace strata
