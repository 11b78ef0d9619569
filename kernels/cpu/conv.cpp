// conv2d on f32 as im2col + GEMM, one image at a time (the path for builds
// without oneDNN and for the calls conv_dnnl.cpp declines). Forward: the image is
// unfolded block by block of output rows into col[C*kh*kw, rows*Wo], each block
// sized to stay in L2 (about 1 MB) so that the GEMM y[n][:, block] += W col reads
// it back from cache instead of memory (unblocked, a 3x3 layer of 64 channels at
// 56x56 writes and rereads a 7 MB col per image). A 1x1 kernel with stride 1 and
// no padding skips the unfolding: x[n] is already col. Backward, per block:
// dW += dy[n][:, block] col^T (the unfold redone rather than stored) and
// dcol = W^T dy[n][:, block] scattered back into dx[n] (col2im); db is a row sum
// of dy. With at least as many images as threads, images are split into one
// range per thread (each GEMM serial, private col buffers, a dW partial per
// range, summed in range order once all are done: a sum in the order threads
// finish changed dW's bits from run to run at 3 or more threads, issue 27);
// with fewer, images run in turn and each GEMM uses all threads.
#include "kernels/cpu/conv.h"

#include <algorithm>
#include <vector>

#include "kernels/backends.h"
#include "kernels/cpu/common.h"
#include "kernels/cpu/gemm.h"

namespace strata::cpu {
namespace {

struct ConvGeom {
  int64_t n, c, h, w, o, kh, kw, ho, wo, sh, sw, ph, pw;
  int64_t rows() const { return c * kh * kw; }  // col rows
  int64_t plane() const { return ho * wo; }     // col columns
  bool pointwise() const { return kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0; }
};

ConvGeom geom(const OpAttrs& a, const TensorView* in, const TensorView& out) {
  return {in[0].size(0), in[0].size(1), in[0].size(2), in[0].size(3), in[1].size(0),
          in[1].size(2), in[1].size(3), out.size(2),   out.size(3),   a.stride[0],
          a.stride[1],   a.padding[0],  a.padding[1]};
}

// Output columns [lo, hi) whose input column j*s - p + k lies inside [0, size).
inline void valid_range(int64_t out, int64_t size, int64_t s, int64_t p, int64_t k, int64_t& lo,
                        int64_t& hi) {
  lo = std::max<int64_t>(0, (p - k + s - 1) / s);
  hi = std::min<int64_t>(out, (size - 1 + p - k) / s + 1);
  if (size - 1 + p - k < 0) hi = 0;
  if (hi < lo) hi = lo;
}

// col[C*kh*kw, (i1-i0)*Wo] = the unfolding of output rows [i0, i1).
void im2col(const ConvGeom& g, const float* x, int64_t i0, int64_t i1, float* col) {
  int64_t ld = (i1 - i0) * g.wo;
  for (int64_t c = 0; c < g.c; ++c)
    for (int64_t ki = 0; ki < g.kh; ++ki)
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        float* dst = col + ((c * g.kh + ki) * g.kw + kj) * ld;
        int64_t jlo, jhi;
        valid_range(g.wo, g.w, g.sw, g.pw, kj, jlo, jhi);
        for (int64_t i = i0; i < i1; ++i) {
          float* row = dst + (i - i0) * g.wo;
          int64_t y = i * g.sh - g.ph + ki;
          if (y < 0 || y >= g.h) {
            std::fill(row, row + g.wo, 0.0f);
            continue;
          }
          const float* src = x + (c * g.h + y) * g.w;
          int64_t shift = kj - g.pw;
          std::fill(row, row + jlo, 0.0f);
          for (int64_t j = jlo; j < jhi; ++j) row[j] = src[j * g.sw + shift];
          std::fill(row + jhi, row + g.wo, 0.0f);
        }
      }
}

// dx += the scatter of dcol[C*kh*kw, (i1-i0)*Wo] (output rows [i0, i1)).
void col2im(const ConvGeom& g, const float* col, int64_t i0, int64_t i1, float* dx) {
  int64_t ld = (i1 - i0) * g.wo;
  for (int64_t c = 0; c < g.c; ++c)
    for (int64_t ki = 0; ki < g.kh; ++ki)
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const float* src = col + ((c * g.kh + ki) * g.kw + kj) * ld;
        int64_t jlo, jhi;
        valid_range(g.wo, g.w, g.sw, g.pw, kj, jlo, jhi);
        for (int64_t i = i0; i < i1; ++i) {
          int64_t y = i * g.sh - g.ph + ki;
          if (y < 0 || y >= g.h) continue;
          float* dst = dx + (c * g.h + y) * g.w;
          int64_t shift = kj - g.pw;
          const float* row = src + (i - i0) * g.wo;
          for (int64_t j = jlo; j < jhi; ++j) dst[j * g.sw + shift] += row[j];
        }
      }
}

