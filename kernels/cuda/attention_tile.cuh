// Block-level building blocks of the attention kernels (kernels/cuda/attention.cu):
// element conversion, a tile copy from global into shared memory with zero
// padding, warp reductions, and a shared-memory GEMM that all threads of a block
// run together. The GEMM is WMMA (HMMA Tensor Core instructions, FP32
// accumulate) for f16/bf16 and a plain FP32 loop on CUDA cores for f32, so the
// kernels above it are written once for the three dtypes.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/kernel_macros.cuh"

namespace strata::cuda::attn_tile {

// q, k [heads][t][d], v, o, dout [heads][t][dv], lse, delta [heads][t] (f32).
template <typename T>
struct Params {
  const T *q, *k, *v, *o, *dout;
  T *out, *dq, *dk, *dv;
  float *lse, *delta, *dq_acc;
  int64_t t;
  int d, dv_dim;
  float scale;
};

template <typename T>
__device__ __forceinline__ float to_float(T x) {
  if constexpr (std::is_same_v<T, float>)
    return x;
  else if constexpr (std::is_same_v<T, __half>)
    return __half2float(x);
  else
    return __bfloat162float(x);
}

template <typename T>
__device__ __forceinline__ T from_float(float x) {
  if constexpr (std::is_same_v<T, float>)
    return x;
  else if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(x);
  else
    return __float2bfloat16_rn(x);
}

__device__ __forceinline__ float warp_max(float x) {
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
__device__ __forceinline__ float warp_sum(float x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

// dst[r][c] (row stride ld) = src[row0 + r][c] of a [t][cols] matrix for
// r < rows, c < cols_pad; zero where row0 + r >= t or c >= cols. Consecutive
// threads take consecutive columns, so global reads are coalesced; 16-byte
// vectors when the rows allow (cols a multiple of 16 bytes, src aligned), which
// is always so on the D = 64 / 128 paths with allocator-aligned tensors.
template <typename T>
__device__ void load_tile(T* dst, int ld, const T* src, int64_t row0, int rows, int64_t t, int cols,
                          int cols_pad) {
  constexpr int kVec = 16 / sizeof(T);
  if (cols % kVec == 0 && reinterpret_cast<uintptr_t>(src) % 16 == 0) {
    const int vecs = cols_pad / kVec;  // cols_pad is a multiple of 16 elements
    for (int idx = threadIdx.x; idx < rows * vecs; idx += blockDim.x) {
      int r = idx / vecs, c = (idx % vecs) * kVec;
      int64_t g = row0 + r;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (g < t && c < cols) {
        STRATA_VECTOR_ACCESS(src + g * cols + c, 16, "tile load");
        v = *reinterpret_cast<const uint4*>(src + g * cols + c);
      }
      STRATA_VECTOR_ACCESS(dst + r * ld + c, 16, "tile store");
      *reinterpret_cast<uint4*>(dst + r * ld + c) = v;
    }
    return;
  }
  for (int idx = threadIdx.x; idx < rows * cols_pad; idx += blockDim.x) {
    int r = idx / cols_pad, c = idx % cols_pad;
    int64_t g = row0 + r;
    dst[r * ld + c] = (g < t && c < cols) ? src[g * cols + c] : from_float<T>(0.0f);
  }
}

__device__ inline void fill_f32(float* dst, int ld, int rows, int cols, float v) {
  for (int idx = threadIdx.x; idx < rows * cols; idx += blockDim.x) dst[(idx / cols) * ld + idx % cols] = v;
}

// C[m][n] (f32, row stride ldc) = (kAcc ? C : 0) + op(A) op(B), all in shared
// memory, m, n, k multiples of 16. A is [m][k] row-major, or with kAT stored as
// [k][m] (so op(A) = the transpose of what is stored); B is [k][n] row-major, or
// with kBT stored as [n][k]. Every thread of the block calls it; it does not
// synchronise: the caller puts __syncthreads() between producers and consumers.
template <typename T, bool kAT, bool kBT, bool kAcc>
__device__ void block_gemm(const T* a, int lda, const T* b, int ldb, float* c, int ldc, int m, int n, int k) {
  if constexpr (std::is_same_v<T, float>) {
    // FP32 on CUDA cores: no TF32 (the f32 op keeps full precision)
    for (int idx = threadIdx.x; idx < m * n; idx += blockDim.x) {
      int r = idx / n, col = idx % n;
      float acc = kAcc ? c[r * ldc + col] : 0.0f;
      for (int e = 0; e < k; ++e) {
        float x = kAT ? a[e * lda + r] : a[r * lda + e];
        float y = kBT ? b[col * ldb + e] : b[e * ldb + col];
        acc = fmaf(x, y, acc);
      }
      c[r * ldc + col] = acc;
    }
  } else {
    namespace w = nvcuda::wmma;
    using LayoutA = std::conditional_t<kAT, w::col_major, w::row_major>;
    using LayoutB = std::conditional_t<kBT, w::col_major, w::row_major>;
    const int warp = threadIdx.x / 32, warps = blockDim.x / 32;
    const int tiles_n = n / 16;
    for (int tile = warp; tile < (m / 16) * tiles_n; tile += warps) {
      const int ti = tile / tiles_n, tj = tile % tiles_n;
      float* cp = c + ti * 16 * ldc + tj * 16;
      w::fragment<w::accumulator, 16, 16, 16, float> acc;
      if (kAcc)
        w::load_matrix_sync(acc, cp, ldc, w::mem_row_major);
      else
        w::fill_fragment(acc, 0.0f);
      for (int kk = 0; kk < k; kk += 16) {
        w::fragment<w::matrix_a, 16, 16, 16, T, LayoutA> fa;
        w::fragment<w::matrix_b, 16, 16, 16, T, LayoutB> fb;
        w::load_matrix_sync(fa, kAT ? a + kk * lda + ti * 16 : a + ti * 16 * lda + kk, lda);
        w::load_matrix_sync(fb, kBT ? b + tj * 16 * ldb + kk : b + kk * ldb + tj * 16, ldb);
        w::mma_sync(acc, fa, fb, acc);
      }
      w::store_matrix_sync(cp, acc, ldc, w::mem_row_major);
    }
  }
}

}  // namespace strata::cuda::attn_tile
