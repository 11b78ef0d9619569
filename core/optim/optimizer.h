// Optimizer: updates a list of named FP32 parameters from their gradients. The
// learning rate is settable so that a schedule can drive it; the per-parameter
// state (momentum buffers, Adam moments, per-parameter step counts) is a map of
// named FP32 tensors "<param>.<slot>" plus a step counter, for checkpoints.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/module.h"
#include "core/tensor.h"

namespace strata {

struct OptimizerState {
  int64_t step = 0;                       // step() calls so far
  std::map<std::string, Tensor> tensors;  // "<param>.<slot>" -> FP32 tensor
};

class Optimizer {
 public:
  Optimizer(NamedTensors params, double lr);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient (others are skipped).
  void step();
  void zero_grad();

  double lr() const { return lr_; }
  void set_lr(double lr);
  int64_t step_count() const { return step_; }
  const NamedTensors& params() const { return params_; }
  virtual std::string type_name() const = 0;

  // A deep copy of the state; load_state() checks names and shapes and copies in.
  OptimizerState state() const;
  void load_state(const OptimizerState& s);

 protected:
  // Updates one parameter (n contiguous FP32 elements) with its gradient.
  virtual void update(const std::string& name, Tensor& param, const Tensor& grad) = 0;
  // The state tensor `name.slot` shaped like `param`, created zero-filled on first use.
  Tensor& slot(const std::string& name, const std::string& slot, const Tensor& param,
               bool* created = nullptr);

  std::map<std::string, Tensor> state_;

 private:
  NamedTensors params_;
  double lr_;
  int64_t step_ = 0;
};

// Elements per task when an update is split over threads.
constexpr int64_t kOptimizerGrain = 1 << 15;

}  // namespace strata
