// Gradient clipping by global L2 norm (PyTorch clip_grad_norm_): the norm of all
// parameter gradients taken together, accumulated in double on the gradients'
// device into one f32 scalar (read once). When it exceeds
// max_norm every gradient is multiplied by max_norm / (norm + 1e-6). A non-finite
// norm leaves the gradients alone (the loss scaler skips such a step). Call it
// after LossScaler::unscale().
#pragma once
#include <vector>

#include "core/module.h"
#include "core/tensor.h"

namespace strata {

// The global L2 norm of the defined gradients (0 when there are none).
double grad_norm(const std::vector<Tensor>& params);
double grad_norm(const NamedTensors& params);

// Clips in place and returns the norm before clipping. max_norm must be > 0.
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm);
double clip_grad_norm(const NamedTensors& params, double max_norm);

}  // namespace strata
