// make_optimizer: builds the optimizer the `optimizer` section names, over a
// model's parameters. optimizer.decay_groups splits them as GPT-2 does
// (weight_decay_groups(): no decay on biases, norms and embeddings).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/module.h"
#include "nn/optim/optimizer.h"
#include "train/config/train_config.h"

namespace strata {

// Throws ConfigError naming the optimizer.* key that is wrong.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, const Module& model);

// The names make_optimizer accepts (the schema's optimizer.name choices).
const std::vector<std::string>& optimizer_names();

}  // namespace strata
