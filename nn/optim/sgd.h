// SGD with momentum, dampening, Nesterov and (coupled, L2) weight decay, with
// PyTorch's semantics: g += wd*w; buf = g on a parameter's first step, else
// mu*buf + (1-dampening)*g; g = nesterov ? g + mu*buf : buf; w -= lr*g.
#pragma once
#include "nn/optim/optimizer.h"

namespace strata {

struct SGDOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

class SGD : public Optimizer {
 public:
  SGD(NamedTensors params, const SGDOptions& opt);
  std::string type_name() const override { return "SGD"; }
  const SGDOptions& options() const { return opt_; }

 protected:
  void update(const std::vector<Entry>& entries) override;

 private:
  SGDOptions opt_;
};

}  // namespace strata
