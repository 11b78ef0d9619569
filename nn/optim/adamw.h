// AdamW (Loshchilov & Hutter) with PyTorch's semantics: decoupled weight decay
// w -= lr*wd*w, then Adam with bias correction using each parameter's own step
// count (a parameter skipped for lack of a gradient does not advance).
#pragma once
#include "nn/optim/optimizer.h"
#include "nn/optim/param_groups.h"

namespace strata {

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
};

class AdamW : public Optimizer {
 public:
  AdamW(NamedTensors params, const AdamWOptions& opt);
  // Each group's weight_decay replaces opt.weight_decay for its parameters (see
  // weight_decay_groups()); a parameter may appear in one group only.
  AdamW(std::vector<ParamGroup> groups, const AdamWOptions& opt);
  double weight_decay_of(const std::string& param) const;
  std::string type_name() const override { return "AdamW"; }
  const AdamWOptions& options() const { return opt_; }

 protected:
  void update(const std::vector<Entry>& entries) override;
  void export_state(std::map<std::string, Tensor>& out) const override;
  void state_loaded() override { steps_.clear(); }

 private:
  AdamWOptions opt_;
  std::map<std::string, double> decay_;  // per-parameter weight decay, from groups; else opt_'s
  // Per-parameter step counts on the host (exported as "<param>.step" FP32
  // scalars), so that a step needs no device read to form its bias corrections.
  std::map<std::string, int64_t> steps_;
};

}  // namespace strata
