#include "nn/optim/param_groups.h"

#include <set>
#include <string>

namespace strata {
namespace {

bool never_decayed(const Module& m) {
  const std::string t = m.type_name();
  return t == "Embedding" || t == "LayerNorm" || t == "BatchNorm2d";
}

// Collects the full names of the parameters of never-decayed modules under `m`.
void collect(const Module& m, const std::string& prefix, std::set<std::string>& out) {
  if (never_decayed(m)) {
    for (auto& [n, t] : m.named_parameters()) out.insert(prefix + n);
    return;
  }
  for (auto& [n, child] : m.named_children()) collect(*child, prefix + n + ".", out);
}

bool is_bias(const std::string& name) {
  auto dot = name.rfind('.');
  return name.compare(dot == std::string::npos ? 0 : dot + 1, std::string::npos, "bias") == 0;
}

}  // namespace

std::vector<ParamGroup> weight_decay_groups(const Module& model, double weight_decay) {
  std::set<std::string> exempt;
  collect(model, "", exempt);
  std::vector<ParamGroup> g(2);
  g[0].weight_decay = weight_decay;
  g[1].weight_decay = 0.0;
  for (auto& [n, t] : model.named_parameters())
    g[exempt.count(n) || is_bias(n) ? 1 : 0].params.emplace_back(n, t);
  return g;
}

}  // namespace strata
