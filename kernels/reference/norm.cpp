// Reference batch_norm and layer_norm in double, one channel or row at a time.
// Every floating buffer is f64 here, FP32 parameters and statistics included
// (stat_dtype(f64) is f64), so mixed storage needs nothing of this file.
#include <array>
#include <cmath>
#include <vector>

#include "kernels/backends.h"
#include "kernels/reference/common.h"

namespace strata::reference {
namespace {

// x[N, C, S...] viewed as N x C x S
struct NCS {
  int64_t N, C, S;
  explicit NCS(const Shape& s)
      : N(s[0]), C(s[1]), S(s[0] != 0 && s[1] != 0 ? shape_numel(s) / (s[0] * s[1]) : 0) {}
  int64_t at(int64_t n, int64_t c, int64_t s) const { return (n * C + c) * S + s; }
};

// A fused 2x2 max pool: each window's first maximum in row-major order of the
// pre-activation bn(x) (its index in the plane saved), y = that maximum through
// the ReLU -- max_pool2d of relu(bn(x)), since the ReLU keeps the order -- and
// backward the pooled gradient sent to that index, then through the ReLU's mask
// as without a pool. Calls f(the window's four cells in the plane) per window.
template <typename Fn>
void each_window_2x2(const Shape& x, Fn f) {
  int64_t h = x[2], w = x[3];
  for (int64_t i = 0; i + 1 < h; i += 2)
    for (int64_t j = 0; j + 1 < w; j += 2) {
      int64_t top = i * w + j;
      f(std::array<int64_t, 4>{top, top + 1, top + w, top + w + 1});
    }
}

// The first maximum's position 0..3 among the window's cells.
int first_max(const std::vector<double>& pre, const std::array<int64_t, 4>& cells) {
  int best = 0;
  for (int k = 1; k < 4; ++k)
    if (pre[static_cast<size_t>(cells[k])] > pre[static_cast<size_t>(cells[best])]) best = k;
  return best;
}

}  // namespace

void batch_norm_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  NCS g(in[0].shape);
  double M = static_cast<double>(g.N * g.S);
  const double* x = D(in[0]);
  for (int64_t c = 0; c < g.C; ++c) {
    double mean, invstd;
    if (a.training) {
      double s = 0, ss = 0;
      for (int64_t n = 0; n < g.N; ++n)
        for (int64_t k = 0; k < g.S; ++k) s += x[g.at(n, c, k)];
      mean = s / M;
      for (int64_t n = 0; n < g.N; ++n)
        for (int64_t k = 0; k < g.S; ++k) ss += (x[g.at(n, c, k)] - mean) * (x[g.at(n, c, k)] - mean);
      double var = ss / M;  // biased: used to normalise
      invstd = 1 / std::sqrt(var + a.eps);
      // running statistics take the unbiased variance (PyTorch semantics)
      D(in[3])[c] = (1 - a.momentum) * D(in[3])[c] + a.momentum * mean;
      D(in[4])[c] = (1 - a.momentum) * D(in[4])[c] + a.momentum * ss / (M - 1);
    } else {
      mean = D(in[3])[c];
      invstd = 1 / std::sqrt(D(in[4])[c] + a.eps);
    }
    D(out[1])[c] = mean;
    D(out[2])[c] = invstd;
    auto out_of = [&a](double pre) { return a.relu && !(pre > 0) ? 0.0 : pre; };  // a fused ReLU
    for (int64_t n = 0; n < g.N; ++n) {
      std::vector<double> pre(static_cast<size_t>(g.S));
      for (int64_t k = 0; k < g.S; ++k)
        pre[static_cast<size_t>(k)] = (x[g.at(n, c, k)] - mean) * invstd * D(in[1])[c] + D(in[2])[c];
      if (!a.max_pool_2x2) {
        for (int64_t k = 0; k < g.S; ++k) D(out[0])[g.at(n, c, k)] = out_of(pre[static_cast<size_t>(k)]);
        continue;
      }
      int64_t o = (n * g.C + c) * out[0].size(2) * out[0].size(3);
      each_window_2x2(in[0].shape, [&](const std::array<int64_t, 4>& cells) {
        int best = first_max(pre, cells);
        D(out[0])[o] = out_of(pre[static_cast<size_t>(cells[best])]);
        out[3].as<int32_t>()[o++] = static_cast<int32_t>(cells[best]);
      });
    }
  }
}

namespace {

// The pooled gradient sent back to each window's saved index, zeros elsewhere:
// max_pool2d's backward.
std::vector<double> unpool_grad(const TensorView* in, const TensorView* out, const TensorView& gout) {
  NCS g(in[0].shape);
  std::vector<double> full(static_cast<size_t>(in[0].numel()), 0.0);
  const double* gp = D(gout);
  const int32_t* at = out[3].as<const int32_t>();  // the window's maximum's index in its plane
  for (int64_t p = 0; p < g.N * g.C; ++p)
    for (int64_t o = 0; o < out[0].size(2) * out[0].size(3); ++o)
      full[static_cast<size_t>(p * g.S + *at++)] = *gp++;
  return full;
}

}  // namespace

