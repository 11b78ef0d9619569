// CUDA as the host SIMT emulator sees it: force-included (-include) before a
// kernel source compiled for the host, so the kernel's own text runs under
// simt.h. The CUDA headers come first, for their types (dim3, __half,
// __nv_bfloat16, cudaStream_t); then the execution-space keywords become
// nothing, the built-ins become the emulator's, and kernels/cuda/kernel_macros.cuh's
// hooks (STRATA_LAUNCH, STRATA_SHARED, STRATA_DYNAMIC_SHARED,
// STRATA_VECTOR_ACCESS) are defined here, before it is included.
//
// A kernel that declares shared memory with the __shared__ keyword instead of
// STRATA_SHARED does not compile here: on the host every thread would get its
// own copy, so such a kernel could not be emulated.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <source_location>
#include <type_traits>

#include "simt.h"
#include "wmma.h"

#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __launch_bounds__
#undef __shared__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ shared_memory_is_declared_with_STRATA_SHARED_in_kernels
#define STRATA_SIMT 1

#define threadIdx (::simt::thread_idx())
#define blockIdx (::simt::block_idx())
#define blockDim (::simt::block_dim())
#define gridDim (::simt::grid_dim())

// ---- launch and memory-space hooks (kernels/cuda/kernel_macros.cuh) -----------

namespace simt {
// STRATA_LAUNCH(...)(args...): each CUDA thread calls the kernel with the
// arguments, which it takes by value (a __global__ function's parameters are).
template <typename F>
struct KernelLaunch {
  const char* name;
  const char* site;
  dim3 grid, block;
  size_t shared_bytes;
  F call;
  template <typename... A>
  void operator()(const A&... a) const {
    launch(name, site, grid, block, shared_bytes, [&] { call(a...); });
  }
};
template <typename D>
dim3 to_dim3(D v) {
  if constexpr (std::is_integral_v<D>)
    return dim3(static_cast<unsigned>(v));
  else
    return dim3(v);
}
template <typename G, typename B, typename F>
KernelLaunch<F> make_launch(const char* name, const char* site, G grid, B block, size_t shared_bytes,
                            F call) {
  return {name, site, to_dim3(grid), to_dim3(block), shared_bytes, call};
}
}  // namespace simt

#define STRATA_LAUNCH(grid, block, shared_bytes, stream, ...)            \
  ::simt::make_launch(#__VA_ARGS__, __FILE__, grid, block, shared_bytes, \
                      [&](const auto&... simt_a) { __VA_ARGS__(simt_a...); })
#define STRATA_LAUNCH_NAMED(name, grid, block, shared_bytes, stream, ...) \
  ::simt::make_launch(name, __FILE__, grid, block, shared_bytes,          \
                      [&](const auto&... simt_a) { __VA_ARGS__(simt_a...); })
#define STRATA_SHARED(type, name, ...)                                                    \
  using simt_shared_t_##name = type __VA_ARGS__;                                          \
  static const char simt_shared_key_##name = 0;                                           \
  simt_shared_t_##name& name = *static_cast<simt_shared_t_##name*>(::simt::shared_memory( \
      &simt_shared_key_##name, sizeof(simt_shared_t_##name), alignof(simt_shared_t_##name)))
#define STRATA_DYNAMIC_SHARED(type, name, align) \
  type* name = static_cast<type*>(::simt::dynamic_shared_memory(align))
#define STRATA_VECTOR_ACCESS(p, bytes, what) \
  ::simt::check_vector_access(p, bytes, what, std::source_location::current())

// ---- synchronisation and warp built-ins ----------------------------------------

inline void __syncthreads(std::source_location w = std::source_location::current()) { simt::syncthreads(w); }
inline void __syncwarp(unsigned mask = 0xffffffffu,
                       std::source_location w = std::source_location::current()) {
  simt::syncwarp(mask, w);
}

namespace simt {
template <typename T>
T shuffle(unsigned mask, T v, int width, std::source_location w,
          unsigned (*src)(unsigned lane, int width, int arg), int arg) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "warp shuffles move up to 8 bytes");
  if (width <= 0 || width > 32 || (width & (width - 1)) != 0)
    fail("shuffle width " + std::to_string(width) + " is not a power of two up to 32", w);
  T all[32];
  warp_exchange(mask, &v, sizeof(T), all, w);
  unsigned from = src(lane_id(), width, arg);
  if (from >= 32 || !(mask >> from & 1u))
    fail("shuffle reads lane " + std::to_string(from) + ", which is outside the mask", w);
  return all[from];
}
inline unsigned seg(unsigned lane, int width) { return lane & ~static_cast<unsigned>(width - 1); }
}  // namespace simt

