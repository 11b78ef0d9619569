// Model registry: name -> builder. Built-in models are registered on first use
// by register_builtin_models() (a static library drops self-registering objects
// nobody references, so the list is explicit; tests/models checks it builds every
// registered model). Users add their own with model_registry()[name] = builder.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/module.h"
#include "train/config/train_config.h"

namespace strata::models {

// What a builder needs to know: the config's `model` section itself (every key a
// builder reads is a ModelConfig field, so a new key reaches the builders without
// a copy to keep in step), plus what the data and the run decide.
struct ModelSpec : ModelConfig {
  std::vector<int64_t> input_shape;  // per sample, e.g. {1, 28, 28}; token models need none
  uint64_t seed = 0;                 // initialisation seed
};

using ModelBuilder = std::function<std::shared_ptr<Module>(const ModelSpec&)>;
// Training FLOPs (forward + backward, multiply-adds counted as 2) per unit of the
// model's task: per sample for image classifiers, per token for language models.
// Counted analytically from the spec (docs/models.md gives each formula); the
// trainer divides measured throughput by a peak to report MFU.
using FlopsCounter = std::function<double(const ModelSpec&)>;

struct ModelEntry {
  ModelBuilder build;
  FlopsCounter train_flops;
  // The task that trains it (train/trainer/task.h): "classification" or "causal_lm".
  std::string task = "classification";
};

std::map<std::string, ModelEntry>& model_registry();
// The entry of spec.name; throws ConfigError naming the unknown model and the registered ones.
const ModelEntry& model_entry(const std::string& name);
// Throws ConfigError naming the unknown model and the registered ones.
std::shared_ptr<Module> build_model(const ModelSpec& spec);
// The spec of a config's `model` section (and its seed), for a sample shape the
// data decides (images: (C, H, W); token models need none).
ModelSpec spec_from_config(const TrainConfig& cfg, std::vector<int64_t> input_shape = {});
std::vector<std::string> model_names();

}  // namespace strata::models
