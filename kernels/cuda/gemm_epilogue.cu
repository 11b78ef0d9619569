// GEMM epilogues as separate kernels (see gemm_epilogue.h). The fused cuBLASLt
// epilogue is the fast path; these run only where it cannot, so they favour
// simplicity: scale and bias_act are one grid-stride pass over D (one read, one
// write per element, column-major so consecutive threads touch consecutive
// rows), and bias_grad is one block per 32 columns of D whose 8 row lanes stride
// over k and meet in shared memory: op(B) is read once, in FP32 accumulation.
// f16/bf16 are read and written in place through kernels/runtime/half.h.
#include <algorithm>

#include "base/error.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/gemm_epilogue.h"
#include "kernels/cuda/kernel_macros.cuh"
#include "kernels/runtime/half.h"
#include "kernels/scalar_math.h"

namespace strata::cuda::gemm_epilogue {
namespace {

// ---- kernels ----------------------------------------------------------------

// D (batch of [m, n], column-major, ldc, stride) = beta D; beta = 0 writes zeros.
template <typename T>
__global__ void scale_kernel(T* c, int64_t m, int64_t n, int64_t ldc, int64_t stride, int64_t batch,
                             float beta) {
  for (int64_t b = blockIdx.y; b < batch; b += gridDim.y) {
    T* d = c + b * stride;
    for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < m * n;
         e += int64_t(gridDim.x) * blockDim.x) {
      T& v = d[gemm::col_major(e % m, e / m, ldc)];
      v = beta == 0.0f ? T(0.0f) : T(beta * static_cast<float>(v));
    }
  }
}

// D[i, j] = act(D[i, j] + bias[i]), act = GELU (tanh form) when `gelu`.
template <typename T>
__global__ void bias_act_kernel(T* c, const T* bias, int64_t m, int64_t n, int64_t ldc, int64_t stride,
                                int64_t batch, bool gelu) {
  for (int64_t b = blockIdx.y; b < batch; b += gridDim.y) {
    T* d = c + b * stride;
    for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < m * n;
         e += int64_t(gridDim.x) * blockDim.x) {
      int64_t i = e % m;
      T& v = d[gemm::col_major(i, e / m, ldc)];
      float x = static_cast<float>(v) + (bias ? static_cast<float>(bias[i]) : 0.0f);
      v = T(gelu ? math::gelu(x) : x);
    }
  }
}

constexpr int kCols = 32, kLanes = 8;

// bias[j] = sum_q op(B)[q, j], op(B) read from B stored column-major with ldb.
template <typename T>
__global__ void bias_grad_kernel(const T* x, T* bias, int64_t k, int64_t n, int64_t ldb, bool transb) {
  STRATA_SHARED(float, part, [kLanes][kCols]);
  int64_t j = int64_t(blockIdx.x) * kCols + threadIdx.x;
  float s = 0.0f;
  if (j < n)
    for (int64_t q = threadIdx.y; q < k; q += kLanes)
      s += static_cast<float>(x[gemm::op_element(transb, q, j, ldb)]);
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && j < n) {
    for (int l = 1; l < kLanes; ++l) s += part[l][threadIdx.x];
    bias[j] = T(s);
  }
}

// ---- launchers ----------------------------------------------------------------

template <typename Fn>
void by_dtype(DType dt, const char* what, Fn fn) {
  switch (dt) {
    case DType::f32:
      fn(float{});
      break;
    case DType::f16:
      fn(f16_t{});
      break;
    case DType::bf16:
      fn(bf16_t{});
      break;
    default:
      throw Error(std::string("gemm epilogue ") + what + ": f32/f16/bf16 only, got " + dtype_name(dt));
  }
}

dim3 grid_for(int64_t elems, int64_t batch) {
  int64_t blocks = std::clamp<int64_t>((elems + 255) / 256, 1, 4096);
  return dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(std::clamp<int64_t>(batch, 1, 65535)));
}

}  // namespace

void scale(const gemm::GemmPlan& p, const gemm::GemmCall& call, void* c, DType dt) {
  if (p.m == 0 || p.n == 0 || call.batch == 0) return;
  by_dtype(dt, "scale", [&](auto tag) {
    using T = decltype(tag);
    STRATA_LAUNCH(grid_for(p.m * p.n, call.batch), 256, 0, context().stream, scale_kernel<T>)
    (static_cast<T*>(c) + call.off_c, p.m, p.n, p.ldc, call.stride_c, call.batch, call.beta);
    STRATA_CUDA_LAUNCH_CHECK();
  });
}

void bias_act(const gemm::GemmPlan& p, const gemm::GemmCall& call, void* c, const void* bias, DType dt) {
  if (p.m == 0 || p.n == 0 || call.batch == 0) return;
  by_dtype(dt, "bias_act", [&](auto tag) {
    using T = decltype(tag);
    STRATA_LAUNCH(grid_for(p.m * p.n, call.batch), 256, 0, context().stream, bias_act_kernel<T>)
    (static_cast<T*>(c) + call.off_c, static_cast<const T*>(bias), p.m, p.n, p.ldc, call.stride_c, call.batch,
     gemm::epilogue_has_gelu(p.epilogue));
    STRATA_CUDA_LAUNCH_CHECK();
  });
}

void bias_grad(const gemm::GemmPlan& p, const void* x, void* bias, DType dt) {
  if (p.n == 0) return;
  if (p.calls.size() != 1 || p.calls[0].batch != 1)
    throw Error("gemm epilogue bias_grad: needs one call of batch 1");
  by_dtype(dt, "bias_grad", [&](auto tag) {
    using T = decltype(tag);
    unsigned blocks = static_cast<unsigned>((p.n + kCols - 1) / kCols);
    STRATA_LAUNCH(blocks, dim3(kCols, kLanes), 0, context().stream, bias_grad_kernel<T>)
    (static_cast<const T*>(x) + p.calls[0].off_x, static_cast<T*>(bias), p.k, p.n, p.ldb, p.transb);
    STRATA_CUDA_LAUNCH_CHECK();
  });
}

}  // namespace strata::cuda::gemm_epilogue
