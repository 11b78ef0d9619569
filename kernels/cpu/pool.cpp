// Pooling on f32, NCHW, split over (image, channel) planes across threads. Each
// output cell reads its window straight from the input plane (kernel clipped to
// the unpadded cells once per row and column), so the input is read about
// (kernel/stride)^2 times from cache and written outputs stream out once. max
// keeps the first maximum in row-major window order (the reference's tie rule)
// and saves its flat index in the plane; backward scatters dy to those indices
// (one plane per thread: no races). avg divides by the unpadded cell count.
#include <algorithm>

#include "kernels/backends.h"
#include "kernels/cpu/common.h"
#include "kernels/pool_math.h"

namespace strata::cpu {
namespace {

struct PoolGeom {
  int64_t planes, h, w, ho, wo, kh, kw, sh, sw, ph, pw;
};

PoolGeom geom(const OpAttrs& a, const TensorView& x, const TensorView& y) {
  return {x.size(0) * x.size(1), x.size(2),   x.size(3),   y.size(2),    y.size(3),   a.kernel[0],
          a.kernel[1],           a.stride[0], a.stride[1], a.padding[0], a.padding[1]};
}

// Calls f(plane, output cell, r0, r1, c0, c1) with the window clipped to the plane.
template <typename Fn>
void each_window(const PoolGeom& g, Fn f) {
  int64_t per_plane = std::max<int64_t>(1, g.ho * g.wo * g.kh * g.kw);
  parallel_for(g.planes, std::max<int64_t>(1, kElementwiseGrain / per_plane), [&](int64_t s, int64_t e) {
    for (int64_t p = s; p < e; ++p)
      for (int64_t i = 0; i < g.ho; ++i) {
        int64_t r0 = std::max<int64_t>(0, i * g.sh - g.ph),
                r1 = std::min<int64_t>(g.h, i * g.sh - g.ph + g.kh);
        for (int64_t j = 0; j < g.wo; ++j) {
          int64_t c0 = std::max<int64_t>(0, j * g.sw - g.pw),
                  c1 = std::min<int64_t>(g.w, j * g.sw - g.pw + g.kw);
          f(p, i * g.wo + j, r0, r1, c0, c1);
        }
      }
  });
}

bool is_2x2_stride2(const PoolGeom& g) {
  return g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0;
}

// 2x2 windows at stride 2, unpadded (most CNNs), one output row at a time: the
// two input rows' even and odd cells are four stride-2 streams, and the first
// maximum in window order (the reference's tie rule) is three compares and
// selects per cell, written so that GCC vectorises the row (stride-2 loads, the
// selects as blends; pool.cpp is built without trapping math, which otherwise
// keeps each select a branch): the scalar loop was 8-10% of the CNN's CPU step,
// and this one takes half its time. The saved index is the flat cell in the plane.
void max_pool_2x2(const PoolGeom& g, const float* x, float* y, int64_t* idx) {
  int64_t per_plane = std::max<int64_t>(1, 4 * g.ho * g.wo);
  parallel_for(g.planes, std::max<int64_t>(1, kElementwiseGrain / per_plane), [&](int64_t s, int64_t e) {
    for (int64_t p = s; p < e; ++p)
      for (int64_t i = 0; i < g.ho; ++i) {
        int64_t top = 2 * i * g.w, out = (p * g.ho + i) * g.wo;
        const float* r0 = x + p * g.h * g.w + top;
        const float* r1 = r0 + g.w;
        float* yr = y + out;
        int64_t* ir = idx + out;
        const int64_t below = g.w, wo = g.wo;  // locals: stores through yr/ir could alias g
        for (int64_t j = 0; j < wo; ++j) {
          auto m = pool::window_max_2x2(r0[2 * j], r0[2 * j + 1], r1[2 * j], r1[2 * j + 1], below);
          yr[j] = m.value;
          ir[j] = top + 2 * j + m.offset;
        }
      }
  });
}

}  // namespace

void max_pool2d_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  auto g = geom(a, in[0], out[0]);
  const float* x = F(in[0]);
  float* y = F(out[0]);
  int64_t* idx = out[1].as<int64_t>();
  if (is_2x2_stride2(g)) return max_pool_2x2(g, x, y, idx);
  each_window(g, [&](int64_t p, int64_t o, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const float* xp = x + p * g.h * g.w;
    int64_t best = r0 * g.w + c0;
    float bv = xp[best];
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = c0; c < c1; ++c)
        if (xp[r * g.w + c] > bv) {
          bv = xp[r * g.w + c];
          best = r * g.w + c;
        }
    y[p * g.ho * g.wo + o] = bv;
    idx[p * g.ho * g.wo + o] = best;
  });
}

