// Per-channel sums over x[N, C, S] (NCHW with S = H W), deterministic: stage 1
// gives each channel `splits` blocks (grid C x splits); each thread walks its
// block's slice of the channel's N S values (plane by plane: contiguous runs of
// S), accumulating K float sums of f(i, c), which the block reduces through warp
// shuffles and shared memory into partial[c][split][K]. Stage 2 gives each
// channel one warp that adds its partials in a fixed order and hands the K sums
// to fin(c, sums). Reads the input once; the partials are C x splits x K floats.
// For S = 1 ([N, C], e.g. batch norm after a linear layer) a channel is a column
// strided by C, which the walk above would read one sector per element; there a
// thread owns a channel and walks a slice of the rows instead, so that a warp
// reads 32 adjacent channels of a row (grid: channel tiles x row slices).
#pragma once
#include <cuda_runtime.h>

#include "kernels/cuda/context.h"
#include "kernels/cuda/kernel_macros.cuh"
#include "kernels/cuda/reduce_plan.h"

namespace strata::cuda {

constexpr int kReduceThreads = 256;

// ---------------------------------------------------------------- kernels

template <int K>
__device__ __forceinline__ void warp_sum(float (&v)[K]) {
  for (int off = 16; off > 0; off >>= 1)
    for (int k = 0; k < K; ++k) v[k] += __shfl_xor_sync(0xffffffffu, v[k], off);
}

// Sums v over the block (blockDim.x == kReduceThreads); the result is in thread 0.
template <int K>
__device__ __forceinline__ void block_sum(float (&v)[K]) {
  STRATA_SHARED(float, shared, [kReduceThreads / 32][K]);
  warp_sum(v);
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0)
    for (int k = 0; k < K; ++k) shared[warp][k] = v[k];
  __syncthreads();
  if (warp == 0) {
    for (int k = 0; k < K; ++k) v[k] = lane < kReduceThreads / 32 ? shared[lane][k] : 0.0f;
    warp_sum(v);
  }
}

// f(i, c, acc) adds element i (a flat index into [N, C, S]) of channel c to acc[K].
template <int K, typename F>
__global__ void channel_partial_kernel(int64_t C, int64_t S, int64_t per_channel, int64_t chunk, F f,
                                       float* partial) {
  int64_t c = blockIdx.x, split = blockIdx.y;
  int64_t begin = split * chunk, end = min(per_channel, begin + chunk);
  float acc[K];
  for (int k = 0; k < K; ++k) acc[k] = 0.0f;
  for (int64_t j = begin + threadIdx.x; j < end; j += blockDim.x) f(channel_element(j, c, C, S), c, acc);
  block_sum(acc);
  if (threadIdx.x == 0)
    for (int k = 0; k < K; ++k) partial[(c * gridDim.y + split) * K + k] = acc[k];
}

// S == 1: thread per channel over rows [split chunk, (split + 1) chunk).
template <int K, typename F>
__global__ void column_partial_kernel(int64_t N, int64_t C, int64_t chunk, F f, float* partial) {
  int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x, split = blockIdx.y;
  if (c >= C) return;
  int64_t begin = split * chunk, end = min(N, begin + chunk);
  float acc[K];
  for (int k = 0; k < K; ++k) acc[k] = 0.0f;
  for (int64_t n = begin; n < end; ++n) f(n * C + c, c, acc);
  for (int k = 0; k < K; ++k) partial[(c * gridDim.y + split) * K + k] = acc[k];
}

// One warp per channel: lane l adds partials l, l + 32, ...; then a shuffle tree.
template <int K, typename Fin>
__global__ void channel_finish_kernel(int64_t C, int64_t splits, const float* partial, Fin fin) {
  int64_t c = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (c >= C) return;
  float acc[K];
  for (int k = 0; k < K; ++k) acc[k] = 0.0f;
  for (int64_t p = lane; p < splits; p += 32)
    for (int k = 0; k < K; ++k) acc[k] += partial[(c * splits + p) * K + k];
  warp_sum(acc);
  if (lane == 0) fin(c, acc);
}

// ---------------------------------------------------------------- launchers

// For each channel c of [N, C, S]: sums[K] = sum over its N S elements i of f(i, c),
// then fin(c, sums) on the device. Launches on context().stream.
template <int K, typename F, typename Fin>
void channel_reduce(int64_t N, int64_t C, int64_t S, F f, Fin fin) {
  if (C == 0) return;
  Context& ctx = context();
  bool columns = S == 1;
  int64_t tiles = (C + kReduceThreads - 1) / kReduceThreads;
  SplitPlan plan = columns ? plan_splits(tiles, N, ctx.sm_count, 1, 16)
                           : plan_splits(C, N * S, ctx.sm_count, kReduceThreads);
  Scratch partial(static_cast<size_t>(C * plan.splits * K) * sizeof(float));
  if (N * S == 0) {
    STRATA_CUDA_CHECK(cudaMemsetAsync(partial.data(), 0, partial.bytes(), ctx.stream));
  } else if (columns) {
    STRATA_LAUNCH(dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(plan.splits)), kReduceThreads, 0,
                  ctx.stream, column_partial_kernel<K>)
    (N, C, plan.chunk, f, partial.as<float>());
    STRATA_CUDA_LAUNCH_CHECK();
  } else {
    STRATA_LAUNCH(dim3(static_cast<unsigned>(C), static_cast<unsigned>(plan.splits)), kReduceThreads, 0,
                  ctx.stream, channel_partial_kernel<K>)
    (C, S, N * S, plan.chunk, f, partial.as<float>());
    STRATA_CUDA_LAUNCH_CHECK();
  }
  constexpr int kWarps = 8;
  STRATA_LAUNCH(static_cast<unsigned>((C + kWarps - 1) / kWarps), kWarps * 32, 0, ctx.stream,
                channel_finish_kernel<K>)
  (C, plan.splits, partial.as<float>(), fin);
  STRATA_CUDA_LAUNCH_CHECK();
}

}  // namespace strata::cuda
