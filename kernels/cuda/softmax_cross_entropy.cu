// Fused cross-entropy with label smoothing over logits [N, C] in f32/f16/bf16,
// FP32 arithmetic. Forward is one pass over each row (a warp or a block per row,
// row_launch.h) keeping the online max/sum pair and the sum of the logits; the
// group reduction gives the row's log-sum-exp (saved as lse [N], f32) and its
// loss math::cross_entropy_row_loss into an [N] f32 scratch, which one block then
// sums in double in a fixed order: the mean is deterministic. Logits are read
// once, and nothing of size [N, C] is written. Backward reads each logit once and
// writes dlogits = (exp(x - lse) - smoothed one-hot) * grad / N
// (math::cross_entropy_grad) straight into the logits' dtype: the probabilities
// are recomputed in registers, never stored. The loss gradient is read on the
// device, so nothing waits for the host. Rows that are whole 16-byte chunks on
// aligned buffers move in 16-byte loads and stores (row_walk.cuh). Labels are checked on the device: a label
// outside [0, C) makes its row's loss and gradient NaN (the mean loss NaN) rather
// than reading out of bounds; the CPU backend throws for the same input.
#include <cmath>
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

constexpr const char* kOp = "cuda cross_entropy";
constexpr int kMeanThreads = 1024;

// loss, lse and the loss gradient are statistics: f32 beside any logits dtype (op_table.h)
void require_f32(DType dt, const char* what) {
  if (dt != DType::f32)
    throw Error(std::string("cuda cross_entropy: ") + what + " must be f32 (a statistic), got " +
                dtype_name(dt));
}

// ---------------------------------------------------------------- kernels

// x [N, C], labels [N] -> lse [N], row_loss [N]
template <typename T, bool kVector>
__global__ void cross_entropy_rows_kernel(const T* x, const int64_t* labels, float* lse, float* row_loss,
                                          int64_t rows, int64_t cols, int tpr, float eps) {
  int lane;
  int64_t row = group_row(rows, tpr, &lane);
  if (row < 0) return;
  const T* xr = x + row * cols;
  math::OnlineLse<float> st;
  float sum_x = 0;
  row_read<kVector>(xr, cols, lane, tpr, [&](int64_t, float v) {
    st.add(v);
    sum_x += v;
  });
  float l = row_lse(st, tpr).lse();
  sum_x = row_sum(sum_x, tpr);
  if (lane != 0) return;
  int64_t y = labels[row];
  lse[row] = l;
  row_loss[row] = (y < 0 || y >= cols) ? NAN
                                       : math::cross_entropy_row_loss<float>(
                                             l, load(xr, y), sum_x / static_cast<float>(cols), eps);
}

// loss[0] = mean of row_loss [N], summed in double by one block in a fixed order
__global__ void mean_kernel(const float* row_loss, float* loss, int64_t n) {
  double acc = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc += row_loss[i];
  acc = row_sum(acc, static_cast<int>(blockDim.x));
  if (threadIdx.x == 0) *loss = static_cast<float>(acc / static_cast<double>(n));
}

// dx [N, C] = (exp(x - lse) - t) * grad[0] / N, t = (1 - eps) onehot(label) + eps / C
template <typename T, bool kVector>
__global__ void cross_entropy_backward_kernel(const T* x, const int64_t* labels, const float* lse,
                                              const float* grad, T* dx, int64_t rows, int64_t cols, int tpr,
                                              float smooth, float hit) {
  int lane;
  int64_t row = group_row(rows, tpr, &lane);
  if (row < 0) return;
  float scale = *grad / static_cast<float>(rows);
  int64_t y = labels[row];
  bool bad = y < 0 || y >= cols;
  float l = lse[row];
  row_map<kVector>(x + row * cols, dx + row * cols, cols, lane, tpr, [&](int64_t j, float v) {
    return bad ? NAN : math::cross_entropy_grad<float>(v, l, j == y, smooth, hit, scale);
  });
}

}  // namespace

// ---------------------------------------------------------------- launchers

void cross_entropy_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  const TensorView &x = in[0], &labels = in[1];
  require_f32(out[0].dtype, "loss");
  require_f32(out[1].dtype, "lse");
  int64_t rows = x.shape[0], cols = x.shape[1];
  RowLaunch l = row_launch(rows, cols, kOp);
  cudaStream_t stream = context().stream;
  Scratch row_loss(static_cast<size_t>(rows) * sizeof(float));
  dispatch_float(x.dtype, "cuda cross_entropy logits", [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_vector(row_vectorizable(cols, sizeof(T), {x.data}), [&](auto vec) {
      STRATA_LAUNCH(static_cast<unsigned>(l.grid), l.block, 0, stream,
                    cross_entropy_rows_kernel<T, decltype(vec)::value>)
      (x.as<const T>(), labels.as<const int64_t>(), out[1].as<float>(), row_loss.as<float>(), rows, cols,
       l.threads_per_row, static_cast<float>(a.label_smoothing));
    });
  });
  STRATA_CUDA_LAUNCH_CHECK();
  STRATA_LAUNCH(1, kMeanThreads, 0, stream, mean_kernel)
  (row_loss.as<const float>(), out[0].as<float>(), rows);
  STRATA_CUDA_LAUNCH_CHECK();
}

void cross_entropy_backward(const OpAttrs& a, const TensorView* in, const TensorView* out,
                            const TensorView& g, TensorView* gin) {
  if (!gin[0].defined()) return;
  const TensorView &x = in[0], &labels = in[1];
  require_f32(out[1].dtype, "lse");
  require_f32(g.dtype, "loss gradient");
  if (gin[0].dtype != x.dtype)
    throw Error(std::string("cuda cross_entropy: dlogits must have the logits' dtype ") +
                dtype_name(x.dtype) + ", got " + dtype_name(gin[0].dtype));
  int64_t rows = x.shape[0], cols = x.shape[1];
  RowLaunch l = row_launch(rows, cols, kOp);
  float smooth = static_cast<float>(a.label_smoothing / static_cast<double>(cols));
  float hit = static_cast<float>(1 - a.label_smoothing);
  dispatch_float(x.dtype, "cuda cross_entropy logits", [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_vector(row_vectorizable(cols, sizeof(T), {x.data, gin[0].data}), [&](auto vec) {
      STRATA_LAUNCH(static_cast<unsigned>(l.grid), l.block, 0, context().stream,
                    cross_entropy_backward_kernel<T, decltype(vec)::value>)
      (x.as<const T>(), labels.as<const int64_t>(), out[1].as<const float>(), g.as<const float>(),
       gin[0].as<T>(), rows, cols, l.threads_per_row, smooth, hit);
    });
  });
  STRATA_CUDA_LAUNCH_CHECK();
}

}  // namespace strata::cuda
