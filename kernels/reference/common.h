// Helpers for the reference kernels: plain index arithmetic, no cleverness.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "base/error.h"
#include "kernels/op_table.h"

namespace strata::reference {

inline double* D(const TensorView& v) { return v.as<double>(); }

// Broadcasting worked out here the plain way, apart from kernels/broadcast.h
// (the fast backends' plan of per-dimension strides): the reference is what the
// backends are checked against, so a broadcasting bug in that plan must not be
// repeated here, where it would agree with itself.
// NumPy's rule: shapes right-aligned, each pair of extents equal or one of them 1.
inline Shape broadcast_shape(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t k = 0; k < n; ++k) {  // k counts from the last dimension
    int64_t x = k < a.size() ? a[a.size() - 1 - k] : 1, y = k < b.size() ? b[b.size() - 1 - k] : 1;
    if (x != y && x != 1 && y != 1)
      throw ShapeError(std::string(op) + ": shapes " + shape_str(a) + " and " + shape_str(b) +
                       " do not broadcast");
    out[n - 1 - k] = x == 1 ? y : x;
  }
  return out;
}

// The flat index into an operand of shape `in` that output element i (of shape
// `out`) reads: i's multi-index in `out`, its trailing dimensions laid onto `in`,
// index 0 where `in` has extent 1.
inline int64_t broadcast_source(const Shape& out, const Shape& in, int64_t i) {
  std::vector<int64_t> idx(out.size());
  for (size_t d = out.size(); d-- > 0;) {
    idx[d] = i % out[d];
    i /= out[d];
  }
  int64_t flat = 0;
  const size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) flat = flat * in[d] + (in[d] == 1 ? 0 : idx[lead + d]);
  return flat;
}

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
