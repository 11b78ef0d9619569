#include <algorithm>

#include "kernels/shape/common.h"

namespace strata::shape {
namespace {

std::vector<OutputSpec> reduce(const std::vector<OutputSpec>& in, const OpAttrs& a, const char* op) {
  require_float(in[0], op, "input");
  const Shape& s = in[0].shape;
  int64_t rank = static_cast<int64_t>(s.size());
  std::vector<bool> reduced(s.size(), a.axes.empty());
  for (auto ax : a.axes) reduced[static_cast<size_t>(norm_axis(ax, rank, op))] = true;
  Shape out;
  for (size_t d = 0; d < s.size(); ++d) {
    if (!reduced[d])
      out.push_back(s[d]);
    else if (a.keepdim)
      out.push_back(1);
  }
  return {{out, in[0].dtype}};
}

}  // namespace

std::vector<OutputSpec> sum_infer(const std::vector<OutputSpec>& in, const OpAttrs& a) {
  return reduce(in, a, "sum");
}
std::vector<OutputSpec> mean_infer(const std::vector<OutputSpec>& in, const OpAttrs& a) {
  return reduce(in, a, "mean");
}

}  // namespace strata::shape
