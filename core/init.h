// Seeded parameter initialisers (PyTorch's torch.nn.init semantics). Each fills
// `t` in place, outside the autograd graph, drawing from `gen` element by element
// in storage order, so the same seed gives the same values bit for bit.
#pragma once
#include <utility>

#include "core/random.h"
#include "core/tensor.h"

namespace strata::init {

enum class FanMode { fan_in, fan_out };

// (fan_in, fan_out) of a weight: [out, in] or [out, in, k...] (times the receptive field).
std::pair<int64_t, int64_t> fans(const Tensor& t);
// Gain of leaky_relu with negative slope a: sqrt(2 / (1 + a^2)).
double leaky_relu_gain(double a);

// U(-b, b), b = gain(a) * sqrt(3 / fan). a = sqrt(5) gives PyTorch's Linear/Conv default 1/sqrt(fan_in).
void kaiming_uniform_(Tensor& t, Generator& gen, double a = 0.0, FanMode mode = FanMode::fan_in);
// N(0, std), std = gain(a) / sqrt(fan).
void kaiming_normal_(Tensor& t, Generator& gen, double a = 0.0, FanMode mode = FanMode::fan_in);
// U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out)).
void xavier_uniform_(Tensor& t, Generator& gen, double gain = 1.0);
// N(0, std), std = gain * sqrt(2 / (fan_in + fan_out)).
void xavier_normal_(Tensor& t, Generator& gen, double gain = 1.0);
void uniform_(Tensor& t, Generator& gen, double lo, double hi);
void normal_(Tensor& t, Generator& gen, double mean = 0.0, double stddev = 1.0);
void zeros_(Tensor& t);
void ones_(Tensor& t);

}  // namespace strata::init
