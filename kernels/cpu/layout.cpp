// reshape, permute, concat and slice on f32: pure data movement, one read and
// one write of every element. reshape is a memcpy. concat and slice see the
// tensor as [outer, axis, inner] and move contiguous runs of (axis extent x
// inner) elements with memcpy, threads taking blocks of outer rows. permute walks
// output rows (all but the last output axis), computing each row's source offset
// once; when the last axis stays last a row is a memcpy, otherwise it is a
// strided gather whose reads are reused from cache by the neighbouring rows.
// Backward of permute is the inverse permute; of concat a split; of slice a zero
// fill and a copy into the window.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/backends.h"
#include "kernels/cpu/common.h"

namespace strata::cpu {
namespace {

size_t axis_of(int64_t axis, size_t rank) {
  return static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(rank) : axis);
}

int64_t prod(const Shape& s, size_t b, size_t e) {
  int64_t n = 1;
  for (size_t d = b; d < e; ++d) n *= s[d];
  return n;
}

void copy(float* dst, const float* src, int64_t n) {
  std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(n));
}

// dst[out index] = src[in index] where out axis d is in axis axes[d] (axes normalised)
void permute_copy(const float* src, const Shape& in, const std::vector<size_t>& axes, float* dst) {
  size_t rank = in.size();
  int64_t n = shape_numel(in);
  if (rank == 0 || n == 0) {
    if (n) dst[0] = src[0];
    return;
  }
  std::vector<int64_t> in_stride(rank, 1), os(rank), st(rank);
  for (size_t d = rank - 1; d > 0; --d) in_stride[d - 1] = in_stride[d] * in[d];
  for (size_t d = 0; d < rank; ++d) {
    os[d] = in[axes[d]];
    st[d] = in_stride[axes[d]];
  }
  int64_t inner = os.back(), rows = n / inner, step = st.back();
  parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / inner), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t off = 0, rem = r;
      for (size_t d = rank - 1; d > 0; --d) {
        off += (rem % os[d - 1]) * st[d - 1];
        rem /= os[d - 1];
      }
      float* o = dst + r * inner;
      const float* s = src + off;
      if (step == 1)
        copy(o, s, inner);
      else
        for (int64_t j = 0; j < inner; ++j) o[j] = s[j * step];
    }
  });
}

std::vector<size_t> norm_axes(const std::vector<int64_t>& axes, size_t rank) {
  std::vector<size_t> r;
  for (auto a : axes) r.push_back(axis_of(a, rank));
  return r;
}

// [outer, extent_a + extent_b, inner] <-> [outer, extent_a, inner], [outer, extent_b, inner]
struct ConcatGeom {
  int64_t outer, run_a, run_b;
  ConcatGeom(const OpAttrs& a, const Shape& sa, const Shape& sb) {
    size_t ax = axis_of(a.axis, sa.size());
    int64_t inner = prod(sa, ax + 1, sa.size());
    outer = prod(sa, 0, ax);
    run_a = sa[ax] * inner;
    run_b = sb[ax] * inner;
  }
  int64_t grain() const {
    return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, run_a + run_b));
  }
};

// [outer, dim, inner] with the window [start, start + len) along dim
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
  int64_t grain() const { return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, dim_run)); }
};

}  // namespace

void reshape_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  copy(F(out[0]), F(in[0]), in[0].numel());
}
void reshape_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView& g,
                      TensorView* gin) {
  if (gin[0].defined()) copy(F(gin[0]), F(g), g.numel());
}

void permute_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  permute_copy(F(in[0]), in[0].shape, norm_axes(a.axes, in[0].shape.size()), F(out[0]));
}
void permute_backward(const OpAttrs& a, const TensorView* in, const TensorView* out, const TensorView& g,
                      TensorView* gin) {
  if (!gin[0].defined()) return;
  auto axes = norm_axes(a.axes, in[0].shape.size());
  std::vector<size_t> inverse(axes.size());
  for (size_t d = 0; d < axes.size(); ++d) inverse[axes[d]] = d;
  permute_copy(F(g), out[0].shape, inverse, F(gin[0]));
}

void concat_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  ConcatGeom c(a, in[0].shape, in[1].shape);
  const float *x = F(in[0]), *y = F(in[1]);
  float* o = F(out[0]);
  parallel_for(c.outer, c.grain(), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      copy(o + r * (c.run_a + c.run_b), x + r * c.run_a, c.run_a);
      copy(o + r * (c.run_a + c.run_b) + c.run_a, y + r * c.run_b, c.run_b);
    }
  });
}
void concat_backward(const OpAttrs& a, const TensorView* in, const TensorView*, const TensorView& g,
                     TensorView* gin) {
  ConcatGeom c(a, in[0].shape, in[1].shape);
  const float* go = F(g);
  parallel_for(c.outer, c.grain(), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      if (gin[0].defined()) copy(F(gin[0]) + r * c.run_a, go + r * (c.run_a + c.run_b), c.run_a);
      if (gin[1].defined()) copy(F(gin[1]) + r * c.run_b, go + r * (c.run_a + c.run_b) + c.run_a, c.run_b);
    }
  });
}

void slice_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  SliceGeom s(a, in[0].shape, out[0].shape);
  const float* x = F(in[0]);
  float* o = F(out[0]);
  parallel_for(s.outer, s.grain(), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) copy(o + r * s.len_run, x + r * s.dim_run + s.start_off, s.len_run);
  });
}
void slice_backward(const OpAttrs& a, const TensorView* in, const TensorView* out, const TensorView& g,
                    TensorView* gin) {
  if (!gin[0].defined()) return;
  SliceGeom s(a, in[0].shape, out[0].shape);
  const float* go = F(g);
  float* dx = F(gin[0]);
  parallel_for(s.outer, s.grain(), [&](int64_t b, int64_t e) {
    std::memset(dx + b * s.dim_run, 0, sizeof(float) * static_cast<size_t>((e - b) * s.dim_run));
    for (int64_t r = b; r < e; ++r) copy(dx + r * s.dim_run + s.start_off, go + r * s.len_run, s.len_run);
  });
}

}  // namespace strata::cpu
