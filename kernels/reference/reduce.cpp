// Reference sum and mean over a set of axes.
#include "kernels/backends.h"
#include "kernels/reference/common.h"

namespace strata::reference {
namespace {

int64_t count_reduced(const Shape& s, const std::vector<bool>& red) {
  int64_t n = 1;
  for (size_t d = 0; d < s.size(); ++d)
    if (red[d]) n *= s[d];
  return n;
}

void reduce_forward(const OpAttrs& a, const TensorView* in, TensorView* out, bool mean) {
  auto red = reduced_axes(in[0].shape, a.axes);
  for (int64_t o = 0; o < out[0].numel(); ++o) D(out[0])[o] = 0;
  for (int64_t i = 0; i < in[0].numel(); ++i) D(out[0])[reduced_index(in[0].shape, red, i)] += D(in[0])[i];
  if (mean) {
    double n = static_cast<double>(count_reduced(in[0].shape, red));
    for (int64_t o = 0; o < out[0].numel(); ++o) D(out[0])[o] /= n;
  }
}

void reduce_backward(const OpAttrs& a, const TensorView* in, const TensorView& g, TensorView* gin,
                     bool mean) {
  if (!gin[0].defined()) return;
  auto red = reduced_axes(in[0].shape, a.axes);
  double scale = mean ? 1.0 / static_cast<double>(count_reduced(in[0].shape, red)) : 1.0;
  for (int64_t i = 0; i < in[0].numel(); ++i) D(gin[0])[i] = D(g)[reduced_index(in[0].shape, red, i)] * scale;
}

}  // namespace

void sum_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  reduce_forward(a, in, out, false);
}
void sum_backward(const OpAttrs& a, const TensorView* in, const TensorView*, const TensorView& g,
                  TensorView* gin) {
  reduce_backward(a, in, g, gin, false);
}
void mean_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  reduce_forward(a, in, out, true);
}
void mean_backward(const OpAttrs& a, const TensorView* in, const TensorView*, const TensorView& g,
                   TensorView* gin) {
  reduce_backward(a, in, g, gin, true);
}

}  // namespace strata::reference
