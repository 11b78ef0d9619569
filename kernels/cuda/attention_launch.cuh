// What the attention kernels' two files (attention.cu, attention_backward.cu)
// share on the host side and in their signature: the kernel parameters, the
// checks of a call's shapes and dtypes, the shared-memory opt-in, and the
// choice of dtype and head-dim configuration.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <string>
#include <type_traits>

#include "base/error.h"
#include "kernels/attention_tiling.h"
#include "kernels/cuda/attention_tile.cuh"
#include "kernels/cuda/context.h"
#include "kernels/op_table.h"

namespace strata::cuda::attn_launch {

using attn_tile::Params;

struct Geom {
  int64_t heads, t;
  int d, dv;
  float scale;
};

inline Geom geom(const char* op, const OpAttrs& a, const TensorView* in, const TensorView* out) {
  const Shape &q = in[0].shape, &v = in[2].shape;
  Geom g{q[0] * q[1], q[2], static_cast<int>(q[3]), static_cast<int>(v[3]),
         static_cast<float>(a.scale != 0 ? a.scale : 1.0 / std::sqrt(static_cast<double>(q[3])))};
  if (q[3] > attn::kMaxHeadDim || v[3] > attn::kMaxHeadDim)
    throw Error(std::string(op) + " (CUDA): head dims D=" + std::to_string(q[3]) +
                ", Dv=" + std::to_string(v[3]) + " exceed " + std::to_string(attn::kMaxHeadDim) + " (q " +
                shape_str(q) + ", v " + shape_str(v) + ")");
  if (out[1].dtype != DType::f32)
    throw Error(std::string(op) + " (CUDA): lse must be f32 (stat), got " + dtype_name(out[1].dtype));
  if (attn::ceil_div(g.t, 32) > 65535)
    throw Error(std::string(op) + " (CUDA): T=" + std::to_string(g.t) + " exceeds the grid's tile count");
  return g;
}

template <typename T>
Params<T> params(const Geom& g, const TensorView* in, const TensorView* out) {
  Params<T> p{};
  p.q = in[0].as<const T>(), p.k = in[1].as<const T>(), p.v = in[2].as<const T>();
  p.o = out[0].as<const T>(), p.out = out[0].as<T>(), p.lse = out[1].as<float>();
  p.t = g.t, p.d = g.d, p.dv_dim = g.dv, p.scale = g.scale;
  return p;
}

// The current device's opt-in shared memory per block.
inline size_t smem_limit() {
  int limit = 0;
  STRATA_CUDA_CHECK(
      cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, context().device));
  return static_cast<size_t>(limit);
}

// Opt in to the shared memory a configuration needs, or say why it cannot run.
template <typename Kernel>
void reserve_smem(Kernel kernel, size_t bytes, const char* what) {
  size_t limit = smem_limit();
  if (bytes > limit)
    throw Error(std::string(what) + " (CUDA): needs " + std::to_string(bytes) +
                " bytes of shared memory, device " + std::to_string(context().device) + " allows " +
                std::to_string(limit));
  STRATA_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

// The fast paths D = Dv = 64 and 128 (head dims fixed at compile time); otherwise
// the smallest tiles that hold max(D, Dv). Calls fn(kDMax, kDFixed) as
// std::integral_constant<int, ...> values.
template <typename Fn>
void by_head_dim(int d, int dv, Fn fn) {
  using I64 = std::integral_constant<int, 64>;
  using I128 = std::integral_constant<int, 128>;
  using I0 = std::integral_constant<int, 0>;
  if (d == 64 && dv == 64)
    fn(I64{}, I64{});
  else if (d == 128 && dv == 128)
    fn(I128{}, I128{});
  else if (d <= 64 && dv <= 64)
    fn(I64{}, I0{});
  else
    fn(I128{}, I0{});
}

template <typename Fn>
void by_dtype(const char* op, DType dt, Fn fn) {
  switch (dt) {
    case DType::f32:
      return fn(float{});
    case DType::f16:
      return fn(__half{});
    case DType::bf16:
      return fn(__nv_bfloat16{});
    default:
      throw Error(std::string(op) + " (CUDA): dtype " + dtype_name(dt) +
                  " is not supported (f32, f16, bf16)");
  }
}

}  // namespace strata::cuda::attn_launch
