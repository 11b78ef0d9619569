// Softmax, log_softmax and cross_entropy on f32, over the last axis. Each row is
// independent: threads take blocks of rows. A row makes three passes (max, then
// exp and a double-accumulated sum, then scale or subtract), all within a row
// that stays in L1/L2 for any realistic vocabulary, so memory traffic is one read
// of x and one write of y. Backward reads y (or the saved probabilities) and g
// once each and writes dx once. cross_entropy saves the probabilities [N, C] so
// that its backward is a single fused pass (p - target) * g / N.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "kernels/backends.h"
#include "kernels/cpu/common.h"

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
  float* p = F(out[1]);
  for (int64_t i = 0; i < N; ++i) check_label(labels[i], i, C);  // before any thread starts
  double eps = a.label_smoothing;
  std::vector<double> row_loss(static_cast<size_t>(N));
  parallel_for(N, row_grain(C), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const float* xr = x + i * C;
      float* pr = p + i * C;
      auto [m, s] = exp_row(xr, pr, C);
      double lse = m + std::log(s), sum_x = 0;
      float inv = static_cast<float>(1.0 / s);
      for (int64_t c = 0; c < C; ++c) {
        pr[c] *= inv;
        sum_x += xr[c];
      }
      // -sum_c t_c (x_c - lse) with t = (1-eps) onehot + eps/C
      row_loss[static_cast<size_t>(i)] =
          -(1 - eps) * (xr[labels[i]] - lse) - eps * (sum_x / static_cast<double>(C) - lse);
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
  const float* p = F(out[1]);
  float* dx = F(gin[0]);
  float scale = F(g)[0] / static_cast<float>(N);
  float smooth = static_cast<float>(a.label_smoothing / static_cast<double>(C));
  float hit = static_cast<float>(1 - a.label_smoothing);
  parallel_for(N, row_grain(C), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      for (int64_t c = 0; c < C; ++c) dx[i * C + c] = scale * (p[i * C + c] - smooth);
      dx[i * C + labels[i]] -= scale * hit;
    }
  });
}

}  // namespace strata::cpu
