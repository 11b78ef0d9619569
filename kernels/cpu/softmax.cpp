// Softmax, log_softmax and cross_entropy on f32, over the last axis. Each row is
// independent: threads take blocks of rows. A row makes three passes (max, then
// exp and a double-accumulated sum, then scale or subtract), all within a row
// that stays in L1/L2 for any realistic vocabulary, so memory traffic is one read
// of x and one write of y. Backward reads y (cross_entropy: x and lse) and g
// once each and writes dx once. cross_entropy saves only the row log-sum-exp [N]
// (not the probabilities [N, C]); its backward recomputes p = exp(x - lse) in the
// same single pass that writes (p - target) * g / N. The row loss and that
// gradient are math::cross_entropy_row_loss / _grad, shared with the CUDA kernels.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "kernels/backends.h"
#include "kernels/cpu/common.h"
#include "kernels/scalar_math.h"

namespace strata::cpu {
namespace {

int64_t row_grain(int64_t cols) {
  return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, cols));
}

// y = exp(x - max); returns (max, sum of y)
std::pair<float, double> exp_row(const float* x, float* y, int64_t n) {
  float m = x[0];
  for (int64_t j = 1; j < n; ++j) m = std::max(m, x[j]);
  double s = 0;
  for (int64_t j = 0; j < n; ++j) {
    y[j] = std::exp(x[j] - m);
    s += y[j];
  }
  return {m, s};
}

// log sum_j exp(x_j) of a row, shifted by its maximum, summed in double
double lse_row(const float* x, int64_t n) {
  float m = x[0];
  for (int64_t j = 1; j < n; ++j) m = std::max(m, x[j]);
  double s = 0;
  for (int64_t j = 0; j < n; ++j) s += std::exp(x[j] - m);
  return m + std::log(s);
}

void check_label(int64_t y, int64_t i, int64_t C) {
  if (y < 0 || y >= C)
    throw Error("cross_entropy: label " + std::to_string(y) + " at index " + std::to_string(i) +
                " is out of range [0, " + std::to_string(C) + ")");
}

}  // namespace

void softmax_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  if (in[0].numel() == 0) return;
  int64_t n = in[0].shape.back(), rows = in[0].numel() / n;
  const float* x = F(in[0]);
  float* y = F(out[0]);
  parallel_for(rows, row_grain(n), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      float* yr = y + r * n;
      float inv = static_cast<float>(1.0 / exp_row(x + r * n, yr, n).second);
      for (int64_t j = 0; j < n; ++j) yr[j] *= inv;
    }
  });
}

void softmax_backward(const OpAttrs&, const TensorView* in, const TensorView* out, const TensorView& g,
                      TensorView* gin) {
  if (in[0].numel() == 0) return;
  if (!gin[0].defined()) return;
  int64_t n = in[0].shape.back(), rows = in[0].numel() / n;
  const float* y = F(out[0]);
  const float* go = F(g);
  float* dx = F(gin[0]);
  parallel_for(rows, row_grain(n), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float *yr = y + r * n, *gr = go + r * n;
      double dot = 0;
      for (int64_t j = 0; j < n; ++j) dot += static_cast<double>(gr[j]) * yr[j];
      float d = static_cast<float>(dot);
      for (int64_t j = 0; j < n; ++j) dx[r * n + j] = yr[j] * (gr[j] - d);
    }
  });
}

void log_softmax_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  if (in[0].numel() == 0) return;
  int64_t n = in[0].shape.back(), rows = in[0].numel() / n;
  const float* x = F(in[0]);
  float* y = F(out[0]);
  parallel_for(rows, row_grain(n), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float* xr = x + r * n;
      float* yr = y + r * n;
      auto [m, s] = exp_row(xr, yr, n);  // y is scratch here
      float lse = m + static_cast<float>(std::log(s));
      for (int64_t j = 0; j < n; ++j) yr[j] = xr[j] - lse;
    }
  });
}

void log_softmax_backward(const OpAttrs&, const TensorView* in, const TensorView* out, const TensorView& g,
                          TensorView* gin) {
  if (in[0].numel() == 0) return;
  if (!gin[0].defined()) return;
  int64_t n = in[0].shape.back(), rows = in[0].numel() / n;
  const float* y = F(out[0]);
  const float* go = F(g);
  float* dx = F(gin[0]);
  parallel_for(rows, row_grain(n), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float *yr = y + r * n, *gr = go + r * n;
      double s = 0;
      for (int64_t j = 0; j < n; ++j) s += gr[j];
      float sf = static_cast<float>(s);
      for (int64_t j = 0; j < n; ++j) dx[r * n + j] = gr[j] - std::exp(yr[j]) * sf;
    }
  });
}

void cross_entropy_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  int64_t N = in[0].shape[0], C = in[0].shape[1];
  const float* x = F(in[0]);
  const int64_t* labels = in[1].as<int64_t>();
  float* lse_out = F(out[1]);
  for (int64_t i = 0; i < N; ++i) check_label(labels[i], i, C);  // before any thread starts
  double eps = a.label_smoothing;
  std::vector<double> row_loss(static_cast<size_t>(N));
  parallel_for(N, row_grain(C), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const float* xr = x + i * C;
      double lse = lse_row(xr, C), sum_x = 0;
      for (int64_t c = 0; c < C; ++c) sum_x += xr[c];
      lse_out[i] = static_cast<float>(lse);
      row_loss[static_cast<size_t>(i)] =
          math::cross_entropy_row_loss<double>(lse, xr[labels[i]], sum_x / static_cast<double>(C), eps);
    }
  });
  double total = 0;
  for (double l : row_loss) total += l;  // fixed order: deterministic for any thread count
  F(out[0])[0] = static_cast<float>(total / static_cast<double>(N));
}

void cross_entropy_backward(const OpAttrs& a, const TensorView* in, const TensorView* out,
                            const TensorView& g, TensorView* gin) {
  if (!gin[0].defined()) return;
  int64_t N = in[0].shape[0], C = in[0].shape[1];
  const int64_t* labels = in[1].as<int64_t>();
  for (int64_t i = 0; i < N; ++i) check_label(labels[i], i, C);
  const float* x = F(in[0]);
  const float* lse = F(out[1]);
  float* dx = F(gin[0]);
  float scale = F(g)[0] / static_cast<float>(N);
  float smooth = static_cast<float>(a.label_smoothing / static_cast<double>(C));
  float hit = static_cast<float>(1 - a.label_smoothing);
  parallel_for(N, row_grain(C), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      for (int64_t c = 0; c < C; ++c)
        dx[i * C + c] = math::cross_entropy_grad(x[i * C + c], lse[i], c == labels[i], smooth, hit, scale);
  });
}

}  // namespace strata::cpu
