// reshape, permute, concat and slice on f32: pure data movement, one read and
// one write of every element. reshape is a memcpy (core's reshape() views a
// contiguous tensor instead; this kernel serves strided ones). concat and slice see the
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
#include "kernels/layout_geom.h"

namespace strata::cpu {
namespace {

using layout::ConcatGeom;
using layout::SliceGeom;

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

int64_t concat_grain(const ConcatGeom& c) {
  return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, c.run_a + c.run_b));
}
int64_t slice_grain(const SliceGeom& s) {
  return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, s.dim_run));
}

}  // namespace

void reshape_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  copy(F(out[0]), F(in[0]), in[0].numel());
}
void reshape_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView& g,
                      TensorView* gin) {
  if (gin[0].defined()) copy(F(gin[0]), F(g), g.numel());
}

void permute_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  permute_copy(F(in[0]), in[0].shape, layout::norm_axes(a.axes, in[0].shape.size()), F(out[0]));
}
void permute_backward(const OpAttrs& a, const TensorView* in, const TensorView* out, const TensorView& g,
                      TensorView* gin) {
  if (!gin[0].defined()) return;
  permute_copy(F(g), out[0].shape, layout::inverse_axes(layout::norm_axes(a.axes, in[0].shape.size())),
               F(gin[0]));
}

void concat_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  ConcatGeom c(a, in[0].shape, in[1].shape);
  const float *x = F(in[0]), *y = F(in[1]);
  float* o = F(out[0]);
  parallel_for(c.outer, concat_grain(c), [&](int64_t b, int64_t e) {
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
  parallel_for(c.outer, concat_grain(c), [&](int64_t b, int64_t e) {
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
  parallel_for(s.outer, slice_grain(s), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) copy(o + r * s.len_run, x + r * s.dim_run + s.start_off, s.len_run);
  });
}
void slice_backward(const OpAttrs& a, const TensorView* in, const TensorView* out, const TensorView& g,
                    TensorView* gin) {
  if (!gin[0].defined()) return;
  SliceGeom s(a, in[0].shape, out[0].shape);
  const float* go = F(g);
  float* dx = F(gin[0]);
  parallel_for(s.outer, slice_grain(s), [&](int64_t b, int64_t e) {
    std::memset(dx + b * s.dim_run, 0, sizeof(float) * static_cast<size_t>((e - b) * s.dim_run));
    for (int64_t r = b; r < e; ++r) copy(dx + r * s.dim_run + s.start_off, go + r * s.len_run, s.len_run);
  });
}

}  // namespace strata::cpu
