// The per-row rule of top-k accuracy, shared by the CPU and CUDA metric ops
// (kernels/metric_ops.h): a row's rank is the number of classes that beat its
// label, where a class beats it by a higher score or, on a tie, by a lower
// index. So ties count against a sample unless its label is the lowest tied
// index (the rule the trainer's host-side counting had).
#pragma once
#include <cstdint>

#include "kernels/scalar_math.h"

namespace strata::math {

// `score(j)` reads class j of the row as float.
template <typename Score>
STRATA_HD inline int64_t classes_above(const Score& score, int64_t classes, int64_t label) {
  const float target = score(label);
  int64_t above = 0;
  for (int64_t j = 0; j < classes; ++j) {
    const float s = score(j);
    if (s > target || (s == target && j < label)) ++above;
  }
  return above;
}

}  // namespace strata::math
