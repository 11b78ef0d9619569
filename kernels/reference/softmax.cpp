// Reference softmax, log_softmax and cross_entropy over the last axis, in double.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "kernels/backends.h"
#include "kernels/reference/common.h"

namespace strata::reference {
namespace {

int64_t cols_of(const TensorView& v) { return v.shape.back(); }

// log of the softmax of one row: x - max - log(sum exp(x - max)); returns the
// row's log-sum-exp, max + log(sum exp(x - max))
double log_softmax_row(const double* x, double* y, int64_t n) {
  double m = x[0];
  for (int64_t j = 1; j < n; ++j) m = std::max(m, x[j]);
  double s = 0;
  for (int64_t j = 0; j < n; ++j) s += std::exp(x[j] - m);
  double lse = m + std::log(s);
  for (int64_t j = 0; j < n; ++j) y[j] = x[j] - lse;
  return lse;
}

}  // namespace

void softmax_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  if (in[0].numel() == 0) return;
  int64_t n = cols_of(in[0]), rows = in[0].numel() / n;
  for (int64_t r = 0; r < rows; ++r) {
    double* y = D(out[0]) + r * n;
    log_softmax_row(D(in[0]) + r * n, y, n);
    for (int64_t j = 0; j < n; ++j) y[j] = std::exp(y[j]);
  }
}

// dx = y * (g - sum(g * y))
void softmax_backward(const OpAttrs&, const TensorView* in, const TensorView* out, const TensorView& g,
                      TensorView* gin) {
  if (in[0].numel() == 0) return;
  if (!gin[0].defined()) return;
  int64_t n = cols_of(in[0]), rows = in[0].numel() / n;
  for (int64_t r = 0; r < rows; ++r) {
    const double* y = D(out[0]) + r * n;
    const double* go = D(g) + r * n;
    double dot = 0;
    for (int64_t j = 0; j < n; ++j) dot += go[j] * y[j];
    for (int64_t j = 0; j < n; ++j) D(gin[0])[r * n + j] = y[j] * (go[j] - dot);
  }
}

void log_softmax_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  if (in[0].numel() == 0) return;
  int64_t n = cols_of(in[0]), rows = in[0].numel() / n;
  for (int64_t r = 0; r < rows; ++r) log_softmax_row(D(in[0]) + r * n, D(out[0]) + r * n, n);
}

// dx = g - exp(y) * sum(g)
void log_softmax_backward(const OpAttrs&, const TensorView* in, const TensorView* out, const TensorView& g,
                          TensorView* gin) {
  if (in[0].numel() == 0) return;
  if (!gin[0].defined()) return;
  int64_t n = cols_of(in[0]), rows = in[0].numel() / n;
  for (int64_t r = 0; r < rows; ++r) {
    const double* y = D(out[0]) + r * n;
    const double* go = D(g) + r * n;
    double s = 0;
    for (int64_t j = 0; j < n; ++j) s += go[j];
    for (int64_t j = 0; j < n; ++j) D(gin[0])[r * n + j] = go[j] - std::exp(y[j]) * s;
  }
}

// loss = mean_n -sum_c t[n,c] log p[n,c], t = (1 - eps) onehot(label) + eps / C;
// aux: lse[n] = log sum_c exp(x[n,c]), from which backward recomputes p.
void cross_entropy_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  int64_t N = in[0].shape[0], C = in[0].shape[1];
  const int64_t* labels = in[1].as<int64_t>();
  double eps = a.label_smoothing, total = 0;
  std::vector<double> logp(static_cast<size_t>(C));
  for (int64_t i = 0; i < N; ++i) {
    int64_t y = labels[i];
    if (y < 0 || y >= C)
      throw Error("cross_entropy: label " + std::to_string(y) + " at index " + std::to_string(i) +
                  " is out of range [0, " + std::to_string(C) + ")");
    const double* x = D(in[0]) + i * C;
    D(out[1])[i] = log_softmax_row(x, logp.data(), C);
    double sum_logp = 0;
    for (int64_t c = 0; c < C; ++c) sum_logp += logp[c];
    total += -(1 - eps) * logp[y] - eps / static_cast<double>(C) * sum_logp;
  }
  D(out[0])[0] = total / static_cast<double>(N);
}

// dlogits = g / N * (p - t), p = exp(x - lse)
void cross_entropy_backward(const OpAttrs& a, const TensorView* in, const TensorView* out,
                            const TensorView& g, TensorView* gin) {
  if (!gin[0].defined()) return;
  int64_t N = in[0].shape[0], C = in[0].shape[1];
  const int64_t* labels = in[1].as<int64_t>();
  double eps = a.label_smoothing, scale = D(g)[0] / static_cast<double>(N);
  for (int64_t i = 0; i < N; ++i) {
    double lse = D(out[1])[i];
    for (int64_t c = 0; c < C; ++c) {
      double t = eps / static_cast<double>(C) + (c == labels[i] ? 1 - eps : 0.0);
      D(gin[0])[i * C + c] = scale * (std::exp(D(in[0])[i * C + c] - lse) - t);
    }
  }
}

}  // namespace strata::reference
