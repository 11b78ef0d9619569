// f16/bf16 <-> FP32 on the device, enqueued on a stream (NCCL's FP32 accumulation path).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

namespace strata::nccl_detail {

void half_to_f32_device(bool bf16, const void* src, float* dst, size_t n, cudaStream_t stream);
// dst = half(src * scale)
void f32_to_half_device(bool bf16, const float* src, void* dst, size_t n, float scale, cudaStream_t stream);

}  // namespace strata::nccl_detail
