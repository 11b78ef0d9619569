// The row group of a thread and reductions over the threads of one row group (kernels/cuda/row_launch.h): a
// butterfly of warp shuffles, then, for a group wider than a warp (one group per
// block), the warps' partials through shared memory, combined by every thread in
// warp order. Each step combines a pair commutatively, so every thread of the
// group ends with the same bits and all of them write with the same statistic;
// the order is fixed by the launch shape, so results are deterministic.
#pragma once
#include "kernels/cuda/kernel_macros.cuh"
#include "kernels/cuda/row_launch.h"
#include "kernels/scalar_math.h"

namespace strata::cuda {

inline constexpr unsigned kFullMask = 0xffffffffu;

// The row this thread's group owns (and its lane in the group), or -1 past the
// last row: that happens only to whole one-warp groups, which share a block
// without barriers, so an early return skips no __syncthreads.
__device__ __forceinline__ int64_t group_row(int64_t rows, int tpr, int* lane) {
  *lane = static_cast<int>(threadIdx.x) % tpr;
  int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / tpr) + threadIdx.x / tpr;
  return row < rows ? row : -1;
}

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int o = kWarp / 2; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

__device__ __forceinline__ math::OnlineLse<float> warp_lse(math::OnlineLse<float> st) {
  for (int o = kWarp / 2; o > 0; o >>= 1) {
    float om = __shfl_xor_sync(kFullMask, st.m, o), os = __shfl_xor_sync(kFullMask, st.s, o);
    st.merge(om, os);
  }
  return st;
}

// The sum of v over the group of tpr threads (tpr == kWarp, or tpr == blockDim.x).
template <typename T>
__device__ T row_sum(T v, int tpr) {
  v = warp_sum(v);
  if (tpr == kWarp) return v;
  STRATA_SHARED(T, part, [kMaxBlock / kWarp]);
  if (threadIdx.x % kWarp == 0) part[threadIdx.x / kWarp] = v;
  __syncthreads();
  T total = 0;
  for (int w = 0; w < tpr / kWarp; ++w) total += part[w];
  __syncthreads();  // part[] is free for the next reduction
  return total;
}

// The merged softmax statistics of the group (same group rule as row_sum).
__device__ inline math::OnlineLse<float> row_lse(math::OnlineLse<float> st, int tpr) {
  st = warp_lse(st);
  if (tpr == kWarp) return st;
  STRATA_SHARED(float, pm, [kMaxBlock / kWarp]);
  STRATA_SHARED(float, ps, [kMaxBlock / kWarp]);
  if (threadIdx.x % kWarp == 0) {
    pm[threadIdx.x / kWarp] = st.m;
    ps[threadIdx.x / kWarp] = st.s;
  }
  __syncthreads();
  math::OnlineLse<float> total;
  for (int w = 0; w < tpr / kWarp; ++w) total.merge(pm[w], ps[w]);
  __syncthreads();
  return total;
}

}  // namespace strata::cuda
