// Causal scaled dot-product attention on f32 as a composite per (batch, head),
// with a [T,T] scratch that lives only inside one call. Every product with the
// causal structure is cut into 64-row blocks so that only the lower triangle
// (and the diagonal blocks' upper corners) is computed: S[r0:r1, 0:r1] =
// scale q[r0:r1] k[0:r1]^T, a masked, max-shifted softmax over each row's first
// i+1 entries that also gives the row's log-sum-exp (the one saved auxiliary,
// [B,H,T]), then o[r0:r1] = P[r0:r1, 0:r1] v[0:r1]. Backward recomputes P =
// exp(S - lse) from those blocked GEMMs instead of reading saved probabilities
// (FlashAttention-2's backward): dV = P^T dO, dP = dO v^T, D = rowsum(dO * O),
// dS = P (dP - D) in place, dQ = scale dS k, dK = scale dS^T q -- each GEMM over
// its row or column blocks. Nothing O(T^2) outlives a call, and the triangle
// pays for the extra q k^T GEMM. Heads are split over threads when there are at
// least as many heads as threads (private scratch), otherwise heads run in turn
// with multithreaded GEMMs. The per-element softmax math is
// kernels/attention_tiling.h's, shared with the CUDA kernels, except for the
// exponentials of a row whose scores are all finite: those are math::exp_poly
// (kernels/scalar_math.h) in a loop GCC vectorises, where glibc's expf is a
// scalar call per score (2.8% of the tiny GPT's step, most of it here). With
// OpAttrs::bthd, q, k, v and the output are [B,T,H,D], the heads of the
// [B,T,C] projections as they come (attn::HeadRows): every GEMM reads and
// writes them through its leading dimension, so no permuted copy is made on
// either side of the op.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/attention_tiling.h"
#include "kernels/backends.h"
#include "kernels/cpu/common.h"
#include "kernels/cpu/gemm.h"
#include "kernels/scalar_math.h"

namespace strata::cpu {
namespace {

struct Geom {
  int64_t heads, t, d, dv;
  float scale;
  attn::HeadRows rows;
  int64_t ld, ldv;  // row strides of q/k and of v/output
};

Geom geom(const OpAttrs& a, const TensorView* in) {
  const Shape& q = in[0].shape;
  int64_t d = q[3], dv = in[2].size(3), t = a.bthd ? q[1] : q[2], hn = a.bthd ? q[2] : 1;
  attn::HeadRows rows{hn, t};
  return {q[0] * (a.bthd ? q[2] : q[1]),
          t,
          d,
          dv,
          static_cast<float>(a.scale != 0 ? a.scale : 1.0 / std::sqrt(static_cast<double>(d))),
          rows,
          rows.ld(d),
          rows.ld(dv)};
}

template <typename Fn>
void over_heads(int64_t heads, Fn fn) {
  parallel_for(heads, heads >= num_threads() ? 1 : heads, fn);
}

constexpr int64_t kRowBlock = 64;

// One past the last column of row i that the blocked products define.
int64_t block_end(int64_t i, int64_t t) { return std::min(t, (i / kRowBlock + 1) * kRowBlock); }

// s[r0:r1, 0:r1] = alpha a[r0:r1] b[0:r1]^T for each row block; a, b: t rows of
// k (row strides lda, ldb), s [t][t].
void causal_abt(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t t, int64_t k, float alpha,
                float* s) {
  for (int64_t r0 = 0; r0 < t; r0 += kRowBlock) {
    int64_t r1 = std::min(t, r0 + kRowBlock);
    gemm(false, true, r1 - r0, r1, k, alpha, a + r0 * lda, lda, b, ldb, 0.0f, s + r0 * t, t);
  }
}

// c[r0:r1] = alpha s[r0:r1, 0:r1] b[0:r1] for each row block; b, c: t rows of n
// (row strides ldb, ldc).
void causal_sb(const float* s, const float* b, int64_t ldb, int64_t t, int64_t n, float alpha, float* c,
               int64_t ldc) {
  for (int64_t r0 = 0; r0 < t; r0 += kRowBlock) {
    int64_t r1 = std::min(t, r0 + kRowBlock);
    gemm(false, false, r1 - r0, n, r1, alpha, s + r0 * t, t, b, ldb, 0.0f, c + r0 * ldc, ldc);
  }
}

// c[c0:c1] = alpha s[c0:t, c0:c1]^T b[c0:t] for each column block; b, c: t rows
// of n (row strides ldb, ldc).
void causal_stb(const float* s, const float* b, int64_t ldb, int64_t t, int64_t n, float alpha, float* c,
                int64_t ldc) {
  for (int64_t c0 = 0; c0 < t; c0 += kRowBlock) {
    int64_t c1 = std::min(t, c0 + kRowBlock);
    gemm(true, false, c1 - c0, n, t - c0, alpha, s + c0 * t + c0, t, b + c0 * ldb, ldb, 0.0f, c + c0 * ldc,
         ldc);
  }
}

// x[j] = e^(x[j] - top) for x[j] <= top, j < n, in 8-lane vectors. The
// exponent is capped at -87 (e^-87 = 1.6e-38, the smallest normal float's
// neighbourhood), where exp_poly's exponent bits would underflow; a weight that
// small is zero beside the row's largest, which is 1.
void exp_below(float* x, int64_t n, float top) {
  for (int64_t j = 0; j < n; ++j) x[j] = math::exp_poly(-math::cap_nonnegative(top - x[j], 87.0f));
}

// The maximum of x[0..n), and whether they are all finite: a row with a NaN or
// an infinite score takes the scalar path, which propagates it as it always
// has. The reductions are OpenMP simd reductions (this file is compiled with
// -fopenmp-simd): GCC does not reorder a float max or sum on its own, and a
// scalar chain over every score cost as much as the exponentials.
float finite_row_max(const float* x, int64_t n, bool* finite) {
  float mx = -INFINITY, probe = 0.0f;
#pragma omp simd reduction(max : mx) reduction(+ : probe)
  for (int64_t j = 0; j < n; ++j) {
    mx = std::max(mx, x[j]);
    probe += x[j] * 0.0f;  // NaN once any x is NaN or infinite
  }
  *finite = probe == 0.0f;
  return mx;
}

float row_sum(const float* x, int64_t n) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) sum += x[j];
  return sum;
}

