// CUDA reshape, permute, concat and slice: pure data movement, one read and one
// write of every element, with no dtype conversion (elements move as 2- or
// 4-byte words). reshape is a device-to-device copy. concat and slice see the
// tensor as [outer, axis x inner] rows and move whole runs with
// cudaMemcpy2DAsync (a pitched copy: the copy engine or its kernel, at memory
// bandwidth). permute is the strided gather of layout_gather.h: each output element decodes its
// source offset through the collapsed map of the permuted input strides, so
// writes are coalesced and reads are as contiguous as the permutation allows.
// Backward: reshape copies, permute is the inverse permute, concat a split, and
// slice a zero fill plus a copy into the window.
#include <algorithm>
#include <string>
#include <vector>

#include "base/error.h"
#include "kernels/backends.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/layout_gather.h"
#include "kernels/launch_shape.h"
#include "kernels/layout_geom.h"

namespace strata::cuda {
namespace {

// ---- helpers -------------------------------------------------------------------

void copy_bytes(void* dst, const void* src, size_t bytes) {
  if (bytes) STRATA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, context().stream));
}

// rows x width bytes, from src (pitch sp) to dst (pitch dp)
void copy_rows(void* dst, size_t dp, const void* src, size_t sp, size_t width, size_t rows) {
  if (width == 0 || rows == 0) return;
  if (rows == 1) return copy_bytes(dst, src, width);
  STRATA_CUDA_CHECK(
      cudaMemcpy2DAsync(dst, dp, src, sp, width, rows, cudaMemcpyDeviceToDevice, context().stream));
}

// dst (out shape = in shape permuted by axes) [i] = src[...]: out axis d is in axis axes[d]
void permute_copy(const void* src, const Shape& in, const std::vector<size_t>& axes, void* dst, DType dt,
                  const char* what) {
  int64_t n = shape_numel(in);
  if (n == 0) return;
  std::vector<int64_t> in_st = launch::contiguous_strides(in);
  Shape os(in.size());
  std::vector<int64_t> st(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    os[d] = in[axes[d]];
    st[d] = in_st[axes[d]];
  }
  strided_gather(src, launch::pack_index(os, st, what), dst, n, dtype_size(dt));
}

// layout::ConcatGeom in bytes: [outer, run_a + run_b] <-> [outer, run_a], [outer, run_b]
struct ConcatGeom {
  size_t outer, run_a, run_b;
  ConcatGeom(const OpAttrs& a, const Shape& sa, const Shape& sb, DType dt) {
    layout::ConcatGeom e(a, sa, sb);
    size_t es = dtype_size(dt);
    outer = static_cast<size_t>(e.outer);
    run_a = static_cast<size_t>(e.run_a) * es;
    run_b = static_cast<size_t>(e.run_b) * es;
  }
};

// layout::SliceGeom in bytes: [outer, dim_run] with the window [start_off, start_off + len_run)
struct SliceGeom {
  size_t outer, dim_run, start_off, len_run;
  SliceGeom(const OpAttrs& a, const Shape& in, const Shape& out, DType dt) {
    layout::SliceGeom e(a, in, out);
    size_t es = dtype_size(dt);
    outer = static_cast<size_t>(e.outer);
    dim_run = static_cast<size_t>(e.dim_run) * es;
    start_off = static_cast<size_t>(e.start_off) * es;
    len_run = static_cast<size_t>(e.len_run) * es;
  }
};

char* bytes_of(const TensorView& v) { return static_cast<char*>(v.data); }

}  // namespace

void reshape_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  copy_bytes(out[0].data, in[0].data, in[0].bytes());
}
void reshape_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView& g,
                      TensorView* gin) {
  if (gin[0].defined()) copy_bytes(gin[0].data, g.data, g.bytes());
}

void permute_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  permute_copy(in[0].data, in[0].shape, layout::norm_axes(a.axes, in[0].shape.size()), out[0].data,
               in[0].dtype, "cuda permute_forward");
}
void permute_backward(const OpAttrs& a, const TensorView* in, const TensorView* out, const TensorView& g,
                      TensorView* gin) {
  if (!gin[0].defined()) return;
  permute_copy(g.data, out[0].shape, layout::inverse_axes(layout::norm_axes(a.axes, in[0].shape.size())),
               gin[0].data, g.dtype, "cuda permute_backward");
}

void concat_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  ConcatGeom c(a, in[0].shape, in[1].shape, in[0].dtype);
  size_t row = c.run_a + c.run_b;
  copy_rows(bytes_of(out[0]), row, in[0].data, c.run_a, c.run_a, c.outer);
  copy_rows(bytes_of(out[0]) + c.run_a, row, in[1].data, c.run_b, c.run_b, c.outer);
}
void concat_backward(const OpAttrs& a, const TensorView* in, const TensorView*, const TensorView& g,
                     TensorView* gin) {
  ConcatGeom c(a, in[0].shape, in[1].shape, g.dtype);
  size_t row = c.run_a + c.run_b;
  if (gin[0].defined()) copy_rows(gin[0].data, c.run_a, bytes_of(g), row, c.run_a, c.outer);
  if (gin[1].defined()) copy_rows(gin[1].data, c.run_b, bytes_of(g) + c.run_a, row, c.run_b, c.outer);
}

void slice_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  SliceGeom s(a, in[0].shape, out[0].shape, in[0].dtype);
  copy_rows(out[0].data, s.len_run, bytes_of(in[0]) + s.start_off, s.dim_run, s.len_run, s.outer);
}
void slice_backward(const OpAttrs& a, const TensorView* in, const TensorView* out, const TensorView& g,
                    TensorView* gin) {
  if (!gin[0].defined()) return;
  SliceGeom s(a, in[0].shape, out[0].shape, g.dtype);
  if (gin[0].bytes()) STRATA_CUDA_CHECK(cudaMemsetAsync(gin[0].data, 0, gin[0].bytes(), context().stream));
  copy_rows(bytes_of(gin[0]) + s.start_off, s.dim_run, g.data, s.len_run, s.len_run, s.outer);
}

}  // namespace strata::cuda
