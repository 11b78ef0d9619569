// Device loads and stores of f32/f16/bf16 storage as float (FP32 arithmetic on
// half storage, round-to-nearest-even on the way back, as kernels/half.h), and
// the host-side switch from a view's DType to the storage type a kernel template
// takes. Shared by the softmax, cross-entropy, embedding and pooling kernels.
//
// TODO(h3-sm): switch to kernels/cuda/half_io.cuh (helper h3-ew) once it is on
// main and delete this file. The signatures here are the subset of half_io.cuh
// these kernels use (load(p, i), store(p, i, v), kVec<T>, load_vec, store_vec,
// dispatch_float(dtype, where, f) with f(StorageTag<T>{})), in their own namespace so that the two can
// coexist: the switch is the include and dropping the storage_io:: qualifiers.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <string>

#include "base/error.h"
#include "kernels/dtype.h"

namespace strata::cuda::storage_io {

__device__ __forceinline__ float load(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load(const __half* p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float load(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }

__device__ __forceinline__ void store(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store(__half* p, int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void store(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

// 16-byte vector access: kVec<T> elements (4 floats, 8 halves) in one transaction;
// p + i must be 16-byte aligned.
template <typename T>
inline constexpr int kVec = static_cast<int>(16 / sizeof(T));

template <typename T>
struct alignas(16) Vec16 {
  T v[kVec<T>];
};

template <typename T>
__device__ __forceinline__ void load_vec(const T* p, int64_t i, float (&out)[kVec<T>]) {
  Vec16<T> r = *reinterpret_cast<const Vec16<T>*>(p + i);
#pragma unroll
  for (int k = 0; k < kVec<T>; ++k) out[k] = load(r.v, k);
}
template <typename T>
__device__ __forceinline__ void store_vec(T* p, int64_t i, const float (&in)[kVec<T>]) {
  Vec16<T> r;
#pragma unroll
  for (int k = 0; k < kVec<T>; ++k) store(r.v, k, in[k]);
  *reinterpret_cast<Vec16<T>*>(p + i) = r;
}

template <typename T>
struct StorageTag {
  using type = T;
};

// Calls f(StorageTag<T>{}) with T the storage type of dt (float, __half or
// __nv_bfloat16); any other dtype throws Error naming `where`.
template <typename F>
void dispatch_float(DType dt, const char* where, F&& f) {
  switch (dt) {
    case DType::f32:
      return f(StorageTag<float>{});
    case DType::f16:
      return f(StorageTag<__half>{});
    case DType::bf16:
      return f(StorageTag<__nv_bfloat16>{});
    default:
      throw Error(std::string(where) + ": dtype " + dtype_name(dt) +
                  " is not supported on cuda (f32, f16, bf16)");
  }
}

}  // namespace strata::cuda::storage_io
