// LossScaler: dynamic loss scaling for FP16 training, with PyTorch GradScaler's
// semantics. Per step:
//   loss_scaled = scaler.scale_loss(loss); loss_scaled.backward();
//   scaler.unscale(params);            // once, before clipping: grads /= scale, finite check
//   clip_grad_norm(params, max_norm);  // optional
//   if (scaler.should_step()) optimizer.step();
//   scaler.update();                   // inf/NaN: scale *= backoff; growth_interval clean steps: scale *=
//   growth
// Disabled (fp32, bf16): scale 1, unscale does nothing and the step always runs.
// The unscale and finite check run on the gradients' device into one f32 flag,
// which is the step's only read back to the host.
// Under data parallelism the gradients are allreduced before unscale(), so every
// rank sees the same inf/NaN and takes the same decision.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "core/module.h"
#include "core/tensor.h"

namespace strata {

struct LossScalerOptions {
  bool enabled = true;
  double init_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

struct LossScalerState {
  double scale = 65536.0;
  int64_t growth_tracker = 0;  // consecutive clean steps since the last change
};

class LossScaler {
 public:
  explicit LossScaler(LossScalerOptions opt = {});
  static LossScaler disabled() { return LossScaler(LossScalerOptions{.enabled = false}); }

  bool enabled() const { return opt_.enabled; }
  double scale() const { return opt_.enabled ? scale_ : 1.0; }
  int64_t growth_tracker() const { return growth_tracker_; }

  // loss * scale (recorded by autograd); the loss itself when disabled.
  Tensor scale_loss(const Tensor& loss) const;

  // Divides every defined gradient by the scale in place and checks that all are
  // finite. Once per step (a second call before update() throws). Returns
  // should_step().
  bool unscale(const std::vector<Tensor>& params);
  bool unscale(const NamedTensors& params);

  // True unless unscale() found an inf or NaN this step.
  bool should_step() const { return !found_inf_; }
  bool found_inf() const { return found_inf_; }
  // Records an inf/NaN found elsewhere (e.g. on another rank after an allreduce
  // of the finite flags): this step is skipped and update() backs off.
  void mark_overflow() { found_inf_ = opt_.enabled; }

  // unscale() if not done yet, run `optimizer_step` unless a gradient was not
  // finite, and return whether it ran. Does not call update().
  bool step(const std::vector<Tensor>& params, const std::function<void()>& optimizer_step);

  // Ends the step: adjusts the scale from this step's finite check and resets it.
  void update();

  LossScalerState state() const { return {scale_, growth_tracker_}; }
  void load_state(const LossScalerState& s);

 private:
  LossScalerOptions opt_;
  double scale_;
  int64_t growth_tracker_ = 0;
  bool unscaled_ = false;
  bool found_inf_ = false;
  Tensor found_inf_flag_;  // f32 scalar on the gradients' device, reused every step
};

}  // namespace strata
