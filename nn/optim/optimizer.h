// Optimizer: updates a list of named FP32 parameters from their gradients. The
// learning rate is settable so that a schedule can drive it; the per-parameter
// state (momentum buffers, Adam moments, per-parameter step counts) is a map of
// named FP32 tensors "<param>.<slot>" plus a step counter, for checkpoints.
// Parameters may live on any device; state is allocated beside each parameter,
// and an update is one multi-tensor device op per group of parameters
// (kernels/device_ops.h), so a step reads nothing back to the host.
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
  std::map<std::string, Tensor> tensors;  // "<param>.<slot>" -> FP32 tensor (on the host)
};

class Optimizer {
 public:
  Optimizer(NamedTensors params, double lr);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient (others are skipped).
  // Each gradient is multiplied by `grad_scale` as the update reads it: the
  // trainer folds the loss scale's reciprocal and the clip coefficient into it,
  // so unscale, clip and update are one pass over the gradients.
  void step(float grad_scale = 1.0f);
  void zero_grad();

  double lr() const { return lr_; }
  void set_lr(double lr);
  int64_t step_count() const { return step_; }
  const NamedTensors& params() const { return params_; }
  virtual std::string type_name() const = 0;

  // A deep host copy of the state; load_state() checks names and shapes and
  // copies in (onto each parameter's device).
  OptimizerState state() const;
  void load_state(const OptimizerState& s);

 protected:
  // A parameter with its gradient (contiguous; f32, or f16/bf16 read as f32).
  struct Entry {
    const std::string* name;
    Tensor param, grad;
  };
  // Updates every parameter of `entries` (those with a gradient this step),
  // reading each gradient times grad_scale().
  virtual void update(const std::vector<Entry>& entries) = 0;
  float grad_scale() const { return grad_scale_; }
  // The state tensor `name.slot` shaped like `param` on its device, created
  // zero-filled on first use.
  Tensor& slot(const std::string& name, const std::string& slot, const Tensor& param,
               bool* created = nullptr);
  // Adds host-side state (e.g. step counts) to a state() snapshot.
  virtual void export_state(std::map<std::string, Tensor>&) const {}
  // Called after load_state() replaced state_.
  virtual void state_loaded() {}

  std::map<std::string, Tensor> state_;

 private:
  NamedTensors params_;
  double lr_;
  int64_t step_ = 0;
  float grad_scale_ = 1.0f;
};

// Elements per thread task in the CPU steps (kernels/cpu/device_optim.cpp), so
// tests can size a parameter to span several tasks.
constexpr int64_t kOptimizerGrain = 1 << 15;

}  // namespace strata
