// u8 pixels to model input on the device (kernels/device_ops.h normalize_u8):
// one grid-stride pass, a byte read and an f32, bf16 or f16 value written per
// element, so it runs at memory bandwidth; the per-channel coefficients travel
// as a kernel argument (no copy of them per batch). The math is
// kernels/pixel_math.h's, as in the loader and the CPU device op, in f32; a half
// dst rounds that once (half_io.cuh's round-to-nearest-even store, as convert's).
#include <string>

#include "base/error.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/half_io.cuh"
#include "kernels/cuda/kernel_macros.cuh"
#include "kernels/device_ops_backends.h"
#include "kernels/launch_shape.h"
#include "kernels/pixel_math.h"

namespace strata::cuda_dev {
namespace {

struct Coefficients {
  float scale[dev::kMaxU8Channels];
  float bias[dev::kMaxU8Channels];
};

// Element i is in channel (i / per_channel) % channels. T: float, __half or __nv_bfloat16.
template <typename T>
__global__ void normalize_u8_kernel(const uint8_t* src, T* dst, int64_t n, int64_t per_channel,
                                    int64_t channels, Coefficients k) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = channels > 1 ? (i / per_channel) % channels : 0;
    cuda::store(dst, i, math::normalize_u8(src[i], k.scale[c], k.bias[c]));
  }
}

}  // namespace

void normalize_u8(const TensorView& src, const TensorView& dst, const float* mean, const float* std,
                  size_t channels) {
  if (src.device != Device::cuda || dst.device != Device::cuda)
    throw Error(std::string("cuda_dev::normalize_u8: views on ") + device_name(src.device) + " and " +
                device_name(dst.device));
  const int64_t n = src.numel();
  if (n == 0) return;
  Coefficients k{};
  for (size_t c = 0; c < channels; ++c) {
    k.scale[c] = math::u8_scale(mean[c], std[c]);
    k.bias[c] = math::u8_bias(mean[c], std[c]);
  }
  const int64_t per_channel = channels > 1 ? n / (src.shape[0] * src.shape[1]) : n;
  const int64_t blocks = launch::blocks_for(n, launch::grid_cap(cuda::context().sm_count));
  cuda::dispatch_float(dst.dtype, "cuda normalize_u8", [&](auto tag) {
    using T = typename decltype(tag)::type;
    STRATA_LAUNCH(static_cast<unsigned>(blocks), launch::kThreads, 0, cuda::context().stream,
                  normalize_u8_kernel)
    (static_cast<const uint8_t*>(src.data), static_cast<T*>(dst.data), n, per_channel,
     static_cast<int64_t>(channels), k);
  });
  STRATA_CUDA_LAUNCH_CHECK();
}

}  // namespace strata::cuda_dev
