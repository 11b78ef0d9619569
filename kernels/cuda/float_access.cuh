// Storage types of the floating dtypes on the GPU and FP32 access to them. Hot
// tensors (x, y, gradients) are read through a template on their storage type;
// small per-channel or per-column parameters, which may each be half or f32
// (the norm ops' contract), through a loader that switches on the dtype at run
// time -- a uniform branch, taken once per channel or per column element.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "base/error.h"
#include "kernels/dtype.h"

namespace strata::cuda {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// A read-only or writable vector in one of f32/f16/bf16, chosen at run time.
struct AnyFloat {
  void* data;
  DType dtype;
  __device__ __forceinline__ float load(int64_t i) const {
    switch (dtype) {
      case DType::f16:
        return __half2float(static_cast<const __half*>(data)[i]);
      case DType::bf16:
        return __bfloat162float(static_cast<const __nv_bfloat16*>(data)[i]);
      default:
        return static_cast<const float*>(data)[i];
    }
  }
  __device__ __forceinline__ void store(int64_t i, float v) const {
    switch (dtype) {
      case DType::f16:
        static_cast<__half*>(data)[i] = __float2half_rn(v);
        break;
      case DType::bf16:
        static_cast<__nv_bfloat16*>(data)[i] = __float2bfloat16_rn(v);
        break;
      default:
        static_cast<float*>(data)[i] = v;
    }
  }
};

// Calls fn(T{}) with T the storage type of `dt`; other dtypes are an error naming the op.
template <typename Fn>
void with_storage_type(DType dt, const char* op, Fn&& fn) {
  switch (dt) {
    case DType::f32:
      return fn(float{});
    case DType::f16:
      return fn(__half{});
    case DType::bf16:
      return fn(__nv_bfloat16{});
    default:
      throw Error(std::string(op) + ": the CUDA backend takes f32, f16 or bf16, got " + dtype_name(dt));
  }
}

// An f32/f16/bf16 vector, checked on the host before a kernel gets it.
inline AnyFloat any_float(void* data, DType dt, const char* op, const char* what) {
  if (dt != DType::f32 && dt != DType::f16 && dt != DType::bf16)
    throw Error(std::string(op) + ": " + what + " must be f32, f16 or bf16 on CUDA, got " + dtype_name(dt));
  return AnyFloat{data, dt};
}

}  // namespace strata::cuda