// With a fused pool, g is first sent back to each window's maximum (unpool_grad).
// With a fused ReLU, g is first zeroed where the output before it was <= 0.
// With xhat = (x - mean) invstd and dxhat = g gamma:
//   training: dx = invstd / M (M dxhat - sum dxhat - xhat sum(dxhat xhat))   (mean, var depend on x)
//   eval:     dx = invstd dxhat
void batch_norm_backward(const OpAttrs& a, const TensorView* in, const TensorView* out,
                         const TensorView& gout, TensorView* gin) {
  NCS g(in[0].shape);
  double M = static_cast<double>(g.N * g.S);
  const double* x = D(in[0]);
  std::vector<double> pooled_to_full;  // with a fused pool: the gradient of relu(bn(x)), x's shape
  if (a.max_pool_2x2) pooled_to_full = unpool_grad(in, out, gout);
  const double* gout_all = a.max_pool_2x2 ? pooled_to_full.data() : D(gout);
  for (int64_t c = 0; c < g.C; ++c) {
    double mean = D(out[1])[c], invstd = D(out[2])[c], gamma = D(in[1])[c], beta = D(in[2])[c];
    auto go = [&](int64_t i) {  // g, through the fused ReLU when there is one
      double pre = (x[i] - mean) * invstd * gamma + beta;
      return a.relu && !(pre > 0) ? 0.0 : gout_all[i];
    };
    double sum_g = 0, sum_gx = 0;
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t k = 0; k < g.S; ++k) {
        int64_t i = g.at(n, c, k);
        sum_g += go(i);
        sum_gx += go(i) * (x[i] - mean) * invstd;
      }
    if (gin[1].defined()) D(gin[1])[c] = sum_gx;
    if (gin[2].defined()) D(gin[2])[c] = sum_g;
    if (!gin[0].defined()) continue;
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t k = 0; k < g.S; ++k) {
        int64_t i = g.at(n, c, k);
        double xhat = (x[i] - mean) * invstd, dxhat = go(i) * gamma;
        D(gin[0])
        [i] = a.training ? invstd / M * (M * dxhat - gamma * sum_g - xhat * gamma * sum_gx) : invstd * dxhat;
      }
  }
}

void layer_norm_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  if (in[0].shape.back() == 0) return;  // no row to normalise
  int64_t Dn = in[0].shape.back(), rows = in[0].numel() / Dn;
  for (int64_t r = 0; r < rows; ++r) {
    const double* x = D(in[0]) + r * Dn;
    double s = 0, ss = 0;
    for (int64_t j = 0; j < Dn; ++j) s += x[j];
    double mean = s / static_cast<double>(Dn);
    for (int64_t j = 0; j < Dn; ++j) ss += (x[j] - mean) * (x[j] - mean);
    double rstd = 1 / std::sqrt(ss / static_cast<double>(Dn) + a.eps);
    D(out[1])[r] = mean;
    D(out[2])[r] = rstd;
    for (int64_t j = 0; j < Dn; ++j) D(out[0])[r * Dn + j] = (x[j] - mean) * rstd * D(in[1])[j] + D(in[2])[j];
  }
}

// dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)), dxhat = g gamma
void layer_norm_backward(const OpAttrs&, const TensorView* in, const TensorView* out, const TensorView& gout,
                         TensorView* gin) {
  if (in[0].shape.back() == 0) return;  // no row to normalise
  int64_t Dn = in[0].shape.back(), rows = in[0].numel() / Dn;
  for (int k = 1; k < 3; ++k)
    if (gin[k].defined())
      for (int64_t j = 0; j < Dn; ++j) D(gin[k])[j] = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const double *x = D(in[0]) + r * Dn, *go = D(gout) + r * Dn;
    double mean = D(out[1])[r], rstd = D(out[2])[r];
    double m1 = 0, m2 = 0;
    for (int64_t j = 0; j < Dn; ++j) {
      double xhat = (x[j] - mean) * rstd, dxhat = go[j] * D(in[1])[j];
      m1 += dxhat;
      m2 += dxhat * xhat;
      if (gin[1].defined()) D(gin[1])[j] += go[j] * xhat;
      if (gin[2].defined()) D(gin[2])[j] += go[j];
    }
    m1 /= static_cast<double>(Dn);
    m2 /= static_cast<double>(Dn);
    if (gin[0].defined())
      for (int64_t j = 0; j < Dn; ++j) {
        double xhat = (x[j] - mean) * rstd, dxhat = go[j] * D(in[1])[j];
        D(gin[0])[r * Dn + j] = rstd * (dxhat - m1 - xhat * m2);
      }
  }
}

}  // namespace strata::reference
