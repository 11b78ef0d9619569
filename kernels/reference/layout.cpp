// Reference reshape, permute, concat and slice: every element located by its
// full multi-index, no strides precomputed.
#include <algorithm>

#include "kernels/backends.h"
#include "kernels/reference/common.h"

namespace strata::reference {
namespace {

std::vector<int64_t> unravel(const Shape& s, int64_t i) {
  std::vector<int64_t> idx(s.size());
  for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) {
    idx[d] = i % s[d];
    i /= s[d];
  }
  return idx;
}

int64_t ravel(const Shape& s, const std::vector<int64_t>& idx) {
  int64_t o = 0;
  for (size_t d = 0; d < s.size(); ++d) o = o * s[d] + idx[d];
  return o;
}

size_t axis_of(int64_t axis, size_t rank) {
  return static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(rank) : axis);
}

int64_t slice_start(const OpAttrs& a, int64_t dim) {
  return std::clamp<int64_t>(a.start < 0 ? a.start + dim : a.start, 0, dim);
}

// Input flat index of permute output element i.
int64_t permute_source(const OpAttrs& a, const Shape& in, const Shape& out, int64_t i) {
  auto oi = unravel(out, i);
  std::vector<int64_t> ii(in.size());
  for (size_t d = 0; d < out.size(); ++d) ii[axis_of(a.axes[d], in.size())] = oi[d];
  return ravel(in, ii);
}

}  // namespace

void reshape_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  for (int64_t i = 0; i < in[0].numel(); ++i) D(out[0])[i] = D(in[0])[i];
}
void reshape_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView& g,
                      TensorView* gin) {
  if (!gin[0].defined()) return;
  for (int64_t i = 0; i < g.numel(); ++i) D(gin[0])[i] = D(g)[i];
}

void permute_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  for (int64_t i = 0; i < out[0].numel(); ++i)
    D(out[0])[i] = D(in[0])[permute_source(a, in[0].shape, out[0].shape, i)];
}
void permute_backward(const OpAttrs& a, const TensorView* in, const TensorView* out, const TensorView& g,
                      TensorView* gin) {
  if (!gin[0].defined()) return;
  for (int64_t i = 0; i < g.numel(); ++i)
    D(gin[0])[permute_source(a, in[0].shape, out[0].shape, i)] = D(g)[i];
}

void concat_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  size_t ax = axis_of(a.axis, out[0].shape.size());
  int64_t na = in[0].shape[ax];
  for (int64_t i = 0; i < out[0].numel(); ++i) {
    auto idx = unravel(out[0].shape, i);
    int k = idx[ax] < na ? 0 : 1;
    if (k == 1) idx[ax] -= na;
    D(out[0])[i] = D(in[k])[ravel(in[k].shape, idx)];
  }
}
void concat_backward(const OpAttrs& a, const TensorView* in, const TensorView* out, const TensorView& g,
                     TensorView* gin) {
  size_t ax = axis_of(a.axis, out[0].shape.size());
  int64_t na = in[0].shape[ax];
  for (int64_t i = 0; i < g.numel(); ++i) {
    auto idx = unravel(out[0].shape, i);
    int k = idx[ax] < na ? 0 : 1;
    if (k == 1) idx[ax] -= na;
    if (gin[k].defined()) D(gin[k])[ravel(in[k].shape, idx)] = D(g)[i];
  }
}

void slice_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  size_t ax = axis_of(a.axis, in[0].shape.size());
  int64_t start = slice_start(a, in[0].shape[ax]);
  for (int64_t i = 0; i < out[0].numel(); ++i) {
    auto idx = unravel(out[0].shape, i);
    idx[ax] += start;
    D(out[0])[i] = D(in[0])[ravel(in[0].shape, idx)];
  }
}
void slice_backward(const OpAttrs& a, const TensorView* in, const TensorView* out, const TensorView& g,
                    TensorView* gin) {
  if (!gin[0].defined()) return;
  size_t ax = axis_of(a.axis, in[0].shape.size());
  int64_t start = slice_start(a, in[0].shape[ax]);
  for (int64_t i = 0; i < in[0].numel(); ++i) D(gin[0])[i] = 0;
  for (int64_t i = 0; i < g.numel(); ++i) {
    auto idx = unravel(out[0].shape, i);
    idx[ax] += start;
    D(gin[0])[ravel(in[0].shape, idx)] = D(g)[i];
  }
}

}  // namespace strata::reference
