// conv2d's bias on CUDA (conv_bias.h): the forward add is one grid-stride pass
// over y (read + write y once more after cuDNN wrote it), the backward a
// deterministic per-channel sum of dy (channel_reduce.cuh, dy read once).
#include <algorithm>

#include "kernels/cuda/channel_reduce.cuh"
#include "kernels/cuda/conv_bias.h"
#include "kernels/cuda/half_io.cuh"
#include "kernels/cuda/kernel_macros.cuh"

namespace strata::cuda::conv_bias {
namespace {

constexpr int kThreads = 256;
const char* kOp = "conv2d";

// ---------------------------------------------------------------- kernels

template <typename T>
__global__ void bias_add_kernel(int64_t n, int64_t O, int64_t S, AnyFloat b, T* y) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = from_float<T>(to_float(y[i]) + b.load(channel_of(i, O, S)));
}

template <typename T>
struct SumDy {
  const T* dy;
  __device__ void operator()(int64_t i, int64_t, float (&acc)[1]) const { acc[0] += to_float(dy[i]); }
};

struct StoreSum {
  AnyFloat out;
  __device__ void operator()(int64_t c, const float (&s)[1]) const { out.store(c, s[0]); }
};

unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::min<int64_t>(b, 65536 * 32));
}

}  // namespace

// ---------------------------------------------------------------- launchers

void add(const TensorView& bias, const TensorView& y) {
  AnyFloat b = any_float(bias.data, bias.dtype, kOp, "bias");
  if (y.numel() == 0) return;
  const int64_t channels = y.shape[1], plane = y.shape[2] * y.shape[3];
  dispatch_float(y.dtype, kOp, [&](auto tag) {
    using T = typename decltype(tag)::type;
    STRATA_LAUNCH(blocks_for(y.numel()), kThreads, 0, context().stream, bias_add_kernel<T>)
    (y.numel(), channels, plane, b, y.as<T>());
    STRATA_CUDA_LAUNCH_CHECK();
  });
}

void grad(const TensorView& dy, const TensorView& db) {
  AnyFloat out = any_float(db.data, db.dtype, kOp, "grad of bias");
  dispatch_float(dy.dtype, kOp, [&](auto tag) {
    using T = typename decltype(tag)::type;
    channel_reduce<1>(dy.shape[0], dy.shape[1], dy.shape[2] * dy.shape[3], SumDy<T>{dy.as<const T>()},
                      StoreSum{out});
  });
}

}  // namespace strata::cuda::conv_bias
