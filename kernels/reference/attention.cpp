// Reference causal scaled dot-product attention in double: scores, a masked and
// max-shifted softmax per row, the weighted sum of values, and the row's
// log-sum-exp saved for backward. Backward recomputes each probability from the
// log-sum-exp, P = exp(s - lse), and follows FlashAttention-2's formulation:
// D = rowsum(dO * O), dS = P (dO V^T - D), dQ = scale dS K, dK = scale dS^T Q,
// dV = P^T dO. Masked (future) positions have probability 0. q, k, v and the
// output are [B,H,T,D] or, with OpAttrs::bthd, [B,T,H,D] (attn::HeadRows).
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/attention_tiling.h"
#include "kernels/backends.h"
#include "kernels/reference/common.h"

namespace strata::reference {
namespace {

struct Geom {
  int64_t heads, t, d, dv;
  double scale;
  attn::HeadRows rows;
  int64_t ld, ldv;  // row strides of q/k and v/output
};

Geom geom(const OpAttrs& a, const TensorView* in) {
  const Shape& q = in[0].shape;
  int64_t d = q[3], t = a.bthd ? q[1] : q[2], hn = a.bthd ? q[2] : 1;
  attn::HeadRows rows{hn, t};
  return {q[0] * (a.bthd ? q[2] : q[1]),
          t,
          d,
          in[2].size(3),
          a.scale != 0 ? a.scale : 1.0 / std::sqrt(static_cast<double>(d)),
          rows,
          rows.ld(d),
          rows.ld(in[2].size(3))};
}

double score(const double* q, const double* k, int64_t i, int64_t j, const Geom& g) {
  double dot = 0;
  for (int64_t e = 0; e < g.d; ++e) dot += q[i * g.ld + e] * k[j * g.ld + e];
  return dot * g.scale;
}

}  // namespace

void attention_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  auto g = geom(a, in);
  for (int64_t h = 0; h < g.heads; ++h) {
    const int64_t qb = g.rows.base(h, g.d), vb = g.rows.base(h, g.dv);
    const double *q = D(in[0]) + qb, *k = D(in[1]) + qb, *v = D(in[2]) + vb;
    double* o = D(out[0]) + vb;
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
        for (int64_t j = 0; j <= i; ++j) acc += s[j] * v[j * g.ldv + e];
        o[i * g.ldv + e] = acc;
      }
    }
  }
}

void attention_backward(const OpAttrs& a, const TensorView* in, const TensorView* out, const TensorView& gout,
                        TensorView* gin) {
  auto g = geom(a, in);
  for (int i = 0; i < 3; ++i)
    if (gin[i].defined())
      for (int64_t e = 0; e < gin[i].numel(); ++e) D(gin[i])[e] = 0;
  for (int64_t h = 0; h < g.heads; ++h) {
    const int64_t qb = g.rows.base(h, g.d), vb = g.rows.base(h, g.dv);
    const double *q = D(in[0]) + qb, *k = D(in[1]) + qb, *v = D(in[2]) + vb;
    const double *o = D(out[0]) + vb, *dout = D(gout) + vb;
    const double* lse = D(out[1]) + h * g.t;
    for (int64_t i = 0; i < g.t; ++i) {
      double delta = 0;  // D_i = rowsum(dO * O)
      for (int64_t e = 0; e < g.dv; ++e) delta += dout[i * g.ldv + e] * o[i * g.ldv + e];
      for (int64_t j = 0; j <= i; ++j) {
        double p = std::exp(score(q, k, i, j, g) - lse[i]);
        double dp = 0;
        for (int64_t e = 0; e < g.dv; ++e) {
          dp += dout[i * g.ldv + e] * v[j * g.ldv + e];
          if (gin[2].defined()) D(gin[2])[vb + j * g.ldv + e] += p * dout[i * g.ldv + e];
        }
        double ds = p * (dp - delta) * g.scale;
        for (int64_t e = 0; e < g.d; ++e) {
          if (gin[0].defined()) D(gin[0])[qb + i * g.ld + e] += ds * k[j * g.ld + e];
          if (gin[1].defined()) D(gin[1])[qb + j * g.ld + e] += ds * q[i * g.ld + e];
        }
      }
    }
  }
}

}  // namespace strata::reference
