// Warp and block sums with shuffles, shared by the CUDA reduction kernels. The
// combination order depends only on blockDim, so a given launch shape gives the
// same bits on every run (no atomics).
#pragma once
#include <cuda_runtime.h>

#include "kernels/cuda/kernel_macros.cuh"

namespace strata::cuda {

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum of v over the block; every thread receives it. blockDim.x must be a
// multiple of 32 (at most 1024) and every thread of the block must call it.
template <typename T>
__device__ __forceinline__ T block_sum(T v) {
  STRATA_SHARED(T, partial, [32]);
  const int lane = static_cast<int>(threadIdx.x & 31u), warp = static_cast<int>(threadIdx.x >> 5);
  v = warp_sum(v);
  __syncthreads();  // an earlier call's readers are done with `partial`
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = static_cast<int>(blockDim.x >> 5);
  return warp_sum(lane < warps ? partial[lane] : T(0));
}

}  // namespace strata::cuda