template <typename T>
T __shfl_sync(unsigned mask, T v, int src, int width = 32,
              std::source_location w = std::source_location::current()) {
  return simt::shuffle(
      mask, v, width, w,
      [](unsigned l, int wd, int a) {
        return simt::seg(l, wd) + (static_cast<unsigned>(a) & static_cast<unsigned>(wd - 1));
      },
      src);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32,
                  std::source_location w = std::source_location::current()) {
  return simt::shuffle(
      mask, v, width, w,
      [](unsigned l, int wd, int a) {
        unsigned t = l ^ static_cast<unsigned>(a);
        return t >= simt::seg(l, wd) + static_cast<unsigned>(wd) ? l : t;  // outside the segment: own value
      },
      lane_mask);
}
template <typename T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32,
                 std::source_location w = std::source_location::current()) {
  return simt::shuffle(
      mask, v, width, w,
      [](unsigned l, int wd, int a) {
        return l - simt::seg(l, wd) >= static_cast<unsigned>(a) ? l - static_cast<unsigned>(a) : l;
      },
      static_cast<int>(delta));
}
template <typename T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32,
                   std::source_location w = std::source_location::current()) {
  return simt::shuffle(
      mask, v, width, w,
      [](unsigned l, int wd, int a) {
        return l - simt::seg(l, wd) + static_cast<unsigned>(a) < static_cast<unsigned>(wd)
                   ? l + static_cast<unsigned>(a)
                   : l;
      },
      static_cast<int>(delta));
}
inline unsigned __ballot_sync(unsigned mask, int pred,
                              std::source_location w = std::source_location::current()) {
  char p = pred != 0, all[32];
  simt::warp_exchange(mask, &p, 1, all, w);
  unsigned r = 0;
  for (unsigned l = 0; l < 32; ++l)
    if ((mask >> l & 1u) && all[l]) r |= 1u << l;
  return r;
}
inline int __any_sync(unsigned mask, int pred, std::source_location w = std::source_location::current()) {
  return __ballot_sync(mask, pred, w) != 0;
}
inline int __all_sync(unsigned mask, int pred, std::source_location w = std::source_location::current()) {
  return __ballot_sync(mask, pred, w) == mask;
}

// cudaFuncSetAttribute on a kernel, as cuda_runtime.h provides it to nvcc only.
template <typename... P>
cudaError_t cudaFuncSetAttribute(void (*kernel)(P...), cudaFuncAttribute attr, int value) {
  return cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), attr, value);
}

// ---- atomics, loads, bit and float intrinsics ------------------------------------

template <typename T>
T atomicAdd(T* p, T v) {
  return std::atomic_ref<T>(*p).fetch_add(v);
}
template <typename T>
T atomicExch(T* p, T v) {
  return std::atomic_ref<T>(*p).exchange(v);
}
template <typename T>
T atomicCAS(T* p, T expected, T desired) {
  std::atomic_ref<T>(*p).compare_exchange_strong(expected, desired);
  return expected;  // the old value, as CUDA returns it
}
template <typename T>
T atomicMax(T* p, T v) {
  std::atomic_ref<T> a(*p);
  T old = a.load();
  while (old < v && !a.compare_exchange_weak(old, v)) {
  }
  return old;
}
template <typename T>
T atomicMin(T* p, T v) {
  std::atomic_ref<T> a(*p);
  T old = a.load();
  while (v < old && !a.compare_exchange_weak(old, v)) {
  }
  return old;
}
// CUDA's min and max of arithmetic operands, in the usual conversions.
template <typename A, typename B>
constexpr std::common_type_t<A, B> min(A a, B b) {
  return b < a ? b : a;
}
template <typename A, typename B>
constexpr std::common_type_t<A, B> max(A a, B b) {
  return a < b ? b : a;
}
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
template <typename T>
T __ldg(const T* p) {
  return *p;
}
inline int __popc(unsigned v) { return std::popcount(v); }
inline int __popcll(unsigned long long v) { return std::popcount(v); }
inline int __ffs(int v) { return v == 0 ? 0 : std::countr_zero(static_cast<unsigned>(v)) + 1; }
inline int __clz(int v) { return std::countl_zero(static_cast<unsigned>(v)); }
inline float __int_as_float(int v) { return std::bit_cast<float>(v); }
inline int __float_as_int(float v) { return std::bit_cast<int>(v); }
inline float __expf(float v) { return std::exp(v); }
inline float __logf(float v) { return std::log(v); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float v) { return 1.0f / std::sqrt(v); }

// The CUDA backend's namespaces, renamed in these translation units: a build
// without CUDA already has strata::cuda* stand-ins (kernels/cuda_stub), and the
// emulated backend links beside them. The CUDA headers are all included above,
// so the rename reaches only strata's code.
#include <cublasLt.h>
#include <cudnn.h>
#include <mma.h>
#define cuda cuda_sim
#define cuda_dev cuda_dev_sim
#define cuda_metric cuda_metric_sim
