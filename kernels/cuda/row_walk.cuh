// Walking one row of a row group (row_reduce.cuh). Lane l of tpr visits the
// elements l, l + tpr, ... (scalar), or, when row_vectorizable() holds (rows a
// whole number of 16-byte chunks, buffers 16-byte aligned), the chunks
// l, l + tpr, ... of kVec<T> elements each, so that every load and store is one
// 16-byte transaction (8 halves or 4 floats) instead of kVec<T> narrow ones.
// Callbacks see the element index and the values as float either way; maps
// return the float to store. Which elements a lane visits differs between the
// two walks, so a reduction's rounding does too, but each is deterministic.
#pragma once
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/half_io.cuh"

namespace strata::cuda {

// Elements a lane takes per step: one 16-byte chunk (vector walk) or one element.
template <bool kVector, typename T>
inline constexpr int kStep = kVector ? kVec<T> : 1;

// v[k] = p[j + k] for k < kStep, as float
template <bool kVector, typename T>
__device__ __forceinline__ void load_step(const T* p, int64_t j, float (&v)[kStep<kVector, T>]) {
  if constexpr (kVector)
    load_vec(p, j, v);
  else
    v[0] = load(p, j);
}
// p[j + k] = v[k] for k < kStep
template <bool kVector, typename T>
__device__ __forceinline__ void store_step(T* p, int64_t j, const float (&v)[kStep<kVector, T>]) {
  if constexpr (kVector)
    store_vec(p, j, v);
  else
    store(p, j, v[0]);
}

// f(j, a_j)
template <bool kVector, typename T, typename F>
__device__ __forceinline__ void row_read(const T* a, int64_t cols, int lane, int tpr, F&& f) {
  constexpr int V = kStep<kVector, T>;
  for (int64_t j = static_cast<int64_t>(lane) * V; j < cols; j += static_cast<int64_t>(tpr) * V) {
    float va[V];
    load_step<kVector>(a, j, va);
#pragma unroll
    for (int k = 0; k < V; ++k) f(j + k, va[k]);
  }
}

// f(j, a_j, b_j)
template <bool kVector, typename T, typename F>
__device__ __forceinline__ void row_read2(const T* a, const T* b, int64_t cols, int lane, int tpr, F&& f) {
  constexpr int V = kStep<kVector, T>;
  for (int64_t j = static_cast<int64_t>(lane) * V; j < cols; j += static_cast<int64_t>(tpr) * V) {
    float va[V], vb[V];
    load_step<kVector>(a, j, va);
    load_step<kVector>(b, j, vb);
#pragma unroll
    for (int k = 0; k < V; ++k) f(j + k, va[k], vb[k]);
  }
}

// out_j = f(j, a_j)
template <bool kVector, typename T, typename F>
__device__ __forceinline__ void row_map(const T* a, T* out, int64_t cols, int lane, int tpr, F&& f) {
  constexpr int V = kStep<kVector, T>;
  for (int64_t j = static_cast<int64_t>(lane) * V; j < cols; j += static_cast<int64_t>(tpr) * V) {
    float v[V];
    load_step<kVector>(a, j, v);
#pragma unroll
    for (int k = 0; k < V; ++k) v[k] = f(j + k, v[k]);
    store_step<kVector>(out, j, v);
  }
}

// out_j = f(j, a_j, b_j)
template <bool kVector, typename T, typename F>
__device__ __forceinline__ void row_map2(const T* a, const T* b, T* out, int64_t cols, int lane, int tpr,
                                         F&& f) {
  constexpr int V = kStep<kVector, T>;
  for (int64_t j = static_cast<int64_t>(lane) * V; j < cols; j += static_cast<int64_t>(tpr) * V) {
    float va[V], vb[V];
    load_step<kVector>(a, j, va);
    load_step<kVector>(b, j, vb);
#pragma unroll
    for (int k = 0; k < V; ++k) va[k] = f(j + k, va[k], vb[k]);
    store_step<kVector>(out, j, va);
  }
}

// Host side: calls f(std::true_type{}) or f(std::false_type{}), so a launcher
// picks the kVector instantiation of its kernel from a run-time test.
template <typename F>
void with_vector(bool vector, F&& f) {
  if (vector)
    f(std::true_type{});
  else
    f(std::false_type{});
}

}  // namespace strata::cuda
