// Host index arithmetic of the layout ops (permute, concat, slice), shared by
// the CPU and CUDA backends so that both read OpAttrs the same way. Extents are
// in elements; a backend that moves bytes scales them by the element size.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/op_table.h"
#include "kernels/runtime/tensor_view.h"

namespace strata::layout {

// axis in [-rank, rank) -> [0, rank)
inline size_t axis_of(int64_t axis, size_t rank) {
  return static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(rank) : axis);
}

// s[b] * ... * s[e - 1] (1 when b == e)
inline int64_t prod(const Shape& s, size_t b, size_t e) {
  int64_t n = 1;
  for (size_t d = b; d < e; ++d) n *= s[d];
  return n;
}

inline std::vector<size_t> norm_axes(const std::vector<int64_t>& axes, size_t rank) {
  std::vector<size_t> r;
  for (auto a : axes) r.push_back(axis_of(a, rank));
  return r;
}

// The permutation that undoes `axes` (permute's backward).
inline std::vector<size_t> inverse_axes(const std::vector<size_t>& axes) {
  std::vector<size_t> inverse(axes.size());
  for (size_t d = 0; d < axes.size(); ++d) inverse[axes[d]] = d;
  return inverse;
}

// [outer, extent_a + extent_b, inner] <-> [outer, extent_a, inner], [outer, extent_b, inner]:
// rows of run_a + run_b elements, split into runs of run_a and run_b.
struct ConcatGeom {
  int64_t outer, run_a, run_b;
  ConcatGeom(const OpAttrs& a, const Shape& sa, const Shape& sb) {
    size_t ax = axis_of(a.axis, sa.size());
    int64_t inner = prod(sa, ax + 1, sa.size());
    outer = prod(sa, 0, ax);
    run_a = sa[ax] * inner;
    run_b = sb[ax] * inner;
  }
};

// [outer, dim, inner] with the window [start, start + len) along dim, start
// clamped to [0, dim]: rows of dim_run elements, the window len_run elements
// from start_off.
struct SliceGeom {
  int64_t outer, dim_run, start_off, len_run;
  SliceGeom(const OpAttrs& a, const Shape& in, const Shape& out) {
    size_t ax = axis_of(a.axis, in.size());
    int64_t inner = prod(in, ax + 1, in.size()), dim = in[ax];
    int64_t start = std::clamp<int64_t>(a.start < 0 ? a.start + dim : a.start, 0, dim);
    outer = prod(in, 0, ax);
    dim_run = dim * inner;
    start_off = start * inner;
    len_run = out[ax] * inner;
  }
};

}  // namespace strata::layout
