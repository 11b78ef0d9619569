// Numpy broadcasting for binary elementwise ops: the output shape, and per
// output dimension the element strides of each operand (0 where it broadcasts).
#pragma once
#include <vector>

#include "kernels/runtime/tensor_view.h"

namespace strata {

struct BroadcastPlan {
  Shape out;
  std::vector<int64_t> stride_a, stride_b;  // aligned with `out`
};

// Throws ShapeError naming `op` when the shapes do not broadcast.
BroadcastPlan broadcast_plan(const Shape& a, const Shape& b, const char* op);

// Element offset of operand x (its strides) for flat output index i.
inline int64_t broadcast_offset(const Shape& out, const std::vector<int64_t>& stride, int64_t i) {
  int64_t off = 0;
  for (int64_t d = static_cast<int64_t>(out.size()) - 1; d >= 0; --d) {
    int64_t idx = i % out[d];
    i /= out[d];
    off += idx * stride[d];
  }
  return off;
}

}  // namespace strata
