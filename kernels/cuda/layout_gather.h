// The strided gather shared by the device-ops strided_copy and the permute op:
// dst[i] = src[map.offset(i)], i the contiguous index of dst. Pure data
// movement: every element is read once through the index map and written once,
// coalesced, as a 1-, 2-, 4- or 8-byte word (no dtype conversion).
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/launch_shape.h"

namespace strata::cuda {

// Gathers n elements of elem_bytes bytes each on context().stream; n == 0 does nothing.
void strided_gather(const void* src, const launch::IndexMap& map, void* dst, int64_t n, size_t elem_bytes);

}  // namespace strata::cuda
