// Load and store of f32 / f16 / bf16 storage as float, shared by every CUDA
// kernel file: kernels read half storage directly and do their arithmetic (and
// accumulation) in FP32. Conversions are the cuda_fp16.h / cuda_bf16.h
// round-to-nearest-even intrinsics, which agree with kernels/runtime/half.h on every
// finite value, on infinities and on subnormals (a NaN stays a NaN, though its
// payload may differ). They are __host__ __device__, so host code in a .cu file
// (and a host unit test compiled by nvcc) can call them too.
//
//   load(p, i) / store(p, i, v)       one element as float
//   load_vec / store_vec              kVec<T> elements (16 bytes) at once; p + i 16-byte aligned
//   dispatch_float(dtype, where, f)   calls f(StorageTag<T>{}) with T = float, __half or __nv_bfloat16
//   AnyFloat / any_float              a small f32/f16/bf16 vector whose dtype is chosen at run time
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <string>

#include "base/error.h"
#include "kernels/cuda/kernel_macros.cuh"
#include "kernels/runtime/tensor_view.h"

namespace strata::cuda {

// ---- scalar conversion ------------------------------------------------------

template <typename T>
__host__ __device__ __forceinline__ float to_float(T v);
template <>
__host__ __device__ __forceinline__ float to_float<float>(float v) {
  return v;
}
template <>
__host__ __device__ __forceinline__ float to_float<__half>(__half v) {
  return __half2float(v);
}
template <>
__host__ __device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T>
__host__ __device__ __forceinline__ T from_float(float v);
template <>
__host__ __device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__host__ __device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__host__ __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

template <typename T>
__host__ __device__ __forceinline__ float load(const T* p, int64_t i) {
  return to_float(p[i]);
}
template <typename T>
__host__ __device__ __forceinline__ void store(T* p, int64_t i, float v) {
  p[i] = from_float<T>(v);
}

// ---- 16-byte vector access ----------------------------------------------------

// Elements of T in one 16-byte transaction (4 floats, 8 halves).
template <typename T>
inline constexpr int kVec = static_cast<int>(16 / sizeof(T));

template <typename T>
struct alignas(16) Vec16 {
  T v[kVec<T>];
};

// out[k] = p[i + k] for k < kVec<T>; p + i must be 16-byte aligned.
template <typename T>
__device__ __forceinline__ void load_vec(const T* p, int64_t i, float (&out)[kVec<T>]) {
  STRATA_VECTOR_ACCESS(p + i, 16, "load_vec");
  Vec16<T> r = *reinterpret_cast<const Vec16<T>*>(p + i);
#pragma unroll
  for (int k = 0; k < kVec<T>; ++k) out[k] = to_float(r.v[k]);
}
template <typename T>
__device__ __forceinline__ void store_vec(T* p, int64_t i, const float (&in)[kVec<T>]) {
  Vec16<T> r;
#pragma unroll
  for (int k = 0; k < kVec<T>; ++k) r.v[k] = from_float<T>(in[k]);
  STRATA_VECTOR_ACCESS(p + i, 16, "store_vec");
  *reinterpret_cast<Vec16<T>*>(p + i) = r;
}

// True when a pointer may be used with load_vec / store_vec at offset 0.
__host__ __device__ __forceinline__ bool vec_aligned(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

// ---- host-side dtype dispatch -------------------------------------------------

template <typename T>
struct StorageTag {
  using type = T;
};

template <typename T>
inline constexpr DType dtype_of = DType::f32;
template <>
inline constexpr DType dtype_of<__half> = DType::f16;
template <>
inline constexpr DType dtype_of<__nv_bfloat16> = DType::bf16;

// Calls f(StorageTag<T>{}) with the storage type of a floating dtype the CUDA
// kernels take (f32, f16, bf16); any other dtype throws Error naming `where`.
//   dispatch_float(x.dtype, "cuda gelu_forward", [&](auto tag) {
//     using T = typename decltype(tag)::type; ... });
template <typename F>
decltype(auto) dispatch_float(DType dt, const char* where, F&& f) {
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

template <typename T>
T* data_as(const TensorView& v) {
  return static_cast<T*>(v.data);
}

// ---- run-time dtype access ----------------------------------------------------

// A read-only or writable f32/f16/bf16 vector whose dtype is known only at run
// time. Hot tensors (x, y, gradients) go through a template on their storage
// type; small per-channel or per-column parameters, which may each be half or
// f32 (the norm ops' contract), go through this: a uniform branch, taken once per
// channel or column element.
struct AnyFloat {
  void* data;
  DType dtype;
  __device__ __forceinline__ float load(int64_t i) const {
    switch (dtype) {
      case DType::f16:
        return cuda::load(static_cast<const __half*>(data), i);
      case DType::bf16:
        return cuda::load(static_cast<const __nv_bfloat16*>(data), i);
      default:
        return cuda::load(static_cast<const float*>(data), i);
    }
  }
  __device__ __forceinline__ void store(int64_t i, float v) const {
    switch (dtype) {
      case DType::f16:
        cuda::store(static_cast<__half*>(data), i, v);
        break;
      case DType::bf16:
        cuda::store(static_cast<__nv_bfloat16*>(data), i, v);
        break;
      default:
        cuda::store(static_cast<float*>(data), i, v);
    }
  }
};

// An f32/f16/bf16 vector, checked on the host before a kernel gets it; any other
// dtype throws Error naming the op and the operand (`what`).
inline AnyFloat any_float(void* data, DType dt, const char* op, const char* what) {
  if (dt != DType::f32 && dt != DType::f16 && dt != DType::bf16)
    throw Error(std::string(op) + ": " + what + " must be f32, f16 or bf16 on CUDA, got " + dtype_name(dt));
  return AnyFloat{data, dt};
}

}  // namespace strata::cuda
