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

// f(j, a_j)
template <bool kVector, typename T, typename F>
__device__ __forceinline__ void row_read(const T* a, int64_t cols, int lane, int tpr, F&& f) {
  if constexpr (kVector) {
    constexpr int V = kVec<T>;
    for (int64_t j = static_cast<int64_t>(lane) * V; j < cols; j += static_cast<int64_t>(tpr) * V) {
      float va[V];
      load_vec(a, j, va);
#pragma unroll
      for (int k = 0; k < V; ++k) f(j + k, va[k]);
    }
  } else {
    for (int64_t j = lane; j < cols; j += tpr) f(j, load(a, j));
  }
}

// f(j, a_j, b_j)
template <bool kVector, typename T, typename F>
__device__ __forceinline__ void row_read2(const T* a, const T* b, int64_t cols, int lane, int tpr, F&& f) {
  if constexpr (kVector) {
    constexpr int V = kVec<T>;
    for (int64_t j = static_cast<int64_t>(lane) * V; j < cols; j += static_cast<int64_t>(tpr) * V) {
      float va[V], vb[V];
      load_vec(a, j, va);
      load_vec(b, j, vb);
#pragma unroll
      for (int k = 0; k < V; ++k) f(j + k, va[k], vb[k]);
    }
  } else {
    for (int64_t j = lane; j < cols; j += tpr) f(j, load(a, j), load(b, j));
  }
}

// out_j = f(j, a_j)
template <bool kVector, typename T, typename F>
__device__ __forceinline__ void row_map(const T* a, T* out, int64_t cols, int lane, int tpr, F&& f) {
  if constexpr (kVector) {
    constexpr int V = kVec<T>;
    for (int64_t j = static_cast<int64_t>(lane) * V; j < cols; j += static_cast<int64_t>(tpr) * V) {
      float v[V];
      load_vec(a, j, v);
#pragma unroll
      for (int k = 0; k < V; ++k) v[k] = f(j + k, v[k]);
      store_vec(out, j, v);
    }
  } else {
    for (int64_t j = lane; j < cols; j += tpr) store(out, j, f(j, load(a, j)));
  }
}

// out_j = f(j, a_j, b_j)
template <bool kVector, typename T, typename F>
__device__ __forceinline__ void row_map2(const T* a, const T* b, T* out, int64_t cols, int lane, int tpr,
                                         F&& f) {
  if constexpr (kVector) {
    constexpr int V = kVec<T>;
    for (int64_t j = static_cast<int64_t>(lane) * V; j < cols; j += static_cast<int64_t>(tpr) * V) {
      float va[V], vb[V];
      load_vec(a, j, va);
      load_vec(b, j, vb);
#pragma unroll
      for (int k = 0; k < V; ++k) va[k] = f(j + k, va[k], vb[k]);
      store_vec(out, j, va);
    }
  } else {
    for (int64_t j = lane; j < cols; j += tpr) store(out, j, f(j, load(a, j), load(b, j)));
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
