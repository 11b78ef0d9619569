// batch_norm and layer_norm on f32. batch_norm views x as [N, C, S] and gives
// each thread a block of channels; within a block it walks n, then the block's
// channels, then s, so that both [N, C] (S = 1: a contiguous slice of each row)
// and [N, C, H, W] (contiguous planes) stream through memory. Training reads x
// from memory twice (the statistics, then normalise) and writes y once;
// statistics accumulate in double, on 8 independent lanes per plane. Backward reads x and g twice (two
// channel sums, then dx). A fused ReLU (OpAttrs::relu) costs no pass: forward takes max(0, .) as it writes
// y, and backward zeroes g where the pre-activation, recomputed from the x it reads anyway, was <= 0.
// Against batch_norm then relu that is one read and one write of the activations fewer forward and two
// reads and a write fewer backward (the CNN's step 2310 -> 2680 samples/s on 2 AVX-512 cores).
// A fused 2x2 max pool after it (OpAttrs::max_pool_2x2) writes only the pooled y and each window's
// maximum's index forward (no full-size y, no separate pool pass); backward sends the pooled gradient to
// those indices in a plane-sized buffer that stays in L1 and runs the plain backward on it, so no full-size
// g is written or read (the CNN's first two blocks, [128, 32, 28, 28] and [128, 64, 14, 14], best of 15:
// forward 2.1-2.3 -> 1.2-1.3 ms and 1.5-1.6 -> 0.6-0.7 ms, backward 2.6-3.1 -> 2.3-2.4 and 1.1 -> 1.0).
// layer_norm gives each thread a block of rows (three passes over a row that stays in
// cache, its row sums on the same double lanes: with a single double chain per row the forward alone
// was 1.4% of the tiny GPT's step, 0.5% on the lanes); its dgamma/dbeta reduction over rows is split by
// column blocks instead, so every thread owns disjoint outputs and the result does not depend on the thread
// count. Parameters and running statistics may be FP32 beside half x: the dispatch widens each half buffer on
// its own and passes f32 ones through, so the running statistics are updated in their own storage. The
// per-channel and per-row formulas are kernels/norm_math.h, shared with CUDA.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/backends.h"
#include "kernels/cpu/common.h"
#include "kernels/norm_math.h"
#include "kernels/pool_math.h"

namespace strata::cpu {
namespace {

struct NCS {
  int64_t N, C, S;
  explicit NCS(const Shape& s)
      : N(s[0]), C(s[1]), S(s[0] != 0 && s[1] != 0 ? shape_numel(s) / (s[0] * s[1]) : 0) {}
  int64_t grain() const { return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, N * S)); }
};

// acc[c - cb] += f(plane of (n, c)) over n, for channels [cb, ce)
template <typename Fn>
void for_planes(const NCS& g, int64_t cb, int64_t ce, Fn fn) {
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t c = cb; c < ce; ++c) fn(c, (n * g.C + c) * g.S);
}

// fn(std::true_type{}) when a ReLU is fused, else fn(std::false_type{}): the
// flag becomes a constant of each loop, so the loop without it is the plain one.
template <typename Fn>
void with_relu(bool relu, Fn fn) {
  if (relu)
    fn(std::true_type{});
  else
    fn(std::false_type{});
}

// The sum over k in [0, n) of term(k), in double, on kLanes independent
// accumulators: one chain of dependent double adds per plane bounded the
// statistics passes (the CNN's batch_norm was 20% of its CPU step).
constexpr int64_t kLanes = 8;
template <typename Fn>
double lane_sum(int64_t n, Fn term) {
  double lanes[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int64_t j = 0; j < kLanes; ++j) lanes[j] += static_cast<double>(term(k + j));
  double s = 0;
  for (; k < n; ++k) s += static_cast<double>(term(k));
  for (double l : lanes) s += l;
  return s;
}

// A fused 2x2 max pool (OpAttrs::max_pool_2x2): x's planes are h x w, y's ho x wo.
struct Pool2x2 {
  int64_t h, w, ho, wo;
  explicit Pool2x2(const Shape& s) : h(s[2]), w(s[3]), ho(s[2] / 2), wo(s[3] / 2) {}
  // each window's top-left cell in the plane, row-major
  std::vector<int32_t> tops() const {
    std::vector<int32_t> t(static_cast<size_t>(ho * wo));
    for (int64_t i = 0; i < ho; ++i)
      for (int64_t j = 0; j < wo; ++j)
        t[static_cast<size_t>(i * wo + j)] = static_cast<int32_t>(2 * i * w + 2 * j);
    return t;
  }
};

