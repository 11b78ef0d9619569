// Helpers for the reference kernels: plain index arithmetic, no cleverness.
#pragma once
#include <vector>

#include "kernels/broadcast.h"
#include "kernels/op_table.h"

namespace strata::reference {

inline double* D(const TensorView& v) { return v.as<double>(); }

// Which axes of `s` a sum/mean reduces.
inline std::vector<bool> reduced_axes(const Shape& s, const std::vector<int64_t>& axes) {
  std::vector<bool> r(s.size(), axes.empty());
  for (auto ax : axes) r[static_cast<size_t>(ax < 0 ? ax + static_cast<int64_t>(s.size()) : ax)] = true;
  return r;
}

// Flat index in the reduced output of input element i.
inline int64_t reduced_index(const Shape& s, const std::vector<bool>& red, int64_t i) {
  std::vector<int64_t> idx(s.size());
  for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) {
    idx[d] = i % s[d];
    i /= s[d];
  }
  int64_t o = 0;
  for (size_t d = 0; d < s.size(); ++d)
    if (!red[d]) o = o * s[d] + idx[d];
  return o;
}

}  // namespace strata::reference
