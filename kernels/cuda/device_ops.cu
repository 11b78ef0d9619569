// CUDA device ops, single-tensor half (fill, convert, strided_copy, copy, axpy,
// scale, synchronize); the multi-tensor ones are in device_multi_tensor.cu. Each kernel
// is one grid-stride pass: one read and one write per element (fill: a write;
// axpy: two reads), so they run at memory bandwidth, with a cudaMemsetAsync for a
// zero fill and cudaMemcpyAsync for copies. Everything is queued on the context
// stream; only a copy into host memory waits for the stream, since its caller
// reads the result.
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

#include "base/error.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/half_io.cuh"
#include "kernels/cuda/kernel_macros.cuh"
#include "kernels/cuda/layout_gather.h"
#include "kernels/cuda/runtime.h"
#include "kernels/device_ops_backends.h"
#include "kernels/launch_shape.h"

namespace strata::cuda_dev {
namespace {

using cuda::context;

// ---- every dtype through double ----------------------------------------------

template <typename T>
__host__ __device__ __forceinline__ double to_f64(T v) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>)
    return static_cast<double>(cuda::to_float(v));
  else
    return static_cast<double>(v);
}
// Halves round from the float, as the CPU device ops do (one rounding from an
// f32 source, so f32 -> half is the exact RNE of kernels/runtime/half.h).
template <typename T>
__host__ __device__ __forceinline__ T from_f64(double v) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>)
    return cuda::from_float<T>(static_cast<float>(v));
  else
    return static_cast<T>(v);
}

// Calls f(StorageTag<T>{}) for any dtype.
template <typename F>
void dispatch_any(DType dt, F&& f) {
  switch (dt) {
    case DType::i32:
      return f(cuda::StorageTag<int32_t>{});
    case DType::i64:
      return f(cuda::StorageTag<int64_t>{});
    case DType::u8:
      return f(cuda::StorageTag<uint8_t>{});
    case DType::u16:
      return f(cuda::StorageTag<uint16_t>{});
    case DType::f64:
      return f(cuda::StorageTag<double>{});
    default:
      return cuda::dispatch_float(dt, "cuda device op", f);
  }
}

void require_cuda(const TensorView& v, const char* op, const char* what) {
  if (v.defined() && v.device != Device::cuda)
    throw Error(std::string("cuda_dev::") + op + ": " + what + " is on " + device_name(v.device));
}
void require_numel(const TensorView& a, const TensorView& b, const char* op) {
  if (a.numel() != b.numel())
    throw Error(std::string("cuda_dev::") + op + ": " + shape_str(a.shape) + " and " + shape_str(b.shape) +
                " differ in size");
}
void require_floating(const TensorView& v, const char* op) {
  if (v.dtype != DType::f32 && !is_half(v.dtype))
    throw Error(std::string("cuda_dev::") + op + ": dtype " + dtype_name(v.dtype) +
                " is not f32, f16 or bf16");
}

int64_t cap() { return launch::grid_cap(context().sm_count); }

// ---- kernels -------------------------------------------------------------------

template <typename T>
__global__ void fill_kernel(T* dst, T v, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = v;
}

template <typename S, typename D>
__global__ void convert_kernel(const S* src, D* dst, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = from_f64<D>(to_f64(src[i]));
}

template <typename X, typename Y>
__global__ void axpy_kernel(float alpha, const X* x, Y* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    // one rounding, as the CPU's y += a * x where the compiler contracts it (-march=native)
    cuda::store(y, i, fmaf(alpha, cuda::load(x, i), cuda::load(y, i)));
}

template <typename T>
__global__ void scale_kernel(T* x, float s, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    cuda::store(x, i, cuda::load(x, i) * s);
}

template <typename F>
void launch1d(int64_t n, F&& kernel_launch) {
  int64_t blocks = launch::blocks_for(n, cap());
  if (blocks == 0) return;
  kernel_launch(static_cast<unsigned>(blocks));
  STRATA_CUDA_LAUNCH_CHECK();
}

}  // namespace

// ---- launchers -------------------------------------------------------------------

void fill(const TensorView& dst, double value) {
  require_cuda(dst, "fill", "dst");
  if (dst.numel() == 0) return;
  cudaStream_t s = context().stream;
  if (value == 0.0 && !std::signbit(value)) {  // all-zero bits in every dtype
    STRATA_CUDA_CHECK(cudaMemsetAsync(dst.data, 0, dst.bytes(), s));
    return;
  }
  dispatch_any(dst.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v = from_f64<T>(value);
    launch1d(dst.numel(), [&](unsigned b) {
      STRATA_LAUNCH(b, launch::kThreads, 0, s, fill_kernel)(static_cast<T*>(dst.data), v, dst.numel());
    });
  });
}

