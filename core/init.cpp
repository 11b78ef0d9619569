#include "core/init.h"

#include <cmath>

#include "base/error.h"

namespace strata::init {

std::pair<int64_t, int64_t> fans(const Tensor& t) {
  if (t.dim() < 2) throw ShapeError("init: fan_in/fan_out need a tensor of rank >= 2, got " + t.str());
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

double leaky_relu_gain(double a) { return std::sqrt(2.0 / (1.0 + a * a)); }

namespace {
int64_t pick(const Tensor& t, FanMode mode) {
  auto [in, out] = fans(t);
  int64_t f = mode == FanMode::fan_in ? in : out;
  if (f <= 0) throw ShapeError("init: zero fan for " + t.str());
  return f;
}
}  // namespace

void uniform_(Tensor& t, Generator& gen, double lo, double hi) {
  t.copy_(Tensor::uniform(t.shape(), lo, hi, gen, DType::f32));
}

void normal_(Tensor& t, Generator& gen, double mean, double stddev) {
  t.copy_(Tensor::normal(t.shape(), mean, stddev, gen, DType::f32));
}

void zeros_(Tensor& t) { t.fill_(0.0); }
void ones_(Tensor& t) { t.fill_(1.0); }

void kaiming_uniform_(Tensor& t, Generator& gen, double a, FanMode mode) {
  double bound = leaky_relu_gain(a) * std::sqrt(3.0 / static_cast<double>(pick(t, mode)));
  uniform_(t, gen, -bound, bound);
}

void kaiming_normal_(Tensor& t, Generator& gen, double a, FanMode mode) {
  normal_(t, gen, 0.0, leaky_relu_gain(a) / std::sqrt(static_cast<double>(pick(t, mode))));
}

void xavier_uniform_(Tensor& t, Generator& gen, double gain) {
  auto [in, out] = fans(t);
  double bound = gain * std::sqrt(6.0 / static_cast<double>(in + out));
  uniform_(t, gen, -bound, bound);
}

void xavier_normal_(Tensor& t, Generator& gen, double gain) {
  auto [in, out] = fans(t);
  normal_(t, gen, 0.0, gain * std::sqrt(2.0 / static_cast<double>(in + out)));
}

}  // namespace strata::init
