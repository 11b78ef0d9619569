#include "nn/loss_scaler.h"

#include <cmath>

#include "base/error.h"
#include "core/autograd.h"
#include "core/ops.h"
#include "kernels/device_ops.h"

namespace strata {

LossScaler::LossScaler(LossScalerOptions opt) : opt_(opt), scale_(opt.init_scale) {
  if (!(opt_.init_scale > 0.0) || !std::isfinite(opt_.init_scale))
    throw ConfigError("loss scaler: init_scale must be finite and > 0, got " +
                      std::to_string(opt_.init_scale));
  if (!(opt_.growth_factor > 1.0))
    throw ConfigError("loss scaler: growth_factor must be > 1, got " + std::to_string(opt_.growth_factor));
  if (!(opt_.backoff_factor > 0.0 && opt_.backoff_factor < 1.0))
    throw ConfigError("loss scaler: backoff_factor must be in (0, 1), got " +
                      std::to_string(opt_.backoff_factor));
  if (opt_.growth_interval <= 0)
    throw ConfigError("loss scaler: growth_interval must be > 0, got " +
                      std::to_string(opt_.growth_interval));
}

Tensor LossScaler::scale_loss(const Tensor& loss) const {
  if (!opt_.enabled) return loss;
  return strata::scale(loss, scale_);
}

bool LossScaler::unscale(const std::vector<Tensor>& params) {
  if (!opt_.enabled) return true;
  if (unscaled_)
    throw Error("loss scaler: unscale() called twice in one step; call update() after each step");
  unscaled_ = true;
  // As GradScaler: the reciprocal in double, applied in float (exact for powers of two).
  const float inv = static_cast<float>(1.0 / scale_);
  std::vector<TensorView> grads;
  grads.reserve(params.size());
  for (const Tensor& p : params) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    // unscaled values can be far below a half's range: keep them in FP32
    if (g.dtype() != DType::f32 || !g.is_contiguous()) {
      g = g.to(DType::f32).contiguous();
      Tensor handle = p;  // a handle sharing p's TensorImpl
      handle.set_grad(g);
    }
    grads.push_back(g.view());
  }
  if (grads.empty()) {
    found_inf_ = false;
    return true;
  }
  // one f32 flag on the gradients' device, raised by any inf or NaN, read once
  const Device d = grads.front().device;
  if (!found_inf_flag_.defined() || found_inf_flag_.device() != d)
    found_inf_flag_ = Tensor::empty({}, DType::f32, d);
  found_inf_flag_.fill_(0.0);
  dev::unscale_found_inf(grads.data(), grads.size(), inv, found_inf_flag_.view());
  found_inf_ = found_inf_flag_.item() != 0.0;
  return !found_inf_;
}

bool LossScaler::unscale(const NamedTensors& params) {
  std::vector<Tensor> ts;
  ts.reserve(params.size());
  for (auto& [n, t] : params) ts.push_back(t);
  return unscale(ts);
}

bool LossScaler::step(const std::vector<Tensor>& params, const std::function<void()>& optimizer_step) {
  if (!unscaled_) unscale(params);
  if (found_inf_) return false;
  optimizer_step();
  return true;
}

void LossScaler::update() {
  if (!opt_.enabled) return;
  if (found_inf_) {
    scale_ *= opt_.backoff_factor;
    growth_tracker_ = 0;
  } else if (++growth_tracker_ == opt_.growth_interval) {
    scale_ *= opt_.growth_factor;
    growth_tracker_ = 0;
  }
  unscaled_ = false;
  found_inf_ = false;
}

void LossScaler::load_state(const LossScalerState& s) {
  if (!(s.scale > 0.0) || !std::isfinite(s.scale))
    throw Error("loss scaler load_state: scale must be finite and > 0, got " + std::to_string(s.scale));
  if (s.growth_tracker < 0) throw Error("loss scaler load_state: growth_tracker must be >= 0");
  scale_ = s.scale;
  growth_tracker_ = s.growth_tracker;
  unscaled_ = false;
  found_inf_ = false;
}

}  // namespace strata
