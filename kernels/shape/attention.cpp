#include "kernels/shape/common.h"

namespace strata::shape {

std::vector<OutputSpec> attention_infer(const std::vector<OutputSpec>& in, const OpAttrs& a) {
  const char* op = "attention";
  require_float(in[0], op, "q");
  for (int i = 1; i < 3; ++i)
    require(in[i].dtype == in[0].dtype, op,
            std::string("dtypes differ: ") + dtype_name(in[0].dtype) + " and " + dtype_name(in[i].dtype));
  const Shape &q = in[0].shape, &k = in[1].shape, &v = in[2].shape;
  std::string shapes = "q " + shape_str(q) + ", k " + shape_str(k) + ", v " + shape_str(v);
  const char* layout = a.bthd ? "[B,T,H,D]" : "[B,H,T,D]";
  require(q.size() == 4, op, std::string("q, k, v must be ") + layout + ": " + shapes);
  require(k == q, op, "k must have q's shape: " + shapes);
  require(v.size() == 4 && v[0] == q[0] && v[1] == q[1] && v[2] == q[2], op,
          std::string("v must be ") +
              (a.bthd ? "[B,T,H,Dv] with q's B, T, H: " : "[B,H,T,Dv] with q's B, H, T: ") + shapes);
  require(a.scale >= 0, op, "scale must be >= 0 (0 = 1/sqrt(D)), got " + std::to_string(a.scale));
  // output in v's layout with Dv; aux [B,H,T] in either layout: the log-sum-exp
  // of each query row's scaled, masked scores
  Shape lse = a.bthd ? Shape{q[0], q[2], q[1]} : Shape{q[0], q[1], q[2]};
  return {{v, in[0].dtype}, {lse, stat_dtype(in[0].dtype)}};
}

}  // namespace strata::shape
