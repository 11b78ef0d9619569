// Causal scaled dot-product attention on f32 as a composite per (batch, head):
// S = scale q k^T (GEMM) written straight into the probs output, a masked,
// max-shifted softmax over each row's first i+1 entries (future entries set to 0),
// then o = P v (GEMM). Backward recomputes nothing but dP: dV = P^T dO,
// dP = dO v^T (GEMMs), dS = P (dP - rowsum(P dP)) in place, dQ = scale dS k and
// dK = scale dS^T q (GEMMs). Memory traffic is dominated by the T x T probs
// (written once forward, read twice backward) -- fine for the sequence lengths
// this CPU path serves; a fused flash-style kernel would keep them in cache.
// Heads are split over threads when there are at least as many heads as threads
// (private dP scratch), otherwise heads run in turn with multithreaded GEMMs.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/backends.h"
#include "kernels/cpu/common.h"
#include "kernels/cpu/gemm.h"

namespace strata::cpu {
namespace {

struct Geom {
  int64_t heads, t, d, dv;
  float scale;
};

Geom geom(const OpAttrs& a, const TensorView* in) {
  int64_t d = in[0].size(3);
  return {in[0].size(0) * in[0].size(1), in[0].size(2), d, in[2].size(3),
          static_cast<float>(a.scale != 0 ? a.scale : 1.0 / std::sqrt(static_cast<double>(d)))};
}

template <typename Fn>
void over_heads(int64_t heads, Fn fn) {
  parallel_for(heads, heads >= num_threads() ? 1 : heads, fn);
}

// Row i of S (length t) becomes the causal softmax over entries 0..i.
void causal_softmax_rows(float* s, int64_t t) {
  for (int64_t i = 0; i < t; ++i) {
    float* row = s + i * t;
    float mx = row[0];
    for (int64_t j = 1; j <= i; ++j) mx = std::max(mx, row[j]);
    float sum = 0;
    for (int64_t j = 0; j <= i; ++j) {
      row[j] = std::exp(row[j] - mx);
      sum += row[j];
    }
    float inv = 1.0f / sum;
    for (int64_t j = 0; j <= i; ++j) row[j] *= inv;
    std::fill(row + i + 1, row + t, 0.0f);
  }
}

}  // namespace

void sdpa_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  auto g = geom(a, in);
  over_heads(g.heads, [&](int64_t s, int64_t e) {
    for (int64_t h = s; h < e; ++h) {
      const float* q = F(in[0]) + h * g.t * g.d;
      const float* k = F(in[1]) + h * g.t * g.d;
      const float* v = F(in[2]) + h * g.t * g.dv;
      float* p = F(out[1]) + h * g.t * g.t;
      gemm(false, true, g.t, g.t, g.d, g.scale, q, g.d, k, g.d, 0.0f, p, g.t);
      causal_softmax_rows(p, g.t);
      gemm(false, false, g.t, g.dv, g.t, 1.0f, p, g.t, v, g.dv, 0.0f, F(out[0]) + h * g.t * g.dv, g.dv);
    }
  });
}

void sdpa_backward(const OpAttrs& a, const TensorView* in, const TensorView* out, const TensorView& gout,
                   TensorView* gin) {
  auto g = geom(a, in);
  over_heads(g.heads, [&](int64_t s, int64_t e) {
    std::vector<float> ds(static_cast<size_t>(g.t * g.t));
    for (int64_t h = s; h < e; ++h) {
      const float* q = F(in[0]) + h * g.t * g.d;
      const float* k = F(in[1]) + h * g.t * g.d;
      const float* v = F(in[2]) + h * g.t * g.dv;
      const float* p = F(out[1]) + h * g.t * g.t;
      const float* dout = F(gout) + h * g.t * g.dv;
      if (gin[2].defined())
        gemm(true, false, g.t, g.dv, g.t, 1.0f, p, g.t, dout, g.dv, 0.0f, F(gin[2]) + h * g.t * g.dv, g.dv);
      if (!gin[0].defined() && !gin[1].defined()) continue;
      gemm(false, true, g.t, g.t, g.dv, 1.0f, dout, g.dv, v, g.dv, 0.0f, ds.data(), g.t);  // dP
      for (int64_t i = 0; i < g.t; ++i) {
        float* row = ds.data() + i * g.t;
        const float* prow = p + i * g.t;
        float r = 0;
        for (int64_t j = 0; j <= i; ++j) r += prow[j] * row[j];
        for (int64_t j = 0; j <= i; ++j) row[j] = prow[j] * (row[j] - r);
        std::fill(row + i + 1, row + g.t, 0.0f);
      }
      if (gin[0].defined())
        gemm(false, false, g.t, g.d, g.t, g.scale, ds.data(), g.t, k, g.d, 0.0f, F(gin[0]) + h * g.t * g.d,
             g.d);
      if (gin[1].defined())
        gemm(true, false, g.t, g.d, g.t, g.scale, ds.data(), g.t, q, g.d, 0.0f, F(gin[1]) + h * g.t * g.d,
             g.d);
    }
  });
}

}  // namespace strata::cpu