// Output rows per col block: about kColBlockBytes of col, at least one row.
constexpr int64_t kColBlockBytes = 1 << 20;
int64_t block_rows(const ConvGeom& g) {
  int64_t per_row = g.rows() * g.wo * static_cast<int64_t>(sizeof(float));
  return std::clamp<int64_t>(kColBlockBytes / std::max<int64_t>(1, per_row), 1, std::max<int64_t>(1, g.ho));
}

// The images cut into ranges: one per thread when there are enough images,
// otherwise one range (and multithreaded GEMMs inside).
struct ImageRanges {
  int64_t n, count;
  explicit ImageRanges(int64_t images)
      : n(images), count(images >= num_threads() && !in_parallel() ? num_threads() : 1) {}
  int64_t begin(int64_t r) const { return r * (n / count) + std::min(r, n % count); }
  int64_t end(int64_t r) const { return begin(r + 1); }
};

// Runs fn(range, begin, end) for every range, in parallel.
template <typename Fn>
void over_images(const ImageRanges& ranges, Fn fn) {
  parallel_run(ranges.count, [&](int64_t r) { fn(r, ranges.begin(r), ranges.end(r)); });
}

}  // namespace

void conv2d_im2col_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  auto g = geom(a, in, out[0]);
  const float *x = F(in[0]), *w = F(in[1]), *b = F(in[2]);
  float* y = F(out[0]);
  // A layer without a bias passes zeros (Conv2d's zero_bias): then the GEMMs
  // write y (beta 0) instead of reading back a y filled with zeros, which on
  // a first layer (1 input channel, a 9-deep GEMM) is two of its three passes
  // over the output.
  const bool zero_bias = std::all_of(b, b + g.o, [](float v) { return v == 0.0f; });
  const float beta = zero_bias ? 0.0f : 1.0f;
  over_images(ImageRanges(g.n), [&](int64_t, int64_t s, int64_t e) {
    int64_t br = block_rows(g);
    std::vector<float> col(g.pointwise() ? 0 : static_cast<size_t>(g.rows() * br * g.wo));
    for (int64_t n = s; n < e; ++n) {
      const float* xn = x + n * g.c * g.h * g.w;
      float* yn = y + n * g.o * g.plane();
      if (!zero_bias)
        for (int64_t o = 0; o < g.o; ++o) std::fill(yn + o * g.plane(), yn + (o + 1) * g.plane(), b[o]);
      if (g.pointwise()) {
        gemm(false, false, g.o, g.plane(), g.rows(), 1.0f, w, g.rows(), xn, g.plane(), beta, yn, g.plane());
        continue;
      }
      for (int64_t i0 = 0; i0 < g.ho; i0 += br) {  // y[n][:, block] (+)= W col
        int64_t i1 = std::min(g.ho, i0 + br), cols = (i1 - i0) * g.wo;
        im2col(g, xn, i0, i1, col.data());
        gemm(false, false, g.o, cols, g.rows(), 1.0f, w, g.rows(), col.data(), cols, beta, yn + i0 * g.wo,
             g.plane());
      }
    }
  });
}

