#include "core/loss_scaler.h"

#include <cmath>

#include "core/autograd.h"
#include "base/error.h"
#include "core/ops.h"
#include "kernels/scalar_math.h"

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
  bool finite = true;
  for (const Tensor& p : params) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (g.dtype() != DType::f32 || !g.is_contiguous()) {
      g = g.to(DType::f32).contiguous();
      Tensor handle = p;  // a handle sharing p's TensorImpl
      handle.set_grad(g);
    }
    float* d = g.data<float>();
    const int64_t n = g.numel();
    bool ok = true;
    for (int64_t i = 0; i < n; ++i) ok &= math::unscale(d[i], inv);
    finite &= ok;
  }
  found_inf_ = !finite;
  return finite;
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
