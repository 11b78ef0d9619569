#include "nn/optim/adamw.h"

#include <cmath>

#include "base/error.h"
#include "kernels/device_ops.h"

namespace strata {

namespace {
NamedTensors flatten(const std::vector<ParamGroup>& groups) {
  NamedTensors all;
  for (auto& g : groups) all.insert(all.end(), g.params.begin(), g.params.end());
  return all;
}
}  // namespace

AdamW::AdamW(std::vector<ParamGroup> groups, const AdamWOptions& opt) : AdamW(flatten(groups), opt) {
  for (auto& g : groups) {
    if (!(g.weight_decay >= 0.0))
      throw Error("AdamW: group weight_decay must be >= 0, got " + std::to_string(g.weight_decay));
    for (auto& [n, t] : g.params)
      if (!decay_.emplace(n, g.weight_decay).second)
        throw Error("AdamW: parameter '" + n + "' is in more than one group");
  }
}

double AdamW::weight_decay_of(const std::string& param) const {
  auto it = decay_.find(param);
  return it == decay_.end() ? opt_.weight_decay : it->second;
}

AdamW::AdamW(NamedTensors params, const AdamWOptions& opt) : Optimizer(std::move(params), opt.lr), opt_(opt) {
  if (!(opt.beta1 >= 0.0 && opt.beta1 < 1.0) || !(opt.beta2 >= 0.0 && opt.beta2 < 1.0))
    throw Error("AdamW: betas must be in [0, 1), got (" + std::to_string(opt.beta1) + ", " +
                std::to_string(opt.beta2) + ")");
  if (!(opt.eps >= 0.0)) throw Error("AdamW: eps must be >= 0, got " + std::to_string(opt.eps));
  if (!(opt.weight_decay >= 0.0))
    throw Error("AdamW: weight_decay must be >= 0, got " + std::to_string(opt.weight_decay));
}

void AdamW::update(const std::vector<Entry>& entries) {
  // Parameters grouped by their own step count t (equal for all unless some
  // skipped steps for lack of a gradient) and weight decay: one multi-tensor
  // step per group.
  struct Group {
    std::vector<TensorView> w, g, m, v;
  };
  std::map<std::pair<int64_t, double>, Group> groups;
  for (const Entry& e : entries) {
    auto it = steps_.find(*e.name);
    if (it == steps_.end()) {  // first use, or after load_state(): one read of the restored count
      auto saved = state_.find(*e.name + ".step");
      int64_t t0 = saved == state_.end() ? 0 : static_cast<int64_t>(saved->second.item());
      it = steps_.emplace(*e.name, t0).first;
    }
    Group& grp = groups[{++it->second, weight_decay_of(*e.name)}];
    grp.w.push_back(e.param.view());
    grp.g.push_back(e.grad.view());
    grp.m.push_back(slot(*e.name, "exp_avg", e.param).view());
    grp.v.push_back(slot(*e.name, "exp_avg_sq", e.param).view());
  }
  // per-step scalars in double, rounded once (as torch.optim.AdamW's Python floats)
  const double lr = this->lr();
  for (auto& [key, grp] : groups) {
    const auto [t, wd] = key;
    const double td = static_cast<double>(t);
    dev::AdamWStep s;
    s.decay = static_cast<float>(1.0 - lr * wd);
    s.step_size = static_cast<float>(lr / (1.0 - std::pow(opt_.beta1, td)));
    s.bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(opt_.beta2, td)));
    s.beta2 = static_cast<float>(opt_.beta2);
    s.one_minus_beta1 = static_cast<float>(1.0 - opt_.beta1);
    s.one_minus_beta2 = static_cast<float>(1.0 - opt_.beta2);
    s.eps = static_cast<float>(opt_.eps);
    dev::adamw_step(grp.w.data(), grp.g.data(), grp.m.data(), grp.v.data(), grp.w.size(), s, grad_scale());
  }
}

void AdamW::export_state(std::map<std::string, Tensor>& out) const {
  for (auto& [name, t] : steps_) out[name + ".step"] = Tensor::scalar(static_cast<double>(t));
}

}  // namespace strata
