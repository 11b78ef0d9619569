#include "models/registry.h"

#include "base/error.h"

namespace strata::models {

void register_mlp_model();
void register_cnn_model();
void register_resnet_model();
void register_gpt_model();

namespace {
void register_builtin_models() {
  register_mlp_model();
  register_cnn_model();
  register_resnet_model();
  register_gpt_model();
}
}  // namespace

std::map<std::string, ModelEntry>& model_registry() {
  static std::map<std::string, ModelEntry> r;
  static bool pending = true;  // the builtin registrations below call back in here
  if (pending) {
    pending = false;
    register_builtin_models();
  }
  return r;
}

std::vector<std::string> model_names() {
  std::vector<std::string> n;
  for (auto& [k, v] : model_registry()) n.push_back(k);
  return n;
}

const ModelEntry& model_entry(const std::string& name) {
  auto it = model_registry().find(name);
  if (it == model_registry().end()) {
    std::string known;
    for (auto& n : model_names()) known += (known.empty() ? "" : ", ") + n;
    throw ConfigError("model.name: unknown model '" + name + "' (registered: " + known + ")");
  }
  return it->second;
}

std::shared_ptr<Module> build_model(const ModelSpec& spec) { return model_entry(spec.name).build(spec); }

ModelSpec spec_from_config(const TrainConfig& cfg, std::vector<int64_t> input_shape) {
  ModelSpec spec;
  static_cast<ModelConfig&>(spec) = cfg.model;
  spec.input_shape = std::move(input_shape);
  spec.seed = static_cast<uint64_t>(cfg.seed);
  return spec;
}

}  // namespace strata::models
