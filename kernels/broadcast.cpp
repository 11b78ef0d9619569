#include "kernels/broadcast.h"

#include "base/error.h"

namespace strata {

BroadcastPlan broadcast_plan(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  BroadcastPlan p;
  p.out.assign(n, 1);
  p.stride_a.assign(n, 0);
  p.stride_b.assign(n, 0);
  int64_t sa = 1, sb = 1;
  for (size_t k = 0; k < n; ++k) {
    size_t d = n - 1 - k;
    int64_t da = k < a.size() ? a[a.size() - 1 - k] : 1;
    int64_t db = k < b.size() ? b[b.size() - 1 - k] : 1;
    if (da != db && da != 1 && db != 1)
      throw ShapeError(std::string(op) + ": shapes " + shape_str(a) + " and " + shape_str(b) +
                       " do not broadcast (dimension " + std::to_string(d) + ")");
    p.out[d] = da == 1 ? db : da;
    p.stride_a[d] = da == 1 ? 0 : sa;
    p.stride_b[d] = db == 1 ? 0 : sb;
    sa *= da;
    sb *= db;
  }
  return p;
}

}  // namespace strata
