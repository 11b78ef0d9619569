// Helpers shared by the CPU kernels.
#pragma once
#include <cstring>

#include "kernels/broadcast.h"
#include "kernels/op_table.h"
#include "kernels/runtime/parallel.h"

namespace strata::cpu {

inline float* F(const TensorView& v) { return v.as<float>(); }

// Elements per parallel chunk for cheap elementwise work (keeps tiny ops serial).
inline constexpr int64_t kElementwiseGrain = 1 << 15;

// Sum `src` (shape `from`) into `dst` (shape `to`, broadcastable to `from`) -- the
// gradient of a broadcast. dst is overwritten.
void reduce_broadcast(const float* src, const Shape& from, float* dst, const Shape& to);

}  // namespace strata::cpu