void convert(const TensorView& src, const TensorView& dst) {
  require_cuda(src, "convert", "src");
  require_cuda(dst, "convert", "dst");
  require_numel(src, dst, "convert");
  if (src.dtype == dst.dtype) return copy(src, dst);
  cudaStream_t s = context().stream;
  dispatch_any(src.dtype, [&](auto stag) {
    using S = typename decltype(stag)::type;
    dispatch_any(dst.dtype, [&](auto dtag) {
      using D = typename decltype(dtag)::type;
      launch1d(dst.numel(), [&](unsigned b) {
        STRATA_LAUNCH(b, launch::kThreads, 0, s, convert_kernel)
        (static_cast<const S*>(src.data), static_cast<D*>(dst.data), dst.numel());
      });
    });
  });
}

void strided_copy(const TensorView& src, const std::vector<int64_t>& strides, const TensorView& dst) {
  require_cuda(src, "strided_copy", "src");
  require_cuda(dst, "strided_copy", "dst");
  require_numel(src, dst, "strided_copy");
  if (src.dtype != dst.dtype)
    throw Error(std::string("cuda_dev::strided_copy: dtypes differ: ") + dtype_name(src.dtype) + " and " +
                dtype_name(dst.dtype));
  if (strides.size() != src.shape.size())
    throw Error("cuda_dev::strided_copy: " + std::to_string(strides.size()) + " strides for shape " +
                shape_str(src.shape));
  if (dst.numel() == 0) return;
  cuda::strided_gather(src.data, launch::pack_index(src.shape, strides, "cuda_dev::strided_copy"), dst.data,
                       dst.numel(), dtype_size(src.dtype));
}

void copy(const TensorView& src, const TensorView& dst) {
  if (src.dtype != dst.dtype || src.numel() != dst.numel())
    throw Error(std::string("cuda_dev::copy: ") + dtype_name(src.dtype) + shape_str(src.shape) + " into " +
                dtype_name(dst.dtype) + shape_str(dst.shape));
  size_t bytes = src.bytes();
  if (bytes == 0) return;
  if (src.device == Device::cpu && dst.device == Device::cpu) {
    std::memcpy(dst.data, src.data, bytes);
    return;
  }
  cudaStream_t s = context().stream;
  // cudaMemcpyDefault: the kind follows from the pointers (unified addressing).
  // A pageable host source is staged before the call returns; a page-locked one
  // is read by the DMA later, so it must stay unchanged until the stream reaches
  // the copy (the loader's pinned ring slots are fenced by an event).
  STRATA_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, bytes, cudaMemcpyDefault, s));
  if (dst.device == Device::cpu) {
    cuda::note_host_sync();
    STRATA_CUDA_CHECK(cudaStreamSynchronize(s));
  }
}

void axpy(double alpha, const TensorView& x, const TensorView& y) {
  require_cuda(x, "axpy", "x");
  require_cuda(y, "axpy", "y");
  require_numel(x, y, "axpy");
  require_floating(x, "axpy");
  require_floating(y, "axpy");
  cudaStream_t s = context().stream;
  float a = static_cast<float>(alpha);
  cuda::dispatch_float(x.dtype, "cuda_dev::axpy", [&](auto xtag) {
    using X = typename decltype(xtag)::type;
    cuda::dispatch_float(y.dtype, "cuda_dev::axpy", [&](auto ytag) {
      using Y = typename decltype(ytag)::type;
      launch1d(y.numel(), [&](unsigned b) {
        STRATA_LAUNCH(b, launch::kThreads, 0, s, axpy_kernel)
        (a, static_cast<const X*>(x.data), static_cast<Y*>(y.data), y.numel());
      });
    });
  });
}

void scale(const TensorView& x, double sc) {
  require_cuda(x, "scale", "x");
  require_floating(x, "scale");
  cudaStream_t s = context().stream;
  cuda::dispatch_float(x.dtype, "cuda_dev::scale", [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch1d(x.numel(), [&](unsigned b) {
      STRATA_LAUNCH(b, launch::kThreads, 0, s, scale_kernel)
      (static_cast<T*>(x.data), static_cast<float>(sc), x.numel());
    });
  });
}

// Waits for all work on the device, not only the compute stream: copy and
// communication streams count as "queued work" for the caller.
void synchronize() {
  cuda::note_host_sync();
  STRATA_CUDA_CHECK(cudaDeviceSynchronize());
}

void register_kernels(DeviceOpStubs& s) {
#define STRATA_X(fn) s.fn.set(Device::cuda, &fn);
  STRATA_DEVICE_OP_LIST(STRATA_X)
#undef STRATA_X
  s.synchronize.set(Device::cuda, &synchronize);
}

}  // namespace strata::cuda_dev
