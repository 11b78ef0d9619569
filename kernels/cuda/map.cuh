// The contiguous elementwise map shared by the CUDA elementwise and activation
// kernels: out[i] = f(in_0[i], ..., in_{N-1}[i]) for N <= 3 inputs of one storage
// type, FP32 arithmetic. When every pointer is 16-byte aligned (and the output's
// element size matches) each step moves 16 bytes per operand (load_vec /
// store_vec) and the tail goes element by element; otherwise one element per
// step. Grid-stride loop, one read of each input and one write per element.
#pragma once
#include "kernels/cuda/context.h"
#include "kernels/cuda/half_io.cuh"
#include "kernels/cuda/kernel_macros.cuh"
#include "kernels/launch_shape.h"

namespace strata::cuda {

template <typename T, int N>
struct MapInputs {
  const T* p[N];
};

// ---- kernels -------------------------------------------------------------------

template <int N, typename F>
__device__ __forceinline__ float map_apply(const F& f, const float* v) {
  if constexpr (N == 1)
    return f(v[0]);
  else if constexpr (N == 2)
    return f(v[0], v[1]);
  else
    return f(v[0], v[1], v[2]);
}

// out[i] = f(in_0[i], ..., in_{N-1}[i]) over contiguous buffers; VEC: 16-byte
// steps (all pointers aligned), the tail element by element.
template <int N, bool VEC, typename T, typename O, typename F>
__global__ void map_kernel(MapInputs<T, N> in, O* out, int64_t n, F f) {
  constexpr int V = VEC ? kVec<T> : 1;
  static_assert(!VEC || kVec<T> == kVec<O>, "vector steps need equal element sizes");
  int64_t stride = int64_t(gridDim.x) * blockDim.x, nv = n / V;
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < nv; j += stride) {
    float v[N][V], r[V];
    if constexpr (VEC) {
#pragma unroll
      for (int k = 0; k < N; ++k) load_vec(in.p[k], j * V, v[k]);
    } else {
#pragma unroll
      for (int k = 0; k < N; ++k) v[k][0] = load(in.p[k], j);
    }
#pragma unroll
    for (int e = 0; e < V; ++e) {
      float a[N];
#pragma unroll
      for (int k = 0; k < N; ++k) a[k] = v[k][e];
      r[e] = map_apply<N>(f, a);
    }
    if constexpr (VEC)
      store_vec(out, j * V, r);
    else
      store(out, j, r[0]);
  }
  for (int64_t i = nv * V + blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += stride) {
    float a[N];
#pragma unroll
    for (int k = 0; k < N; ++k) a[k] = load(in.p[k], i);
    store(out, i, map_apply<N>(f, a));
  }
}

// ---- launchers -------------------------------------------------------------------

inline unsigned elementwise_blocks(int64_t n, int per_thread = 1) {
  return static_cast<unsigned>(
      launch::blocks_for(n, launch::grid_cap(context().sm_count), launch::kThreads, per_thread));
}

// Queues the map on the context stream; n == 0 launches nothing.
template <int N, typename T, typename O, typename F>
void map_elements(MapInputs<T, N> in, O* out, int64_t n, F f) {
  if (n == 0) return;
  cudaStream_t s = context().stream;
  bool vec = vec_aligned(out) && sizeof(T) == sizeof(O);
  for (int k = 0; k < N; ++k) vec = vec && vec_aligned(in.p[k]);
  if constexpr (sizeof(T) == sizeof(O)) {
    if (vec) {
      STRATA_LAUNCH(elementwise_blocks(n, kVec<T>), launch::kThreads, 0, s, map_kernel<N, true>)
      (in, out, n, f);
      STRATA_CUDA_LAUNCH_CHECK();
      return;
    }
  }
  STRATA_LAUNCH(elementwise_blocks(n), launch::kThreads, 0, s, map_kernel<N, false>)(in, out, n, f);
  STRATA_CUDA_LAUNCH_CHECK();
}

}  // namespace strata::cuda
