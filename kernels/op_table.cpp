#include "kernels/op_table.h"

#include <sstream>

namespace strata {

std::string shape_str(const Shape& s) {
  std::ostringstream o;
  o << '[';
  for (size_t i = 0; i < s.size(); ++i) o << (i ? ", " : "") << s[i];
  o << ']';
  return o.str();
}

const std::array<OpInfo, kOpCount>& op_table() {
  static const std::array<OpInfo, kOpCount> table = {{
#define STRATA_X(name, nin, nout, mask) {#name, nin, nout, mask, &shape::name##_infer},
      STRATA_OP_LIST(STRATA_X)
#undef STRATA_X
  }};
  return table;
}

const OpInfo& op_info(Op op) { return op_table()[static_cast<size_t>(op)]; }

}  // namespace strata