// One plane of y under a fused pool: the max of bn(x) over each 2x2 window,
// through the ReLU when one is fused, and the index in the plane of the window's
// first maximum. x's plane is read once and only y's quarter (and an index per
// window) written. One loop over the plane's windows, their top-left cells from
// `tops`, not a loop per row of windows: the CNN's rows are 14 and 7 windows, too
// short for the vector loop, and the per-row form took 3.1 ms on one core for
// the second block where this one takes 1.0 (value alone: 0.6).
template <typename Relu>
void pooled_plane(const float* xp, norm::ScaleShift s, const Pool2x2& q, const int32_t* tops, Relu relu,
                  float* yp, int32_t* at) {
  const int64_t windows = q.ho * q.wo;
  const int32_t below = static_cast<int32_t>(q.w);
#pragma omp simd
  for (int64_t o = 0; o < windows; ++o) {
    int32_t t = tops[o];
    auto m = pool::window_max_2x2(norm::batch_norm_affine(xp[t], s), norm::batch_norm_affine(xp[t + 1], s),
                                  norm::batch_norm_affine(xp[t + below], s),
                                  norm::batch_norm_affine(xp[t + below + 1], s), below);
    yp[o] = norm::batch_norm_out(m.value, relu);
    at[o] = t + m.offset;
  }
}

// The gradient of bn's output over one plane of x under a fused pool, into a
// plane-sized buffer that stays in L1 (never a full-size tensor): the pooled
// gradient at each window's saved index, zeroed when a fused ReLU stopped it
// (the window's y, relu(max), is 0 exactly when the max was <= 0), 0 elsewhere.
// That is what max_pool2d's backward followed by the ReLU's mask gives, so the
// sums over it that follow are the unfused chain's, term for term and in order.
// Reads neither x nor anything full-size.
template <typename Relu>
void unpool_plane_grad(const float* gp, const float* yp, const int32_t* at, const Pool2x2& q, Relu relu,
                       float* ge) {
  std::fill(ge, ge + q.h * q.w, 0.0f);
#pragma omp simd  // a scatter: the windows' indices are distinct
  for (int64_t o = 0; o < q.ho * q.wo; ++o)
    ge[at[o]] = norm::batch_norm_grad_through_relu(gp[o], yp[o], relu);
}

// dgamma[j] and dbeta[j] for the w columns from j0, summed over every row in
// order, in double, in local arrays: with W = kStrip the width is a constant and
// GCC keeps both in vector registers across the rows, where updating a heap array
// row by row was a load and a store per element. W = 0: any width up to kStrip.
constexpr int64_t kStrip = 16;
template <int64_t W>
void layer_norm_param_grads(const float* x, const float* go, const float* mean, const float* rstd,
                            int64_t rows, int64_t n, int64_t j0, int64_t w, float* dgamma, float* dbeta) {
  const int64_t width = W > 0 ? W : w;
  double dg[kStrip] = {}, db[kStrip] = {};
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * n + j0, *gr = go + r * n + j0;
    const float m = mean[r], rs = rstd[r];
    for (int64_t j = 0; j < width; ++j) {
      dg[j] += static_cast<double>(gr[j] * ((xr[j] - m) * rs));
      db[j] += gr[j];
    }
  }
  for (int64_t j = 0; j < width; ++j) {
    if (dgamma) dgamma[j0 + j] = static_cast<float>(dg[j]);
    if (dbeta) dbeta[j0 + j] = static_cast<float>(db[j]);
  }
}

}  // namespace

