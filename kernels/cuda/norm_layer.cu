// layer_norm on CUDA over the last axis of x[rows, D] (f32/f16/bf16), gamma/beta
// [D] each in x's dtype or f32, saved mean/rstd [rows] in f32. Forward is fused,
// one warp per row: the row's sum, its centred sum of squares (the row is then
// in L1), and y = (x - mean) rstd gamma + beta -- x read once from DRAM, y
// written once. Backward: one warp per row computes the row means of dxhat and
// dxhat xhat and writes dx (x and g read once each from DRAM); dgamma/dbeta sum
// over rows, which the deterministic two-stage reduction of channel_reduce.cuh
// does with the columns as channels (x and g read once more, coalesced).
#include <string>

#include "kernels/backends.h"
#include "kernels/cuda/channel_reduce.cuh"
#include "kernels/cuda/half_io.cuh"
#include "kernels/cuda/kernel_macros.cuh"
#include "kernels/norm_math.h"

namespace strata::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;

// ---------------------------------------------------------------- kernels

__device__ __forceinline__ float warp_allsum(float v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

template <typename T>
__global__ void layer_norm_forward_kernel(int64_t rows, int64_t D, const T* x, AnyFloat gamma, AnyFloat beta,
                                          double eps, T* y, float* mean_out, float* rstd_out) {
  int64_t r = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (r >= rows) return;
  const T* xr = x + r * D;
  float s = 0.0f;
  for (int64_t j = lane; j < D; j += 32) s += to_float(xr[j]);
  float m = warp_allsum(s) / static_cast<float>(D);
  float ss = 0.0f;
  for (int64_t j = lane; j < D; j += 32) {
    float d = to_float(xr[j]) - m;
    ss += d * d;
  }
  float rstd = norm::invstd_from_m2(warp_allsum(ss), static_cast<double>(D), eps);
  if (lane == 0) {
    mean_out[r] = m;
    rstd_out[r] = rstd;
  }
  T* yr = y + r * D;
  for (int64_t j = lane; j < D; j += 32)
    yr[j] = from_float<T>((to_float(xr[j]) - m) * rstd * gamma.load(j) + beta.load(j));
}

template <typename T>
__global__ void layer_norm_dx_kernel(int64_t rows, int64_t D, const T* x, const T* go, AnyFloat gamma,
                                     const float* mean, const float* rstd, T* dx) {
  int64_t r = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (r >= rows) return;
  const T *xr = x + r * D, *gr = go + r * D;
  float m = mean[r], rs = rstd[r], m1 = 0.0f, m2 = 0.0f;
  for (int64_t j = lane; j < D; j += 32) {
    float dxhat = to_float(gr[j]) * gamma.load(j);
    m1 += dxhat;
    m2 += dxhat * ((to_float(xr[j]) - m) * rs);
  }
  m1 = warp_allsum(m1) / static_cast<float>(D);
  m2 = warp_allsum(m2) / static_cast<float>(D);
  T* dxr = dx + r * D;
  for (int64_t j = lane; j < D; j += 32)
    dxr[j] = from_float<T>(
        norm::layer_norm_dx(to_float(gr[j]) * gamma.load(j), (to_float(xr[j]) - m) * rs, rs, m1, m2));
}

// dgamma/dbeta are column sums over the rows of [rows, D]: channel_reduce's
// S = 1 layout with D channels. acc = (sum g xhat, sum g) for column c.
template <typename T>
struct ParamSums {
  const T *x, *g;
  const float *mean, *rstd;
  int64_t D;
  __device__ void operator()(int64_t i, int64_t, float (&acc)[2]) const {
    int64_t r = i / D;
    float go = to_float(g[i]);
    acc[0] += go * ((to_float(x[i]) - mean[r]) * rstd[r]);
    acc[1] += go;
  }
};

struct StoreParamGrads {
  AnyFloat dgamma, dbeta;  // data == nullptr: not wanted
  __device__ void operator()(int64_t c, const float (&s)[2]) const {
    if (dgamma.data) dgamma.store(c, s[0]);
    if (dbeta.data) dbeta.store(c, s[1]);
  }
};

// ---------------------------------------------------------------- launchers

float* stat_ptr(const TensorView& v, const char* what) {
  if (v.dtype != DType::f32)
    throw Error(std::string("layer_norm: ") + what + " must be f32 on CUDA (stat_dtype), got " +
                dtype_name(v.dtype));
  return v.as<float>();
}

unsigned row_blocks(int64_t rows) {
  return static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

}  // namespace

void layer_norm_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  int64_t D = in[0].shape.back();
  if (D == 0 || in[0].numel() == 0) return;  // no row to normalise
  int64_t rows = in[0].numel() / D;
  const char* op = "layer_norm";
  AnyFloat gamma = any_float(in[1].data, in[1].dtype, op, "gamma");
  AnyFloat beta = any_float(in[2].data, in[2].dtype, op, "beta");
  float *mean = stat_ptr(out[1], "mean"), *rstd = stat_ptr(out[2], "rstd");
  dispatch_float(in[0].dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    STRATA_LAUNCH(row_blocks(rows), kWarpsPerBlock * 32, 0, context().stream, layer_norm_forward_kernel<T>)
    (rows, D, in[0].as<const T>(), gamma, beta, a.eps, out[0].as<T>(), mean, rstd);
    STRATA_CUDA_LAUNCH_CHECK();
  });
}

void layer_norm_backward(const OpAttrs&, const TensorView* in, const TensorView* out, const TensorView& gout,
                         TensorView* gin) {
  int64_t D = in[0].shape.back();
  if (D == 0 || in[0].numel() == 0) {
    // no rows: dgamma and dbeta are sums over nothing
    for (int k = 1; k < 3; ++k)
      if (gin[k].defined())
        STRATA_CUDA_CHECK(cudaMemsetAsync(gin[k].data, 0, gin[k].bytes(), context().stream));
    return;
  }
  int64_t rows = in[0].numel() / D;
  const char* op = "layer_norm";
  const float *mean = stat_ptr(out[1], "mean"), *rstd = stat_ptr(out[2], "rstd");
  AnyFloat gamma = any_float(in[1].data, in[1].dtype, op, "gamma");
  if (gout.dtype != in[0].dtype || (gin[0].defined() && gin[0].dtype != in[0].dtype))
    throw Error(std::string("layer_norm backward: grad dtypes must be the input's ") +
                dtype_name(in[0].dtype));
  Context& ctx = context();
  dispatch_float(in[0].dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *x = in[0].as<const T>(), *go = gout.as<const T>();
    if (gin[0].defined()) {
      STRATA_LAUNCH(row_blocks(rows), kWarpsPerBlock * 32, 0, ctx.stream, layer_norm_dx_kernel<T>)
      (rows, D, x, go, gamma, mean, rstd, gin[0].as<T>());
      STRATA_CUDA_LAUNCH_CHECK();
    }
    if (!gin[1].defined() && !gin[2].defined()) return;
    AnyFloat dgamma{nullptr, DType::f32}, dbeta{nullptr, DType::f32};
    if (gin[1].defined()) dgamma = any_float(gin[1].data, gin[1].dtype, op, "grad of gamma");
    if (gin[2].defined()) dbeta = any_float(gin[2].data, gin[2].dtype, op, "grad of beta");
    channel_reduce<2>(rows, D, 1, ParamSums<T>{x, go, mean, rstd, D}, StoreParamGrads{dgamma, dbeta});
  });
}

}  // namespace strata::cuda
