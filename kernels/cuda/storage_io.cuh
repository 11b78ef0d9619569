// Device loads and stores of f32/f16/bf16 storage as float (FP32 arithmetic on
// half storage, round-to-nearest-even on the way back, as kernels/half.h), and
// the host-side switch from a view's DType to the storage type a kernel template
// takes. Shared by the softmax, cross-entropy, embedding and pooling kernels.
//
// TODO(h3-sm): switch to kernels/cuda/half_io.cuh (helper h3-ew) once it is on
// main, and delete this file; the names here live in their own namespace so the
// two can coexist until then.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "base/error.h"
#include "kernels/dtype.h"

namespace strata::cuda::storage_io {

__device__ __forceinline__ float load(const float* p) { return *p; }
__device__ __forceinline__ float load(const __half* p) { return __half2float(*p); }
__device__ __forceinline__ float load(const __nv_bfloat16* p) { return __bfloat162float(*p); }

__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

// Calls fn(T{}) with T the storage type of dt (float, __half or __nv_bfloat16);
// any other dtype is an error naming the op and the role of the buffer.
template <typename Fn>
void dispatch_float(DType dt, const char* op, const char* what, Fn&& fn) {
  switch (dt) {
    case DType::f32:
      return fn(float{});
    case DType::f16:
      return fn(__half{});
    case DType::bf16:
      return fn(__nv_bfloat16{});
    default:
      throw Error(std::string(op) + " (CUDA): " + what + " must be f32, f16 or bf16, got " + dtype_name(dt));
  }
}

// The (stat) buffers beside any of those storage types are f32 (op_table.h).
inline void require_f32(DType dt, const char* op, const char* what) {
  if (dt != DType::f32)
    throw Error(std::string(op) + " (CUDA): " + what + " must be f32 (a statistic), got " + dtype_name(dt));
}

}  // namespace strata::cuda::storage_io