void batch_norm_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  NCS g(in[0].shape);
  const float *x = F(in[0]), *gamma = F(in[1]), *beta = F(in[2]);
  float *rm = F(in[3]), *rv = F(in[4]), *y = F(out[0]), *mean_out = F(out[1]), *invstd_out = F(out[2]);
  double M = static_cast<double>(g.N * g.S);
  parallel_for(g.C, g.grain(), [&](int64_t cb, int64_t ce) {
    std::vector<double> acc(static_cast<size_t>(ce - cb), 0.0);
    std::vector<float> mean(acc.size());
    std::vector<norm::ScaleShift> affine(acc.size());
    if (a.training) {
      // one pass: sums of d = x - K and d^2 around a value K of the channel (its
      // first), so that m2 = sum d^2 - (sum d)^2 / M does not cancel the way
      // sum x^2 - M mean^2 does when |mean| >> std; the plane's second read
      // comes from L1
      std::vector<double> sum_d(acc.size(), 0.0);
      std::vector<float> pivot(acc.size());
      for (int64_t c = cb; c < ce; ++c) pivot[c - cb] = g.N * g.S > 0 ? x[c * g.S] : 0.0f;
      for_planes(g, cb, ce, [&](int64_t c, int64_t off) {
        const float* p = x + off;
        float k0 = pivot[c - cb];
        sum_d[c - cb] += lane_sum(g.S, [p, k0](int64_t k) { return p[k] - k0; });
        acc[c - cb] += lane_sum(g.S, [p, k0](int64_t k) { return (p[k] - k0) * (p[k] - k0); });
      });
      for (int64_t c = cb; c < ce; ++c) {
        double sd = sum_d[c - cb];
        mean[c - cb] = static_cast<float>(static_cast<double>(pivot[c - cb]) + sd / M);
        acc[c - cb] = std::max(0.0, acc[c - cb] - sd * sd / M);  // the centred sum of squares
      }
      for (int64_t c = cb; c < ce; ++c) {
        mean_out[c] = mean[c - cb];
        invstd_out[c] = norm::invstd_from_m2(acc[c - cb], M, a.eps);
        rm[c] = norm::running_mean_update(rm[c], mean[c - cb], a.momentum);
        rv[c] = norm::running_var_update(rv[c], acc[c - cb], M, a.momentum);
      }
    } else {
      for (int64_t c = cb; c < ce; ++c) {
        mean_out[c] = rm[c];
        invstd_out[c] = norm::invstd_from_m2(rv[c], 1.0, a.eps);
      }
    }
    for (int64_t c = cb; c < ce; ++c)
      affine[c - cb] = norm::batch_norm_scale_shift(gamma[c], beta[c], mean_out[c], invstd_out[c]);
    // y = x scale + shift, and max(0, .) in the same pass when a ReLU is fused:
    // a separate relu op would read and write the whole tensor once more; a fused
    // pool writes only each window's maximum
    with_relu(a.relu, [&](auto relu) {
      if (a.max_pool_2x2) {
        Pool2x2 q(in[0].shape);
        int32_t* at = out[3].as<int32_t>();
        std::vector<int32_t> tops = q.tops();
        for_planes(g, cb, ce, [&](int64_t c, int64_t off) {
          int64_t pooled = off / g.S * q.ho * q.wo;
          pooled_plane(x + off, affine[c - cb], q, tops.data(), relu, y + pooled, at + pooled);
        });
        return;
      }
      for_planes(g, cb, ce, [&](int64_t c, int64_t off) {
        norm::ScaleShift s = affine[c - cb];
        for (int64_t k = 0; k < g.S; ++k)
          y[off + k] = norm::batch_norm_out(norm::batch_norm_affine(x[off + k], s), relu);
      });
    });
  });
}

void batch_norm_backward(const OpAttrs& a, const TensorView* in, const TensorView* out,
                         const TensorView& gout, TensorView* gin) {
  NCS g(in[0].shape);
  const float *x = F(in[0]), *gamma = F(in[1]), *beta = F(in[2]), *go = F(gout), *mean = F(out[1]),
              *invstd = F(out[2]);
  double M = static_cast<double>(g.N * g.S);
  parallel_for(g.C, g.grain(), [&](int64_t cb, int64_t ce) {
    size_t w = static_cast<size_t>(ce - cb);
    std::vector<double> sum_g(w, 0.0), sum_gx(w, 0.0);
    std::vector<norm::ScaleShift> affine(w);  // the forward's, for a fused ReLU's mask
    for (int64_t c = cb; c < ce; ++c)
      affine[c - cb] = norm::batch_norm_scale_shift(gamma[c], beta[c], mean[c], invstd[c]);
    // Calls fn(c, off, g of the plane, relu): g through a fused ReLU is zeroed where
    // the forward's pre-activation (recomputed from x, so no read of y) was <= 0.
    // With a fused pool the plane's g is first sent back from the pooled gradient
    // into `plane`, with the mask applied, so fn sees no ReLU.
    std::vector<float> plane(a.max_pool_2x2 ? static_cast<size_t>(g.S) : 0);
    auto each_plane_grad = [&](auto fn) {
      with_relu(a.relu, [&](auto relu) {
        if (!a.max_pool_2x2) {
          for_planes(g, cb, ce, [&](int64_t c, int64_t off) { fn(c, off, go + off, relu); });
          return;
        }
        Pool2x2 q(in[0].shape);
        const int32_t* at = out[3].as<const int32_t>();
        const float* y = F(out[0]);
        for_planes(g, cb, ce, [&](int64_t c, int64_t off) {
          int64_t pooled = off / g.S * q.ho * q.wo;
          unpool_plane_grad(go + pooled, y + pooled, at + pooled, q, relu, plane.data());
          fn(c, off, plane.data(), std::false_type{});
        });
      });
    };
    each_plane_grad([&](int64_t c, int64_t off, const float* gp, auto relu) {
      const float* xp = x + off;
      float m = mean[c], is = invstd[c];
      norm::ScaleShift s = affine[c - cb];
      auto ge = [gp, xp, s, relu](int64_t k) {
        return norm::batch_norm_grad_through_relu(gp[k], norm::batch_norm_affine(xp[k], s), relu);
      };
      sum_g[c - cb] += lane_sum(g.S, ge);
      sum_gx[c - cb] += lane_sum(g.S, [ge, xp, m, is](int64_t k) { return ge(k) * ((xp[k] - m) * is); });
    });
    for (int64_t c = cb; c < ce; ++c) {
      if (gin[1].defined()) F(gin[1])[c] = static_cast<float>(sum_gx[c - cb]);
      if (gin[2].defined()) F(gin[2])[c] = static_cast<float>(sum_g[c - cb]);
    }
    if (!gin[0].defined()) return;
    float* dx = F(gin[0]);
    each_plane_grad([&](int64_t c, int64_t off, const float* gp, auto relu) {
      const float* xp = x + off;
      float m = mean[c], is = invstd[c], gs = gamma[c] * is;
      norm::ScaleShift s = affine[c - cb];
      float mg = static_cast<float>(sum_g[c - cb] / M), mgx = static_cast<float>(sum_gx[c - cb] / M);
      for (int64_t k = 0; k < g.S; ++k) {
        float ge = norm::batch_norm_grad_through_relu(gp[k], norm::batch_norm_affine(xp[k], s), relu);
        dx[off + k] = norm::batch_norm_dx(ge, (xp[k] - m) * is, gs, mg, mgx, a.training);
      }
    });
  });
}

