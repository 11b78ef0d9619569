// softmax and log_softmax over the last axis, f32/f16/bf16 storage read and
// written directly with FP32 arithmetic. A row of C elements is owned by one warp
// (C <= 1024, four rows per block) or one block (longer rows; row_launch.h).
// Forward makes one pass that keeps the online max/sum pair (math::OnlineLse)
// per thread, merges the pairs across the group (row_reduce.cuh) into the row's
// log-sum-exp, then a second pass writes exp(x - lse) or x - lse: x is read twice
// (the second time mostly from L2) and y written once, with no [rows] scratch.
// Rows that are whole 16-byte chunks on aligned buffers move in 16-byte loads and
// stores (row_walk.cuh).
// Backward reduces one dot product per row (sum g*y for softmax, sum g for
// log_softmax) and writes dx in a second pass over y and g.
#include <string>

#include "kernels/backends.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/half_io.cuh"
#include "kernels/cuda/kernel_macros.cuh"
#include "kernels/cuda/row_launch.h"
#include "kernels/cuda/row_reduce.cuh"
#include "kernels/cuda/row_walk.cuh"
#include "kernels/scalar_math.h"

namespace strata::cuda {
namespace {

// ---------------------------------------------------------------- kernels

// y[r, :] = softmax(x[r, :]) or log_softmax(x[r, :]); x, y: [rows, cols]
template <typename T, bool kLog, bool kVector>
__global__ void softmax_forward_kernel(const T* x, T* y, int64_t rows, int64_t cols, int tpr) {
  int lane;
  int64_t row = group_row(rows, tpr, &lane);
  if (row < 0) return;
  const T* xr = x + row * cols;
  math::OnlineLse<float> st;
  row_read<kVector>(xr, cols, lane, tpr, [&](int64_t, float v) { st.add(v); });
  float lse = row_lse(st, tpr).lse();
  row_map<kVector>(xr, y + row * cols, cols, lane, tpr,
                   [&](int64_t, float v) { return kLog ? v - lse : std::exp(v - lse); });
}

// softmax:     dx = y * (g - sum_j g_j y_j)
// log_softmax: dx = g - exp(y) * sum_j g_j
template <typename T, bool kLog, bool kVector>
__global__ void softmax_backward_kernel(const T* y, const T* g, T* dx, int64_t rows, int64_t cols, int tpr) {
  int lane;
  int64_t row = group_row(rows, tpr, &lane);
  if (row < 0) return;
  const T* yr = y + row * cols;
  const T* gr = g + row * cols;
  float acc = 0;
  if constexpr (kLog)
    row_read<kVector>(gr, cols, lane, tpr, [&](int64_t, float gj) { acc += gj; });
  else
    row_read2<kVector>(gr, yr, cols, lane, tpr, [&](int64_t, float gj, float yj) { acc += gj * yj; });
  float s = row_sum(acc, tpr);
  row_map2<kVector>(yr, gr, dx + row * cols, cols, lane, tpr, [&](int64_t, float yj, float gj) {
    return kLog ? gj - std::exp(yj) * s : yj * (gj - s);
  });
}

// ---------------------------------------------------------------- launchers

template <bool kLog>
void forward(const char* op, const TensorView& x, const TensorView& y) {
  if (x.numel() == 0) return;
  int64_t cols = x.shape.back(), rows = x.numel() / cols;
  RowLaunch l = row_launch(rows, cols, op);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_vector(row_vectorizable(cols, sizeof(T), {x.data, y.data}), [&](auto vec) {
      STRATA_LAUNCH(static_cast<unsigned>(l.grid), l.block, 0, context().stream,
                    softmax_forward_kernel<T, kLog, decltype(vec)::value>)
      (x.as<const T>(), y.as<T>(), rows, cols, l.threads_per_row);
    });
  });
  STRATA_CUDA_LAUNCH_CHECK();
}

template <bool kLog>
void backward(const char* op, const TensorView& y, const TensorView& g, const TensorView& dx) {
  if (!dx.defined() || y.numel() == 0) return;
  int64_t cols = y.shape.back(), rows = y.numel() / cols;
  RowLaunch l = row_launch(rows, cols, op);
  if (g.dtype != y.dtype || dx.dtype != y.dtype)
    throw Error(std::string(op) + ": y, grad and dx must share a dtype, got " + dtype_name(y.dtype) + ", " +
                dtype_name(g.dtype) + ", " + dtype_name(dx.dtype));
  dispatch_float(y.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_vector(row_vectorizable(cols, sizeof(T), {y.data, g.data, dx.data}), [&](auto vec) {
      STRATA_LAUNCH(static_cast<unsigned>(l.grid), l.block, 0, context().stream,
                    softmax_backward_kernel<T, kLog, decltype(vec)::value>)
      (y.as<const T>(), g.as<const T>(), dx.as<T>(), rows, cols, l.threads_per_row);
    });
  });
  STRATA_CUDA_LAUNCH_CHECK();
}

}  // namespace

// The op table's entries.
void softmax_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  forward<false>("cuda softmax", in[0], out[0]);
}
void softmax_backward(const OpAttrs&, const TensorView*, const TensorView* out, const TensorView& g,
                      TensorView* gin) {
  backward<false>("cuda softmax", out[0], g, gin[0]);
}
void log_softmax_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  forward<true>("cuda log_softmax", in[0], out[0]);
}
void log_softmax_backward(const OpAttrs&, const TensorView*, const TensorView* out, const TensorView& g,
                          TensorView* gin) {
  backward<true>("cuda log_softmax", out[0], g, gin[0]);
}

}  // namespace strata::cuda
