// u8 pixels to model input, written once for the loader (data/loader/transforms.cpp),
// the CPU device op and the CUDA one (kernels/device_ops.h normalize_u8), so a
// value is the same whichever of them normalises it: (x / 255 - mean) / std as
// one multiply-add x * scale + bias. Beside scalar_math.h rather than in it:
// every CUDA kernel file includes that header.
#pragma once
#include <cstdint>

#include "kernels/scalar_math.h"

namespace strata::math {

STRATA_HD inline float u8_scale(float mean, float std) {
  (void)mean;
  return 1.0f / (255.0f * std);
}
STRATA_HD inline float u8_bias(float mean, float std) { return -mean / std; }
STRATA_HD inline float normalize_u8(uint8_t x, float scale, float bias) {
  return static_cast<float>(x) * scale + bias;
}

}  // namespace strata::math