void layer_norm_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  if (in[0].shape.back() == 0) return;  // no row to normalise
  int64_t n = in[0].shape.back(), rows = in[0].numel() / n;
  const float *x = F(in[0]), *gamma = F(in[1]), *beta = F(in[2]);
  float *y = F(out[0]), *mean_out = F(out[1]), *rstd_out = F(out[2]);
  parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / n), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float* xr = x + r * n;
      double s = lane_sum(n, [xr](int64_t j) { return xr[j]; });
      float m = static_cast<float>(s / static_cast<double>(n));
      double ss = lane_sum(n, [xr, m](int64_t j) { return (xr[j] - m) * (xr[j] - m); });
      float rstd = norm::invstd_from_m2(ss, static_cast<double>(n), a.eps);
      mean_out[r] = m;
      rstd_out[r] = rstd;
      float* yr = y + r * n;
      for (int64_t j = 0; j < n; ++j) yr[j] = (xr[j] - m) * rstd * gamma[j] + beta[j];
    }
  });
}

void layer_norm_backward(const OpAttrs&, const TensorView* in, const TensorView* out, const TensorView& gout,
                         TensorView* gin) {
  if (in[0].shape.back() == 0) return;  // no row to normalise
  int64_t n = in[0].shape.back(), rows = in[0].numel() / n;
  const float *x = F(in[0]), *gamma = F(in[1]), *go = F(gout), *mean = F(out[1]), *rstd = F(out[2]);
  if (gin[0].defined()) {
    float* dx = F(gin[0]);
    parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / n), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const float *xr = x + r * n, *gr = go + r * n;
        float m = mean[r], rs = rstd[r];
        double m1 = lane_sum(n, [gr, gamma](int64_t j) { return gr[j] * gamma[j]; });
        double m2 =
            lane_sum(n, [gr, gamma, xr, m, rs](int64_t j) { return gr[j] * gamma[j] * ((xr[j] - m) * rs); });
        float a1 = static_cast<float>(m1 / static_cast<double>(n)),
              a2 = static_cast<float>(m2 / static_cast<double>(n));
        for (int64_t j = 0; j < n; ++j)
          dx[r * n + j] = norm::layer_norm_dx(gr[j] * gamma[j], (xr[j] - m) * rs, rs, a1, a2);
      }
    });
  }
  if (!gin[1].defined() && !gin[2].defined()) return;
  // column blocks: each thread owns dgamma/dbeta[jb, je) and walks every row,
  // kStrip columns at a time (layer_norm_param_grads)
  parallel_for(n, std::max<int64_t>(16, kElementwiseGrain / std::max<int64_t>(1, rows)),
               [&](int64_t jb, int64_t je) {
                 float* dgamma = gin[1].defined() ? F(gin[1]) : nullptr;
                 float* dbeta = gin[2].defined() ? F(gin[2]) : nullptr;
                 int64_t j0 = jb;
                 for (; j0 + kStrip <= je; j0 += kStrip)
                   layer_norm_param_grads<kStrip>(x, go, mean, rstd, rows, n, j0, kStrip, dgamma, dbeta);
                 if (j0 < je)
                   layer_norm_param_grads<0>(x, go, mean, rstd, rows, n, j0, je - j0, dgamma, dbeta);
               });
}

}  // namespace strata::cpu