// Row i of S becomes the causal softmax over entries 0..i (zeros up to its
// block's end); lse[i] is the row's log-sum-exp.
void causal_softmax_rows(float* s, float* lse, int64_t t) {
  for (int64_t i = 0; i < t; ++i) {
    float* row = s + i * t;
    bool finite = false;
    float mx = finite_row_max(row, i + 1, &finite);
    float sum = 0;
    if (finite) {
      exp_below(row, i + 1, mx);
      sum = row_sum(row, i + 1);
    } else {
      mx = row[0];
      for (int64_t j = 1; j <= i; ++j) mx = std::max(mx, row[j]);
      for (int64_t j = 0; j <= i; ++j) {
        row[j] = attn::shifted_exp(row[j], mx);
        sum += row[j];
      }
    }
    float inv = attn::row_inv_sum(sum);
    for (int64_t j = 0; j <= i; ++j) row[j] *= inv;
    std::fill(row + i + 1, row + block_end(i, t), 0.0f);
    lse[i] = attn::row_lse(mx, sum);
  }
}

}  // namespace

void attention_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  auto g = geom(a, in);
  over_heads(g.heads, [&](int64_t s, int64_t e) {
    std::vector<float> p(static_cast<size_t>(g.t * g.t));
    for (int64_t h = s; h < e; ++h) {
      const int64_t qb = g.rows.base(h, g.d), vb = g.rows.base(h, g.dv);
      const float *q = F(in[0]) + qb, *k = F(in[1]) + qb, *v = F(in[2]) + vb;
      causal_abt(q, g.ld, k, g.ld, g.t, g.d, g.scale, p.data());
      causal_softmax_rows(p.data(), F(out[1]) + h * g.t, g.t);
      causal_sb(p.data(), v, g.ldv, g.t, g.dv, 1.0f, F(out[0]) + vb, g.ldv);
    }
  });
}

void attention_backward(const OpAttrs& a, const TensorView* in, const TensorView* out, const TensorView& gout,
                        TensorView* gin) {
  auto g = geom(a, in);
  over_heads(g.heads, [&](int64_t s, int64_t e) {
    std::vector<float> p(static_cast<size_t>(g.t * g.t)), ds(p.size());
    for (int64_t h = s; h < e; ++h) {
      const int64_t qb = g.rows.base(h, g.d), vb = g.rows.base(h, g.dv);
      const float *q = F(in[0]) + qb, *k = F(in[1]) + qb, *v = F(in[2]) + vb;
      const float *o = F(out[0]) + vb, *dout = F(gout) + vb;
      const float* lse = F(out[1]) + h * g.t;
      // P = exp(scale q k^T - lse), 0 above the diagonal
      causal_abt(q, g.ld, k, g.ld, g.t, g.d, g.scale, p.data());
      for (int64_t i = 0; i < g.t; ++i) {
        float* row = p.data() + i * g.t;
        bool finite = false;
        finite_row_max(row, i + 1, &finite);
        if (finite && std::isfinite(lse[i]))
          exp_below(row, i + 1, lse[i]);  // lse >= every score of the row
        else
          for (int64_t j = 0; j <= i; ++j) row[j] = attn::prob_from_lse(row[j], lse[i]);
        std::fill(row + i + 1, row + block_end(i, g.t), 0.0f);
      }
      if (gin[2].defined()) causal_stb(p.data(), dout, g.ldv, g.t, g.dv, 1.0f, F(gin[2]) + vb, g.ldv);
      if (!gin[0].defined() && !gin[1].defined()) continue;
      causal_abt(dout, g.ldv, v, g.ldv, g.t, g.dv, 1.0f, ds.data());  // dP
      for (int64_t i = 0; i < g.t; ++i) {
        float* row = ds.data() + i * g.t;
        const float* prow = p.data() + i * g.t;
        float delta = 0;  // D_i = rowsum(dO * O)
        for (int64_t c = 0; c < g.dv; ++c) delta += dout[i * g.ldv + c] * o[i * g.ldv + c];
        for (int64_t j = 0; j <= i; ++j) row[j] = attn::score_grad(prow[j], row[j], delta);
        std::fill(row + i + 1, row + block_end(i, g.t), 0.0f);
      }
      if (gin[0].defined()) causal_sb(ds.data(), k, g.ld, g.t, g.d, g.scale, F(gin[0]) + qb, g.ld);
      if (gin[1].defined()) causal_stb(ds.data(), q, g.ld, g.t, g.d, g.scale, F(gin[1]) + qb, g.ld);
    }
  });
}

}  // namespace strata::cpu