void max_pool2d_backward(const OpAttrs& a, const TensorView* in, const TensorView* out,
                         const TensorView& gout, TensorView* gin) {
  if (!gin[0].defined()) return;
  auto g = geom(a, in[0], out[0]);
  const float* dy = F(gout);
  const int64_t* idx = out[1].as<int64_t>();
  float* dx = F(gin[0]);
  int64_t plane = g.h * g.w, oplane = g.ho * g.wo;
  parallel_for(g.planes, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, plane)),
               [&](int64_t s, int64_t e) {
                 for (int64_t p = s; p < e; ++p) {
                   float* dxp = dx + p * plane;
                   std::fill(dxp, dxp + plane, 0.0f);
                   for (int64_t o = 0; o < oplane; ++o) dxp[idx[p * oplane + o]] += dy[p * oplane + o];
                 }
               });
}

void avg_pool2d_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  auto g = geom(a, in[0], out[0]);
  const float* x = F(in[0]);
  float* y = F(out[0]);
  each_window(g, [&](int64_t p, int64_t o, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const float* xp = x + p * g.h * g.w;
    float s = 0;
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = c0; c < c1; ++c) s += xp[r * g.w + c];
    y[p * g.ho * g.wo + o] = s / static_cast<float>((r1 - r0) * (c1 - c0));
  });
}

void avg_pool2d_backward(const OpAttrs& a, const TensorView* in, const TensorView* out,
                         const TensorView& gout, TensorView* gin) {
  if (!gin[0].defined()) return;
  auto g = geom(a, in[0], out[0]);
  const float* dy = F(gout);
  float* dx = F(gin[0]);
  int64_t plane = g.h * g.w, oplane = g.ho * g.wo;
  // planes are zeroed by the thread that owns them, just before their windows
  parallel_for(g.planes, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, plane)),
               [&](int64_t s, int64_t e) {
                 for (int64_t p = s; p < e; ++p) {
                   float* dxp = dx + p * plane;
                   std::fill(dxp, dxp + plane, 0.0f);
                   for (int64_t i = 0; i < g.ho; ++i) {
                     int64_t r0 = std::max<int64_t>(0, i * g.sh - g.ph),
                             r1 = std::min<int64_t>(g.h, i * g.sh - g.ph + g.kh);
                     for (int64_t j = 0; j < g.wo; ++j) {
                       int64_t c0 = std::max<int64_t>(0, j * g.sw - g.pw),
                               c1 = std::min<int64_t>(g.w, j * g.sw - g.pw + g.kw);
                       float v = dy[p * oplane + i * g.wo + j] / static_cast<float>((r1 - r0) * (c1 - c0));
                       for (int64_t r = r0; r < r1; ++r)
                         for (int64_t c = c0; c < c1; ++c) dxp[r * g.w + c] += v;
                     }
                   }
                 }
               });
}

void global_avg_pool2d_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  int64_t plane = in[0].size(2) * in[0].size(3);
  const float* x = F(in[0]);
  float* y = F(out[0]);
  parallel_for(out[0].numel(), std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, plane)),
               [&](int64_t s, int64_t e) {
                 for (int64_t p = s; p < e; ++p) {
                   double acc = 0;
                   for (int64_t q = 0; q < plane; ++q) acc += x[p * plane + q];
                   y[p] = static_cast<float>(acc / static_cast<double>(plane));
                 }
               });
}

void global_avg_pool2d_backward(const OpAttrs&, const TensorView* in, const TensorView*,
                                const TensorView& gout, TensorView* gin) {
  if (!gin[0].defined()) return;
  int64_t plane = in[0].size(2) * in[0].size(3);
  const float* dy = F(gout);
  float* dx = F(gin[0]);
  parallel_for(gout.numel(), std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, plane)),
               [&](int64_t s, int64_t e) {
                 for (int64_t p = s; p < e; ++p)
                   std::fill(dx + p * plane, dx + (p + 1) * plane, dy[p] / static_cast<float>(plane));
               });
}

}  // namespace strata::cpu
