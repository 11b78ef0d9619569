// Dropout with a reproducible mask: the module owns a Generator seeded once from
// the one it is built with, and draws a fresh mask seed on every training call.
// The same construction seed therefore gives the same masks, call for call.
#pragma once
#include "core/module.h"
#include "core/random.h"

namespace strata {

class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;  // identity in eval mode
  std::string type_name() const override { return "Dropout"; }
  double p() const { return p_; }
  Generator& generator() { return gen_; }  // its state belongs in a checkpoint

 private:
  double p_;
  Generator gen_;
};

}  // namespace strata
