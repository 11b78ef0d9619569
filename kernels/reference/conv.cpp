// Reference conv2d (NCHW, zero padding, stride), direct seven-deep loops in double.
#include "kernels/backends.h"
#include "kernels/reference/common.h"

namespace strata::reference {
namespace {

struct ConvGeom {
  int64_t n, c, h, w, o, kh, kw, ho, wo, sh, sw, ph, pw;
};

ConvGeom geom(const OpAttrs& a, const TensorView* in, const TensorView& out) {
  return {in[0].size(0), in[0].size(1), in[0].size(2), in[0].size(3), in[1].size(0),
          in[1].size(2), in[1].size(3), out.size(2),   out.size(3),   a.stride[0],
          a.stride[1],   a.padding[0],  a.padding[1]};
}

// Calls f(x index, w index, y index) for every multiply-add of the convolution.
template <typename Fn>
void each_tap(const ConvGeom& g, Fn f) {
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t o = 0; o < g.o; ++o)
      for (int64_t i = 0; i < g.ho; ++i)
        for (int64_t j = 0; j < g.wo; ++j)
          for (int64_t c = 0; c < g.c; ++c)
            for (int64_t ki = 0; ki < g.kh; ++ki)
              for (int64_t kj = 0; kj < g.kw; ++kj) {
                int64_t y = i * g.sh - g.ph + ki, x = j * g.sw - g.pw + kj;
                if (y < 0 || y >= g.h || x < 0 || x >= g.w) continue;
                f(((n * g.c + c) * g.h + y) * g.w + x, ((o * g.c + c) * g.kh + ki) * g.kw + kj,
                  ((n * g.o + o) * g.ho + i) * g.wo + j);
              }
}

}  // namespace

void conv2d_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  auto g = geom(a, in, out[0]);
  double* y = D(out[0]);
  for (int64_t e = 0; e < out[0].numel(); ++e) y[e] = D(in[2])[(e / (g.ho * g.wo)) % g.o];
  each_tap(g, [&](int64_t xi, int64_t wi, int64_t yi) { y[yi] += D(in[0])[xi] * D(in[1])[wi]; });
}

void conv2d_backward(const OpAttrs& a, const TensorView* in, const TensorView* out, const TensorView& gout,
                     TensorView* gin) {
  auto g = geom(a, in, out[0]);
  for (int i = 0; i < 3; ++i)
    if (gin[i].defined())
      for (int64_t e = 0; e < gin[i].numel(); ++e) D(gin[i])[e] = 0;
  const double* dy = D(gout);
  if (gin[2].defined())
    for (int64_t e = 0; e < gout.numel(); ++e) D(gin[2])[(e / (g.ho * g.wo)) % g.o] += dy[e];
  each_tap(g, [&](int64_t xi, int64_t wi, int64_t yi) {
    if (gin[0].defined()) D(gin[0])[xi] += dy[yi] * D(in[1])[wi];
    if (gin[1].defined()) D(gin[1])[wi] += dy[yi] * D(in[0])[xi];
  });
}

}  // namespace strata::reference
