// CUDA sum and mean over axes (and, through reduce_sum, the gradients of
// broadcast operands). The input is seen as [kept..., reduced...] through a
// collapsed ReducePlan (kernels/launch_shape.h). Two schemes, both reading every
// input element once and writing every output once, accumulating in FP64 (as the
// CPU kernels do, so long sums keep f32 accuracy) with a fixed combination order,
// so results are deterministic:
// - rows (reduced elements contiguous, count >= kRowMin): one block per output,
//   threads stride along the row (coalesced reads), then a warp-shuffle block sum;
//   with too few rows to fill the GPU (a full sum) each row is cut into segments,
//   a block each, whose FP64 partials a second pass adds in segment order;
// - columns (the innermost dimension kept, or short rows): one thread per output,
//   neighbouring threads reading neighbouring columns (coalesced); when there are
//   too few outputs to fill the GPU the reduced range is cut into splits whose
//   FP64 partial sums a second pass adds in split order.
// Backward broadcasts grad_out back over the reduced axes: one gather pass.
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "kernels/backends.h"
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/context.h"
#include "kernels/cuda/half_io.cuh"
#include "kernels/cuda/kernel_macros.cuh"
#include "kernels/cuda/reduce.cuh"

namespace strata::cuda {
namespace {

constexpr int64_t kRowMin = 64;  // shorter rows go to the column scheme
constexpr int64_t kMaxRowBlocks = 1 << 20;

__device__ __forceinline__ int64_t reduced_offset(const launch::IndexMap& m, int64_t r) {
  return m.ndim == 1 ? r * m.stride[0] : m.offset(r);
}

// ---- kernels -------------------------------------------------------------------

// grid-stride over (output o, segment s) pairs, one block each; blockDim a power
// of two >= 32. splits == 1 writes y; otherwise partial[s * n_out + o].
template <typename X, typename Y>
__global__ void reduce_rows_kernel(const X* x, Y* y, double* partial, int64_t splits, launch::ReducePlan p,
                                   double scale) {
  for (int64_t t = blockIdx.x; t < p.n_out * splits; t += gridDim.x) {
    int64_t o = t % p.n_out, s = t / p.n_out, begin, end;
    launch::split_range(p.count, splits, s, begin, end);
    const X* base = x + p.kept.offset(o);
    double acc = 0;
    for (int64_t r = begin + threadIdx.x; r < end; r += blockDim.x)
      acc += load(base, reduced_offset(p.reduced, r));
    acc = block_sum(acc);
    if (threadIdx.x == 0) {
      if (splits == 1)
        store(y, o, static_cast<float>(acc * scale));
      else
        partial[t] = acc;
    }
  }
}

// thread (o, s): split s of output o. splits == 1 writes y; otherwise partial[s * n_out + o]
template <typename X, typename Y>
__global__ void reduce_columns_kernel(const X* x, Y* y, double* partial, int64_t splits, launch::ReducePlan p,
                                      double scale) {
  int64_t total = p.n_out * splits;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total;
       t += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = t % p.n_out, s = t / p.n_out, begin, end;
    launch::split_range(p.count, splits, s, begin, end);
    const X* base = x + p.kept.offset(o);
    double acc = 0;
    for (int64_t r = begin; r < end; ++r) acc += load(base, reduced_offset(p.reduced, r));
    if (splits == 1)
      store(y, o, static_cast<float>(acc * scale));
    else
      partial[t] = acc;
  }
}

template <typename Y>
__global__ void reduce_splits_kernel(const double* partial, int64_t splits, int64_t n_out, Y* y,
                                     double scale) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < n_out;
       o += int64_t(gridDim.x) * blockDim.x) {
    double acc = 0;
    for (int64_t s = 0; s < splits; ++s) acc += partial[s * n_out + o];
    store(y, o, static_cast<float>(acc * scale));
  }
}

// dx[i] = g[map.offset(i)] * scale: grad_out broadcast over the reduced axes
template <typename T>
__global__ void expand_kernel(const T* g, launch::IndexMap map, T* dx, int64_t n, float scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    store(dx, i, load(g, map.offset(i)) * scale);
}

// ---- launchers -------------------------------------------------------------------

