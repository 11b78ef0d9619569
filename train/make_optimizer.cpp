#include "train/make_optimizer.h"

#include "base/error.h"
#include "nn/optim/adamw.h"
#include "nn/optim/param_groups.h"
#include "nn/optim/sgd.h"

namespace strata {

const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names = {"sgd", "adamw"};
  return names;
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& c, const Module& model) {
  if (c.name == "sgd") {
    if (c.decay_groups)
      throw ConfigError("optimizer.decay_groups: supported by adamw only (optimizer.name is sgd)");
    SGDOptions o;
    o.lr = c.lr;
    o.momentum = c.momentum;
    o.dampening = c.dampening;
    o.nesterov = c.nesterov;
    o.weight_decay = c.weight_decay;
    return std::make_unique<SGD>(model.named_parameters(), o);
  }
  if (c.name == "adamw") {
    AdamWOptions o;
    o.lr = c.lr;
    o.beta1 = c.beta1;
    o.beta2 = c.beta2;
    o.eps = c.eps;
    o.weight_decay = c.weight_decay;
    if (c.decay_groups) return std::make_unique<AdamW>(weight_decay_groups(model, c.weight_decay), o);
    return std::make_unique<AdamW>(model.named_parameters(), o);
  }
  std::string known;
  for (auto& n : optimizer_names()) known += (known.empty() ? "" : ", ") + n;
  throw ConfigError("optimizer.name: unknown optimizer '" + c.name + "' (" + known + ")");
}

}  // namespace strata
