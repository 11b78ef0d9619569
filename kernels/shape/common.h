// Shared checks for the shape-inference functions.
#pragma once
#include <string>

#include "base/error.h"
#include "kernels/op_table.h"

namespace strata::shape {

inline void require(bool cond, const char* op, const std::string& msg) {
  if (!cond) throw ShapeError(std::string(op) + ": " + msg);
}

inline void require_float(const OutputSpec& s, const char* op, const char* what) {
  require(is_floating(s.dtype), op,
          std::string(what) + " must be floating point, got " + dtype_name(s.dtype));
}

// Normalises a possibly negative axis against `rank`.
inline int64_t norm_axis(int64_t axis, int64_t rank, const char* op) {
  int64_t a = axis < 0 ? axis + rank : axis;
  require(a >= 0 && a < rank, op,
          "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return a;
}

}  // namespace strata::shape
