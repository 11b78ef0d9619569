#include "kernels/shape/common.h"

namespace strata::shape {

std::vector<OutputSpec> embedding_infer(const std::vector<OutputSpec>& in, const OpAttrs&) {
  const char* op = "embedding";
  const OutputSpec &ids = in[0], &table = in[1];
  require(ids.dtype == DType::i64, op, std::string("ids must be i64, got ") + dtype_name(ids.dtype));
  require_float(table, op, "table");
  require(table.shape.size() == 2, op, "table must be [V, D], got " + shape_str(table.shape));
  Shape out = ids.shape;
  out.push_back(table.shape[1]);
  return {{out, table.dtype}};
}

}  // namespace strata::shape
