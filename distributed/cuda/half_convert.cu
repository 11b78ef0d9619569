// Grid-stride elementwise conversion kernels: one read and one write per element,
// using the same scalar conversions as the CPU (kernels/runtime/half.h).
#include "distributed/cuda/half_convert.h"
#include "kernels/runtime/half.h"

namespace strata::nccl_detail {
namespace {

__global__ void to_f32_kernel(bool bf16, const uint16_t* src, float* dst, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = bf16 ? bf16_bits_to_float(src[i]) : f16_bits_to_float(src[i]);
}

__global__ void from_f32_kernel(bool bf16, const float* src, uint16_t* dst, size_t n, float scale) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float v = src[i] * scale;
    dst[i] = bf16 ? float_to_bf16_bits(v) : float_to_f16_bits(v);
  }
}

unsigned blocks_for(size_t n) {
  size_t b = (n + 255) / 256;
  return static_cast<unsigned>(b < 4096 ? (b ? b : 1) : 4096);
}

}  // namespace

void half_to_f32_device(bool bf16, const void* src, float* dst, size_t n, cudaStream_t stream) {
  to_f32_kernel<<<blocks_for(n), 256, 0, stream>>>(bf16, static_cast<const uint16_t*>(src), dst, n);
}

void f32_to_half_device(bool bf16, const float* src, void* dst, size_t n, float scale, cudaStream_t stream) {
  from_f32_kernel<<<blocks_for(n), 256, 0, stream>>>(bf16, src, static_cast<uint16_t*>(dst), n, scale);
}

}  // namespace strata::nccl_detail
