// MLP: flatten, then Linear-ReLU(-Dropout) per hidden width, then a Linear head.
#include "base/error.h"
#include "core/random.h"
#include "models/registry.h"
#include "nn/modules/modules.h"

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

// 3x the forward's 2 * in * out per Linear: backward computes the input and the
// weight gradients, each as many multiply-adds as the forward. ReLU/dropout and
// bias adds are left out (under 1% here).
double mlp_train_flops(const ModelSpec& s) {
  double in = 1, macs = 0;
  for (auto d : s.input_shape) in *= static_cast<double>(d);
  for (auto h : s.hidden) {
    macs += in * static_cast<double>(h);
    in = static_cast<double>(h);
  }
  macs += in * static_cast<double>(s.num_classes);
  return 3 * 2 * macs;
}

}  // namespace

void register_mlp_model() { model_registry()["mlp"] = {build_mlp, mlp_train_flops, "classification"}; }

}  // namespace strata::models
