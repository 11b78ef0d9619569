// Causal scaled dot-product attention on f32 as a composite per (batch, head),
// with a [T,T] scratch that lives only inside one call: S = scale q k^T (GEMM), a
// masked, max-shifted softmax over each row's first i+1 entries that also gives
// the row's log-sum-exp (the one saved auxiliary, [B,H,T]), then o = P v (GEMM).
// Backward recomputes P = exp(S - lse) from a second q k^T GEMM instead of reading
// saved probabilities (FlashAttention-2's backward): dV = P^T dO, dP = dO v^T,
// D = rowsum(dO * O), dS = P (dP - D) in place, dQ = scale dS k, dK = scale dS^T q.
// Nothing O(T^2) outlives a call; the extra GEMM is the price. Heads are split
// over threads when there are at least as many heads as threads (private
// scratch), otherwise heads run in turn with multithreaded GEMMs. The per-element
// softmax math is kernels/attention_tiling.h's, shared with the CUDA kernels.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/attention_tiling.h"
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

// Row i of S (length t) becomes the causal softmax over entries 0..i; lse[i] is
// the row's log-sum-exp.
void causal_softmax_rows(float* s, float* lse, int64_t t) {
  for (int64_t i = 0; i < t; ++i) {
    float* row = s + i * t;
    float mx = row[0];
    for (int64_t j = 1; j <= i; ++j) mx = std::max(mx, row[j]);
    float sum = 0;
    for (int64_t j = 0; j <= i; ++j) {
      row[j] = attn::shifted_exp(row[j], mx);
      sum += row[j];
    }
    float inv = attn::row_inv_sum(sum);
    for (int64_t j = 0; j <= i; ++j) row[j] *= inv;
    std::fill(row + i + 1, row + t, 0.0f);
    lse[i] = attn::row_lse(mx, sum);
  }
}

}  // namespace

void sdpa_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  auto g = geom(a, in);
  over_heads(g.heads, [&](int64_t s, int64_t e) {
    std::vector<float> p(static_cast<size_t>(g.t * g.t));
    for (int64_t h = s; h < e; ++h) {
      const float* q = F(in[0]) + h * g.t * g.d;
      const float* k = F(in[1]) + h * g.t * g.d;
      const float* v = F(in[2]) + h * g.t * g.dv;
      gemm(false, true, g.t, g.t, g.d, g.scale, q, g.d, k, g.d, 0.0f, p.data(), g.t);
      causal_softmax_rows(p.data(), F(out[1]) + h * g.t, g.t);
      gemm(false, false, g.t, g.dv, g.t, 1.0f, p.data(), g.t, v, g.dv, 0.0f, F(out[0]) + h * g.t * g.dv,
           g.dv);
    }
  });
}

void sdpa_backward(const OpAttrs& a, const TensorView* in, const TensorView* out, const TensorView& gout,
                   TensorView* gin) {
  auto g = geom(a, in);
  over_heads(g.heads, [&](int64_t s, int64_t e) {
    std::vector<float> p(static_cast<size_t>(g.t * g.t)), ds(p.size());
    for (int64_t h = s; h < e; ++h) {
      const float* q = F(in[0]) + h * g.t * g.d;
      const float* k = F(in[1]) + h * g.t * g.d;
      const float* v = F(in[2]) + h * g.t * g.dv;
      const float* o = F(out[0]) + h * g.t * g.dv;
      const float* lse = F(out[1]) + h * g.t;
      const float* dout = F(gout) + h * g.t * g.dv;
      // P = exp(scale q k^T - lse), 0 above the diagonal
      gemm(false, true, g.t, g.t, g.d, g.scale, q, g.d, k, g.d, 0.0f, p.data(), g.t);
      for (int64_t i = 0; i < g.t; ++i) {
        float* row = p.data() + i * g.t;
        for (int64_t j = 0; j <= i; ++j) row[j] = attn::prob_from_lse(row[j], lse[i]);
        std::fill(row + i + 1, row + g.t, 0.0f);
      }
      if (gin[2].defined())
        gemm(true, false, g.t, g.dv, g.t, 1.0f, p.data(), g.t, dout, g.dv, 0.0f, F(gin[2]) + h * g.t * g.dv,
             g.dv);
      if (!gin[0].defined() && !gin[1].defined()) continue;
      gemm(false, true, g.t, g.t, g.dv, 1.0f, dout, g.dv, v, g.dv, 0.0f, ds.data(), g.t);  // dP
      for (int64_t i = 0; i < g.t; ++i) {
        float* row = ds.data() + i * g.t;
        const float* prow = p.data() + i * g.t;
        float delta = 0;  // D_i = rowsum(dO * O)
        for (int64_t c = 0; c < g.dv; ++c) delta += dout[i * g.dv + c] * o[i * g.dv + c];
        for (int64_t j = 0; j <= i; ++j) row[j] = attn::score_grad(prow[j], row[j], delta);
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
