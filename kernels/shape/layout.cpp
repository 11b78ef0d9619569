#include <algorithm>

#include "kernels/shape/common.h"

namespace strata::shape {

std::vector<OutputSpec> reshape_infer(const std::vector<OutputSpec>& in, const OpAttrs& a) {
  const char* op = "reshape";
  const Shape& from = in[0].shape;
  Shape to = a.shape;
  int64_t known = 1, infer_at = -1;
  for (size_t d = 0; d < to.size(); ++d) {
    if (to[d] == -1) {
      require(infer_at < 0, op, "only one -1 is allowed in " + shape_str(to));
      infer_at = static_cast<int64_t>(d);
    } else {
      require(to[d] >= 0, op, "negative size in target shape " + shape_str(to));
      known *= to[d];
    }
  }
  int64_t n = shape_numel(from);
  if (infer_at >= 0) {
    require(known > 0 && n % known == 0, op, "cannot reshape " + shape_str(from) + " into " + shape_str(to));
    to[static_cast<size_t>(infer_at)] = n / known;
  }
  require(shape_numel(to) == n, op,
          "cannot reshape " + shape_str(from) + " (" + std::to_string(n) + " elements) into " +
              shape_str(a.shape) + " (" + std::to_string(shape_numel(to)) + " elements)");
  return {{to, in[0].dtype}};
}

std::vector<OutputSpec> permute_infer(const std::vector<OutputSpec>& in, const OpAttrs& a) {
  const char* op = "permute";
  const Shape& s = in[0].shape;
  int64_t rank = static_cast<int64_t>(s.size());
  require(static_cast<int64_t>(a.axes.size()) == rank, op,
          "axes " + shape_str(a.axes) + " do not match the rank of " + shape_str(s));
  std::vector<bool> seen(s.size(), false);
  Shape out;
  for (auto ax : a.axes) {
    int64_t d = norm_axis(ax, rank, op);
    require(!seen[static_cast<size_t>(d)], op,
            "axes " + shape_str(a.axes) + " repeat axis " + std::to_string(d));
    seen[static_cast<size_t>(d)] = true;
    out.push_back(s[static_cast<size_t>(d)]);
  }
  return {{out, in[0].dtype}};
}

std::vector<OutputSpec> concat_infer(const std::vector<OutputSpec>& in, const OpAttrs& a) {
  const char* op = "concat";
  const Shape &sa = in[0].shape, &sb = in[1].shape;
  require(in[0].dtype == in[1].dtype, op,
          std::string("dtypes differ: ") + dtype_name(in[0].dtype) + " and " + dtype_name(in[1].dtype));
  require(sa.size() == sb.size() && !sa.empty(), op,
          "cannot concatenate " + shape_str(sa) + " and " + shape_str(sb));
  size_t axis = static_cast<size_t>(norm_axis(a.axis, static_cast<int64_t>(sa.size()), op));
  for (size_t d = 0; d < sa.size(); ++d)
    require(
        d == axis || sa[d] == sb[d], op,
        "shapes " + shape_str(sa) + " and " + shape_str(sb) + " differ outside axis " + std::to_string(axis));
  Shape out = sa;
  out[axis] += sb[axis];
  return {{out, in[0].dtype}};
}

// Python slicing: negative bounds count from the end, bounds beyond the axis are
// clamped, and end <= start gives an empty axis.
std::vector<OutputSpec> slice_infer(const std::vector<OutputSpec>& in, const OpAttrs& a) {
  const char* op = "slice";
  const Shape& s = in[0].shape;
  require(!s.empty(), op, "cannot slice a scalar");
  size_t axis = static_cast<size_t>(norm_axis(a.axis, static_cast<int64_t>(s.size()), op));
  int64_t dim = s[axis];
  auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + dim : i, 0, dim); };
  Shape out = s;
  out[axis] = std::max<int64_t>(0, clamp(a.end) - clamp(a.start));
  return {{out, in[0].dtype}};
}

}  // namespace strata::shape
