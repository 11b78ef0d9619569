// Reference causal scaled dot-product attention in double: scores, a masked and
// max-shifted softmax per row, the weighted sum of values, and the row's
// log-sum-exp saved for backward. Backward recomputes each probability from the
// log-sum-exp, P = exp(s - lse), and follows FlashAttention-2's formulation:
// D = rowsum(dO * O), dS = P (dO V^T - D), dQ = scale dS K, dK = scale dS^T Q,
// dV = P^T dO. Masked (future) positions have probability 0.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/backends.h"
#include "kernels/reference/common.h"

namespace strata::reference {
namespace {

struct Geom {
  int64_t heads, t, d, dv;
  double scale;
};

Geom geom(const OpAttrs& a, const TensorView* in) {
  int64_t d = in[0].size(3);
  return {in[0].size(0) * in[0].size(1), in[0].size(2), d, in[2].size(3),
          a.scale != 0 ? a.scale : 1.0 / std::sqrt(static_cast<double>(d))};
}

double score(const double* q, const double* k, int64_t i, int64_t j, const Geom& g) {
  double dot = 0;
  for (int64_t e = 0; e < g.d; ++e) dot += q[i * g.d + e] * k[j * g.d + e];
  return dot * g.scale;
}

}  // namespace

void sdpa_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  auto g = geom(a, in);
  for (int64_t h = 0; h < g.heads; ++h) {
    const double* q = D(in[0]) + h * g.t * g.d;
    const double* k = D(in[1]) + h * g.t * g.d;
    const double* v = D(in[2]) + h * g.t * g.dv;
    double* o = D(out[0]) + h * g.t * g.dv;
    double* lse = D(out[1]) + h * g.t;
    for (int64_t i = 0; i < g.t; ++i) {
      std::vector<double> s(static_cast<size_t>(i + 1));
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j <= i; ++j) {
        s[j] = score(q, k, i, j, g);
        mx = std::max(mx, s[j]);
      }
      for (int64_t j = 0; j <= i; ++j) sum += std::exp(s[j] - mx);
      lse[i] = mx + std::log(sum);
      for (int64_t j = 0; j <= i; ++j) s[j] = std::exp(s[j] - lse[i]);  // now the probabilities
      for (int64_t e = 0; e < g.dv; ++e) {
        double acc = 0;
        for (int64_t j = 0; j <= i; ++j) acc += s[j] * v[j * g.dv + e];
        o[i * g.dv + e] = acc;
      }
    }
  }
}

void sdpa_backward(const OpAttrs& a, const TensorView* in, const TensorView* out, const TensorView& gout,
                   TensorView* gin) {
  auto g = geom(a, in);
  for (int i = 0; i < 3; ++i)
    if (gin[i].defined())
      for (int64_t e = 0; e < gin[i].numel(); ++e) D(gin[i])[e] = 0;
  for (int64_t h = 0; h < g.heads; ++h) {
    const double* q = D(in[0]) + h * g.t * g.d;
    const double* k = D(in[1]) + h * g.t * g.d;
    const double* v = D(in[2]) + h * g.t * g.dv;
    const double* o = D(out[0]) + h * g.t * g.dv;
    const double* lse = D(out[1]) + h * g.t;
    const double* dout = D(gout) + h * g.t * g.dv;
    for (int64_t i = 0; i < g.t; ++i) {
      double delta = 0;  // D_i = rowsum(dO * O)
      for (int64_t e = 0; e < g.dv; ++e) delta += dout[i * g.dv + e] * o[i * g.dv + e];
      for (int64_t j = 0; j <= i; ++j) {
        double p = std::exp(score(q, k, i, j, g) - lse[i]);
        double dp = 0;
        for (int64_t e = 0; e < g.dv; ++e) {
          dp += dout[i * g.dv + e] * v[j * g.dv + e];
          if (gin[2].defined()) D(gin[2])[h * g.t * g.dv + j * g.dv + e] += p * dout[i * g.dv + e];
        }
        double ds = p * (dp - delta) * g.scale;
        for (int64_t e = 0; e < g.d; ++e) {
          if (gin[0].defined()) D(gin[0])[h * g.t * g.d + i * g.d + e] += ds * k[j * g.d + e];
          if (gin[1].defined()) D(gin[1])[h * g.t * g.d + j * g.d + e] += ds * q[i * g.d + e];
        }
      }
    }
  }
}

}  // namespace strata::reference