void conv2d_im2col_backward(const OpAttrs& a, const TensorView* in, const TensorView* out,
                            const TensorView& gout, TensorView* gin) {
  auto g = geom(a, in, out[0]);
  const float *x = F(in[0]), *w = F(in[1]), *dy = F(gout);
  int64_t wsize = g.o * g.rows();
  if (gin[1].defined()) std::fill(F(gin[1]), F(gin[1]) + wsize, 0.0f);
  // range 0 accumulates its dW in place, each other range into its own slot
  const ImageRanges ranges(g.n);
  std::vector<float> dw_parts(gin[1].defined() ? static_cast<size_t>((ranges.count - 1) * wsize)
                                               : 0);  // zeroed
  over_images(ranges, [&](int64_t r, int64_t s, int64_t e) {
    int64_t br = block_rows(g);
    std::vector<float> col(g.pointwise() ? 0 : static_cast<size_t>(g.rows() * br * g.wo));
    float* dw = !gin[1].defined() ? nullptr : r == 0 ? F(gin[1]) : dw_parts.data() + (r - 1) * wsize;
    for (int64_t n = s; n < e; ++n) {
      const float* xn = x + n * g.c * g.h * g.w;
      const float* dyn = dy + n * g.o * g.plane();
      float* dxn = gin[0].defined() ? F(gin[0]) + n * g.c * g.h * g.w : nullptr;
      if (g.pointwise()) {  // dW += dy[n] x[n]^T;  dx[n] = W^T dy[n]
        if (dw)
          gemm(false, true, g.o, g.rows(), g.plane(), 1.0f, dyn, g.plane(), xn, g.plane(), 1.0f, dw,
               g.rows());
        if (dxn)
          gemm(true, false, g.rows(), g.plane(), g.o, 1.0f, w, g.rows(), dyn, g.plane(), 0.0f, dxn,
               g.plane());
        continue;
      }
      if (dxn) std::fill(dxn, dxn + g.c * g.h * g.w, 0.0f);
      for (int64_t i0 = 0; i0 < g.ho; i0 += br) {
        int64_t i1 = std::min(g.ho, i0 + br), cols = (i1 - i0) * g.wo;
        const float* dyb = dyn + i0 * g.wo;  // dy[n][:, block], row stride plane
        if (dw) {                            // dW[O, CKK] += dy[n][:, block] col^T
          im2col(g, xn, i0, i1, col.data());
          gemm(false, true, g.o, g.rows(), cols, 1.0f, dyb, g.plane(), col.data(), cols, 1.0f, dw, g.rows());
        }
        if (dxn) {  // dcol = W^T dy[n][:, block], scattered into dx[n]
          gemm(true, false, g.rows(), cols, g.o, 1.0f, w, g.rows(), dyb, g.plane(), 0.0f, col.data(), cols);
          col2im(g, col.data(), i0, i1, dxn);
        }
      }
    }
  });
  if (gin[1].defined() && ranges.count > 1) {  // dW = ((part 0 + part 1) + part 2) + ...
    float* dw = F(gin[1]);
    parallel_for(wsize, kElementwiseGrain / ranges.count, [&](int64_t s, int64_t e) {
      for (int64_t r = 1; r < ranges.count; ++r) {
        const float* part = dw_parts.data() + (r - 1) * wsize;
        for (int64_t i = s; i < e; ++i) dw[i] += part[i];
      }
    });
  }
  if (gin[2].defined()) {  // db[o] = sum over images and pixels of dy
    float* db = F(gin[2]);
    parallel_for(g.o, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, g.n * g.plane())),
                 [&](int64_t s, int64_t e) {
                   for (int64_t o = s; o < e; ++o) {
                     double acc = 0;
                     for (int64_t n = 0; n < g.n; ++n) {
                       const float* p = dy + (n * g.o + o) * g.plane();
                       for (int64_t q = 0; q < g.plane(); ++q) acc += p[q];
                     }
                     db[o] = static_cast<float>(acc);
                   }
                 });
  }
}

// The op table's entry points: oneDNN when it takes the call, else im2col.
void conv2d_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  if (!conv2d_dnnl_forward(a, in, out)) conv2d_im2col_forward(a, in, out);
}

void conv2d_backward(const OpAttrs& a, const TensorView* in, const TensorView* out, const TensorView& gout,
                     TensorView* gin) {
  if (!conv2d_dnnl_backward(a, in, out, gout, gin)) conv2d_im2col_backward(a, in, out, gout, gin);
}

}  // namespace strata::cpu
