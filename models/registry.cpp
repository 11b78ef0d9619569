#include "models/registry.h"

#include "base/error.h"

namespace strata::models {

void register_mlp_model();
void register_cnn_model();
void register_gpt_model();

namespace {
void register_builtin_models() {
  register_mlp_model();
  register_cnn_model();
  register_gpt_model();
}
}  // namespace

std::map<std::string, ModelBuilder>& model_registry() {
  static std::map<std::string, ModelBuilder> r;
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

std::shared_ptr<Module> build_model(const ModelSpec& spec) {
  auto it = model_registry().find(spec.name);
  if (it == model_registry().end()) {
    std::string known;
    for (auto& n : model_names()) known += (known.empty() ? "" : ", ") + n;
    throw ConfigError("model.name: unknown model '" + spec.name + "' (registered: " + known + ")");
  }
  return it->second(spec);
}

}  // namespace strata::models