template <typename X, typename Y>
void reduce_typed(const X* x, Y* y, const launch::ReducePlan& p, double scale) {
  Context& c = context();
  int64_t cap = launch::grid_cap(c.sm_count);
  bool rows = !p.inner_kept && p.count >= kRowMin;
  int64_t splits = rows ? launch::row_splits(p.n_out, p.count, int64_t(c.sm_count) * 4)
                        : launch::column_splits(p.n_out, p.count, int64_t(c.sm_count) * 2048);
  std::unique_ptr<Scratch> partial;
  if (splits > 1) partial = std::make_unique<Scratch>(static_cast<size_t>(p.n_out * splits) * sizeof(double));
  double* part = partial ? partial->as<double>() : nullptr;
  if (rows) {
    int64_t segment = (p.count + splits - 1) / splits;
    auto blocks = static_cast<unsigned>(std::min(p.n_out * splits, kMaxRowBlocks));
    STRATA_LAUNCH(blocks, launch::row_threads(segment), 0, c.stream, reduce_rows_kernel)
    (x, y, part, splits, p, scale);
  } else {
    auto blocks = static_cast<unsigned>(launch::blocks_for(p.n_out * splits, cap));
    STRATA_LAUNCH(blocks, launch::kThreads, 0, c.stream, reduce_columns_kernel)(x, y, part, splits, p, scale);
  }
  STRATA_CUDA_LAUNCH_CHECK();
  if (splits == 1) return;
  auto blocks = static_cast<unsigned>(launch::blocks_for(p.n_out, cap));
  STRATA_LAUNCH(blocks, launch::kThreads, 0, c.stream, reduce_splits_kernel)(part, splits, p.n_out, y, scale);
  STRATA_CUDA_LAUNCH_CHECK();
}

std::vector<bool> reduced_axes(const OpAttrs& a, const Shape& s) {
  std::vector<bool> red(s.size(), a.axes.empty());
  for (auto ax : a.axes) red[static_cast<size_t>(ax < 0 ? ax + static_cast<int64_t>(s.size()) : ax)] = true;
  return red;
}

double fold_scale(const Shape& s, const std::vector<bool>& red, bool mean) {
  if (!mean) return 1.0;
  int64_t count = 1;
  for (size_t d = 0; d < s.size(); ++d)
    if (red[d]) count *= s[d];
  return 1.0 / static_cast<double>(count);  // inf for an empty fold: 0 * inf = NaN, as on the CPU
}

void forward(const OpAttrs& a, const TensorView* in, TensorView* out, bool mean, const char* what) {
  auto red = reduced_axes(a, in[0].shape);
  launch::ReducePlan p = launch::reduce_plan(in[0].shape, red, what);
  reduce_sum(in[0].data, in[0].dtype, out[0].data, out[0].dtype, p, fold_scale(in[0].shape, red, mean), what);
}

void backward(const OpAttrs& a, const TensorView* in, const TensorView& g, TensorView* gin, bool mean,
              const char* what) {
  if (!gin[0].defined()) return;
  const Shape& s = in[0].shape;
  auto red = reduced_axes(a, s);
  // strides of grad_out (the kept shape, contiguous) seen from the input's dimensions
  std::vector<int64_t> st(s.size(), 0);
  int64_t o = 1;
  for (size_t d = s.size(); d-- > 0;) {
    if (red[d]) continue;
    st[d] = o;
    o *= s[d];
  }
  launch::IndexMap map = launch::pack_index(s, st, what);
  int64_t n = in[0].numel();
  auto scale = static_cast<float>(fold_scale(s, red, mean));
  Context& c = context();
  auto blocks = static_cast<unsigned>(launch::blocks_for(n, launch::grid_cap(c.sm_count)));
  if (blocks == 0) return;
  dispatch_float(g.dtype, what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    STRATA_LAUNCH(blocks, launch::kThreads, 0, c.stream, expand_kernel)
    (data_as<const T>(g), map, data_as<T>(gin[0]), n, scale);
  });
  STRATA_CUDA_LAUNCH_CHECK();
}

}  // namespace

void reduce_sum(const void* x, DType xt, void* y, DType yt, const launch::ReducePlan& plan, double scale,
                const char* what) {
  if (plan.n_out == 0) return;
  dispatch_float(xt, what, [&](auto xtag) {
    using X = typename decltype(xtag)::type;
    dispatch_float(yt, what, [&](auto ytag) {
      using Y = typename decltype(ytag)::type;
      reduce_typed(static_cast<const X*>(x), static_cast<Y*>(y), plan, scale);
    });
  });
}

void sum_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  forward(a, in, out, false, "cuda sum_forward");
}
void sum_backward(const OpAttrs& a, const TensorView* in, const TensorView*, const TensorView& g,
                  TensorView* gin) {
  backward(a, in, g, gin, false, "cuda sum_backward");
}
void mean_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  forward(a, in, out, true, "cuda mean_forward");
}
void mean_backward(const OpAttrs& a, const TensorView* in, const TensorView*, const TensorView& g,
                   TensorView* gin) {
  backward(a, in, g, gin, true, "cuda mean_backward");
}

}  // namespace strata::cuda
