// Reference pooling in double: max (first maximum in row-major window order wins
// ties, argmax = flat index into the input plane), average over the unpadded
// cells of each window, and global average.
#include "kernels/backends.h"
#include "kernels/reference/common.h"

namespace strata::reference {
namespace {

// Calls f(plane, output index in plane, input cells of the window) per output cell.
template <typename Fn>
void each_window(const OpAttrs& a, const TensorView& x, const TensorView& y, Fn f) {
  int64_t h = x.size(2), w = x.size(3), ho = y.size(2), wo = y.size(3);
  for (int64_t p = 0; p < x.size(0) * x.size(1); ++p)
    for (int64_t i = 0; i < ho; ++i)
      for (int64_t j = 0; j < wo; ++j) {
        std::vector<int64_t> cells;
        for (int64_t ki = 0; ki < a.kernel[0]; ++ki)
          for (int64_t kj = 0; kj < a.kernel[1]; ++kj) {
            int64_t r = i * a.stride[0] - a.padding[0] + ki, c = j * a.stride[1] - a.padding[1] + kj;
            if (r >= 0 && r < h && c >= 0 && c < w) cells.push_back(r * w + c);
          }
        f(p, i * wo + j, cells);
      }
}

}  // namespace

void max_pool2d_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  int64_t plane = in[0].size(2) * in[0].size(3), oplane = out[0].size(2) * out[0].size(3);
  each_window(a, in[0], out[0], [&](int64_t p, int64_t o, const std::vector<int64_t>& cells) {
    const double* x = D(in[0]) + p * plane;
    int64_t best = cells[0];
    for (int64_t c : cells)
      if (x[c] > x[best]) best = c;
    D(out[0])[p * oplane + o] = x[best];
    out[1].as<int64_t>()[p * oplane + o] = best;
  });
}

void max_pool2d_backward(const OpAttrs& a, const TensorView* in, const TensorView* out, const TensorView& g,
                         TensorView* gin) {
  if (!gin[0].defined()) return;
  int64_t plane = in[0].size(2) * in[0].size(3), oplane = out[0].size(2) * out[0].size(3);
  for (int64_t e = 0; e < gin[0].numel(); ++e) D(gin[0])[e] = 0;
  for (int64_t e = 0; e < g.numel(); ++e)
    D(gin[0])[(e / oplane) * plane + out[1].as<int64_t>()[e]] += D(g)[e];
}

void avg_pool2d_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  int64_t plane = in[0].size(2) * in[0].size(3), oplane = out[0].size(2) * out[0].size(3);
  each_window(a, in[0], out[0], [&](int64_t p, int64_t o, const std::vector<int64_t>& cells) {
    double s = 0;
    for (int64_t c : cells) s += D(in[0])[p * plane + c];
    D(out[0])[p * oplane + o] = s / static_cast<double>(cells.size());
  });
}

void avg_pool2d_backward(const OpAttrs& a, const TensorView* in, const TensorView* out, const TensorView& g,
                         TensorView* gin) {
  if (!gin[0].defined()) return;
  int64_t plane = in[0].size(2) * in[0].size(3), oplane = out[0].size(2) * out[0].size(3);
  for (int64_t e = 0; e < gin[0].numel(); ++e) D(gin[0])[e] = 0;
  each_window(a, in[0], out[0], [&](int64_t p, int64_t o, const std::vector<int64_t>& cells) {
    for (int64_t c : cells)
      D(gin[0])[p * plane + c] += D(g)[p * oplane + o] / static_cast<double>(cells.size());
  });
}

void global_avg_pool2d_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  int64_t plane = in[0].size(2) * in[0].size(3);
  for (int64_t p = 0; p < out[0].numel(); ++p) {
    double s = 0;
    for (int64_t e = 0; e < plane; ++e) s += D(in[0])[p * plane + e];
    D(out[0])[p] = s / static_cast<double>(plane);
  }
}

void global_avg_pool2d_backward(const OpAttrs&, const TensorView* in, const TensorView*, const TensorView& g,
                                TensorView* gin) {
  if (!gin[0].defined()) return;
  int64_t plane = in[0].size(2) * in[0].size(3);
  for (int64_t e = 0; e < gin[0].numel(); ++e) D(gin[0])[e] = D(g)[e / plane] / static_cast<double>(plane);
}

}  // namespace strata::reference
