// MLP: flatten, then Linear-ReLU(-Dropout) per hidden width, then a Linear head.
#include "base/error.h"
#include "core/modules/modules.h"
#include "core/random.h"
#include "models/registry.h"

namespace strata::models {
namespace {

std::shared_ptr<Module> build_mlp(const ModelSpec& s) {
  Generator gen(s.seed);
  int64_t in = 1;
  for (auto d : s.input_shape) in *= d;
  if (in <= 0) throw ConfigError("model mlp: input shape must be known and positive");
  auto net = std::make_shared<Sequential>();
  net->emplace<Flatten>(1);
  for (auto h : s.hidden) {
    if (h <= 0) throw ConfigError("model.hidden: widths must be positive, got " + std::to_string(h));
    net->emplace<Linear>(in, h, true, &gen);
    net->emplace<ReLU>();
    if (s.dropout > 0) net->emplace<Dropout>(s.dropout, &gen);
    in = h;
  }
  net->emplace<Linear>(in, s.num_classes, true, &gen);
  return net;
}

}  // namespace

void register_mlp_model() { model_registry()["mlp"] = build_mlp; }

}  // namespace strata::models
