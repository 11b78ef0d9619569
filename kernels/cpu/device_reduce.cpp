// CPU device ops that reduce to one scalar: the sum of squares behind the global
// gradient norm, and the loss-scale unscale with its finite check. Each tensor is
// cut into fixed blocks of kBlock elements whose partial results are combined in
// block order, so the value does not depend on the thread count (a run is the
// same bit for bit whatever STRATA's thread setting).
#include <cmath>
#include <vector>

#include "kernels/cpu/device_elements.h"
#include "kernels/device_ops_backends.h"
#include "kernels/runtime/parallel.h"
#include "kernels/scalar_math.h"

namespace strata::cpu_dev {
using namespace detail;

namespace {

constexpr int64_t kBlock = 1 << 16;

// Calls fn(begin, end) -> double for each block of [0, n) and returns the partials
// summed in block order.
template <typename Fn>
double blocked_sum(int64_t n, Fn&& fn) {
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  if (blocks <= 1) return n > 0 ? fn(int64_t{0}, n) : 0.0;
  std::vector<double> partial(static_cast<size_t>(blocks));
  parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t s = b * kBlock, e = s + kBlock < n ? s + kBlock : n;
      partial[static_cast<size_t>(b)] = fn(s, e);
    }
  });
  double total = 0.0;
  for (double p : partial) total += p;
  return total;
}

void check_scalar_f32(const char* op, const TensorView& out) {
  require(
      out.defined() && out.dtype == DType::f32 && out.numel() == 1, op,
      "the result must be an f32 scalar, got " + (out.defined() ? describe(out) : std::string("undefined")));
}

}  // namespace

void sum_of_squares(const TensorView* xs, size_t n, const TensorView& out) {
  check_scalar_f32("sum_of_squares", out);
  double total = 0.0;
  for (size_t t = 0; t < n; ++t) {
    const TensorView& x = xs[t];
    if (!x.defined()) continue;
    require(is_floating(x.dtype), "sum_of_squares",
            "tensor " + std::to_string(t) + " " + describe(x) + " is not floating");
    if (x.dtype == DType::f32) {
      const float* p = x.as<float>();
      total += blocked_sum(x.numel(), [&](int64_t s, int64_t e) {
        double acc = 0.0;
        for (int64_t i = s; i < e; ++i) acc += static_cast<double>(p[i]) * static_cast<double>(p[i]);
        return acc;
      });
    } else {
      total += blocked_sum(x.numel(), [&](int64_t s, int64_t e) {
        double acc = 0.0;
        for (int64_t i = s; i < e; ++i) {
          double v = load(x.data, x.dtype, i);
          acc += v * v;
        }
        return acc;
      });
    }
  }
  float* o = out.as<float>();
  *o = static_cast<float>(static_cast<double>(*o) + total);
}

void unscale_found_inf(const TensorView* grads, size_t n, float inv_scale, const TensorView& found_inf) {
  check_scalar_f32("unscale_found_inf", found_inf);
  bool any_bad = false;
  for (size_t t = 0; t < n; ++t) {
    const TensorView& g = grads[t];
    if (!g.defined()) continue;
    require(is_float_like(g.dtype), "unscale_found_inf",
            "gradient " + std::to_string(t) + " " + describe(g) + " must be f32, f16 or bf16");
    // 1 per block holding an inf or NaN: a sum of flags, so the block order does not matter
    double bad = blocked_sum(g.numel(), [&](int64_t s, int64_t e) {
      bool ok = true;
      if (g.dtype == DType::f32) {
        float* p = g.as<float>();
        for (int64_t i = s; i < e; ++i) ok &= math::unscale(p[i], inv_scale);
      } else {
        for (int64_t i = s; i < e; ++i) {
          float v = load_float(g.data, g.dtype, i);
          ok &= math::unscale(v, inv_scale);
          store_float(g.data, g.dtype, i, v);
        }
      }
      return ok ? 0.0 : 1.0;
    });
    any_bad |= bad > 0.0;
  }
  if (any_bad) *found_inf.as<float>() = 1.0f;
}

}  // namespace strata::cpu_dev
