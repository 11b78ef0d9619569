// The CUDA attention kernels' tile loops run on the host: the forward's query
// tiles, causal key tiles and online softmax per row, and the backward's key
// tiles, query tiles from the diagonal on, P recomputed from the lse and dS =
// P (dP - D) -- with the very attn:: functions and tile shapes the kernels use,
// padding rows and columns included -- against plain causal attention in double
// with the classic backward dS = P (dP - rowsum(P dP)). What this cannot see is
// the GPU's part: shared-memory races, WMMA layouts, half rounding; the gpu test
// (tests/kernels/cuda/test_cuda_attention.cpp) checks those on a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention_tiling.h"

namespace strata::attn {
namespace {

struct Problem {
  int64_t t;
  int d, dv;
  float scale;
  std::vector<float> q, k, v, dout;  // [t][d], [t][d], [t][dv], [t][dv]
};

Problem make_problem(int64_t t, int d, int dv, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  Problem p{t, d, dv, 1.0f / std::sqrt(static_cast<float>(d)), {}, {}, {}, {}};
  for (auto* x : {&p.q, &p.k}) x->resize(static_cast<size_t>(t * d));
  for (auto* x : {&p.v, &p.dout}) x->resize(static_cast<size_t>(t * dv));
  for (auto* x : {&p.q, &p.k, &p.v, &p.dout})
    for (auto& e : *x) e = u(rng);
  return p;
}

float dot(const float* a, const float* b, int n) {
  float s = 0;
  for (int e = 0; e < n; ++e) s += a[e] * b[e];
  return s;
}

// attn_forward_kernel's loops: query tiles, the causal key tiles, the online
// softmax per row, padding rows and columns masked.
void tiled_forward(const Problem& p, Tile tl, std::vector<float>& o, std::vector<float>& lse) {
  o.assign(static_cast<size_t>(p.t * p.dv), NAN);
  lse.assign(static_cast<size_t>(p.t), NAN);
  for (int64_t i = 0; i < ceil_div(p.t, tl.br); ++i) {
    for (int r = 0; r < tl.br; ++r) {
      int64_t row = i * tl.br + r;
      float m = -INFINITY, l = 0;
      std::vector<float> acc(static_cast<size_t>(p.dv), 0.0f);
      for (int64_t j = 0; j < forward_kv_tiles(i, p.t, tl); ++j) {
        std::vector<float> s(static_cast<size_t>(tl.bc));
        float tile_max = -INFINITY;
        for (int c = 0; c < tl.bc; ++c) {
          int64_t key = j * tl.bc + c;
          float raw = row < p.t && key < p.t ? dot(&p.q[row * p.d], &p.k[key * p.d], p.d) : 0.0f;
          s[c] = masked_score(raw, p.scale, row, key, p.t);
          tile_max = std::max(tile_max, s[c]);
        }
        float alpha = online_rescale(m, l, tile_max);
        for (auto& x : acc) x *= alpha;
        for (int c = 0; c < tl.bc; ++c) {
          float e = shifted_exp(s[c], m);
          l += e;
          int64_t key = j * tl.bc + c;
          for (int e2 = 0; e2 < p.dv && key < p.t; ++e2) acc[e2] += e * p.v[key * p.dv + e2];
        }
      }
      if (row >= p.t) continue;
      for (int e = 0; e < p.dv; ++e) o[row * p.dv + e] = acc[e] * row_inv_sum(l);
      lse[row] = row_lse(m, l);
    }
  }
}

// attn_backward_kernel's loops: key tiles, the query tiles from the diagonal on,
// P from the lse, dS = P (dP - D), dQ summed over key tiles.
void tiled_backward(const Problem& p, Tile tl, const std::vector<float>& o, const std::vector<float>& lse,
                    std::vector<float>& dq, std::vector<float>& dk, std::vector<float>& dv) {
  std::vector<float> delta(static_cast<size_t>(p.t));
  for (int64_t r = 0; r < p.t; ++r) delta[r] = dot(&p.dout[r * p.dv], &o[r * p.dv], p.dv);
  dq.assign(p.q.size(), 0.0f);
  dk.assign(p.k.size(), NAN);
  dv.assign(p.v.size(), NAN);
  for (int64_t j = 0; j < ceil_div(p.t, tl.bc); ++j) {
    std::vector<float> dk_acc(static_cast<size_t>(tl.bc * p.d), 0.0f),
        dv_acc(static_cast<size_t>(tl.bc * p.dv), 0.0f);
    for (int64_t i = backward_first_q_tile(j, tl); i < ceil_div(p.t, tl.br); ++i)
      for (int r = 0; r < tl.br; ++r)
        for (int c = 0; c < tl.bc; ++c) {
          int64_t row = i * tl.br + r, key = j * tl.bc + c;
          if (row >= p.t || key >= p.t) continue;  // the kernel's zero padding contributes nothing
          float s = masked_score(dot(&p.q[row * p.d], &p.k[key * p.d], p.d), p.scale, row, key, p.t);
          float pr = prob_from_lse(s, lse[row]);
          float ds = score_grad(pr, dot(&p.dout[row * p.dv], &p.v[key * p.dv], p.dv), delta[row]);
          for (int e = 0; e < p.dv; ++e) dv_acc[c * p.dv + e] += pr * p.dout[row * p.dv + e];
          for (int e = 0; e < p.d; ++e) {
            dk_acc[c * p.d + e] += ds * p.q[row * p.d + e];
            dq[row * p.d + e] += p.scale * ds * p.k[key * p.d + e];
          }
        }
    for (int c = 0; c < tl.bc && j * tl.bc + c < p.t; ++c) {
      int64_t key = j * tl.bc + c;
      for (int e = 0; e < p.d; ++e) dk[key * p.d + e] = p.scale * dk_acc[c * p.d + e];
      for (int e = 0; e < p.dv; ++e) dv[key * p.dv + e] = dv_acc[c * p.dv + e];
    }
  }
}

// Plain causal attention in double, the classic backward dS = P (dP - rowsum(P dP)).
void plain(const Problem& p, std::vector<double>& o, std::vector<double>& dq, std::vector<double>& dk,
           std::vector<double>& dv) {
  o.assign(static_cast<size_t>(p.t * p.dv), 0);
  dq.assign(p.q.size(), 0), dk.assign(p.k.size(), 0), dv.assign(p.v.size(), 0);
  for (int64_t i = 0; i < p.t; ++i) {
    std::vector<double> pr(static_cast<size_t>(i + 1)), dp(pr.size());
    double mx = -INFINITY, sum = 0, r = 0;
    for (int64_t j = 0; j <= i; ++j) {
      double s = 0;
      for (int e = 0; e < p.d; ++e) s += double(p.q[i * p.d + e]) * p.k[j * p.d + e];
      pr[j] = s * p.scale;
      mx = std::max(mx, pr[j]);
    }
    for (auto& x : pr) sum += (x = std::exp(x - mx));
    for (int64_t j = 0; j <= i; ++j) {
      pr[j] /= sum;
      for (int e = 0; e < p.dv; ++e) {
        o[i * p.dv + e] += pr[j] * p.v[j * p.dv + e];
        dp[j] += double(p.dout[i * p.dv + e]) * p.v[j * p.dv + e];
        dv[j * p.dv + e] += pr[j] * p.dout[i * p.dv + e];
      }
      r += pr[j] * dp[j];
    }
    for (int64_t j = 0; j <= i; ++j)
      for (int e = 0; e < p.d; ++e) {
        double ds = pr[j] * (dp[j] - r) * p.scale;
        dq[i * p.d + e] += ds * p.k[j * p.d + e];
        dk[j * p.d + e] += ds * p.q[i * p.d + e];
      }
  }
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  double scale = 1;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  for (size_t e = 0; e < got.size(); ++e)
    ASSERT_NEAR(got[e], want[e], 2e-5 * scale) << what << " element " << e;
}

TEST(AttentionTiling, TiledForwardAndBackwardMatchPlainAttention) {
  struct Shape {
    int64_t t;
    int d, dv;
  };
  for (Shape s : {Shape{1, 16, 16}, Shape{37, 16, 16}, Shape{67, 64, 64}, Shape{45, 128, 128},
                  Shape{70, 72, 40}, Shape{129, 3, 5}})
    for (int bytes : {2, 4}) {
      int dmax = std::max(s.d, s.dv) <= 64 ? 64 : 128;
      Problem p = make_problem(s.t, s.d, s.dv, 11 + s.t);
      std::vector<float> o, lse, dq, dk, dv;
      tiled_forward(p, forward_tile(bytes, dmax), o, lse);
      tiled_backward(p, backward_tile(bytes, dmax), o, lse, dq, dk, dv);
      std::vector<double> ro, rdq, rdk, rdv;
      plain(p, ro, rdq, rdk, rdv);
      SCOPED_TRACE("t " + std::to_string(s.t) + " d " + std::to_string(s.d) + " dv " + std::to_string(s.dv) +
                   " elem bytes " + std::to_string(bytes));
      expect_close(o, ro, "O");
      expect_close(dq, rdq, "dQ");
      expect_close(dk, rdk, "dK");
      expect_close(dv, rdv, "dV");
    }
}

}  // namespace
}  // namespace strata::attn
