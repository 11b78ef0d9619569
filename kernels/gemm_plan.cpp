// Row-major GEMM problems -> column-major cuBLASLt plans (see gemm_plan.h).
#include "kernels/gemm_plan.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "base/error.h"
#include "kernels/broadcast.h"

namespace strata::gemm {
namespace {

int64_t at_least_1(int64_t v) { return std::max<int64_t>(1, v); }

// Cuts a batch of T products, the t-th reading X at ox[t], Y at oy[t] and writing
// C at oc[t] (element offsets), into runs that are each one strided-batched call:
// within a run every offset moves by a constant stride (X, Y may stay put; C must
// move, or two products of one call would write the same matrix at once). A run
// also never mixes C matrices written before with fresh ones, so that one beta
// fits the whole run: 0 for a first write, 1 to accumulate.
std::vector<GemmCall> batch_calls(const std::vector<int64_t>& ox, const std::vector<int64_t>& oy,
                                  const std::vector<int64_t>& oc) {
  std::vector<GemmCall> calls;
  std::set<int64_t> written;
  const size_t T = oc.size();
  size_t t = 0;
  while (t < T) {
    GemmCall c;
    c.off_x = ox[t];
    c.off_y = oy[t];
    c.off_c = oc[t];
    const bool fresh = !written.count(oc[t]);
    size_t u = t + 1;
    if (u < T && oc[u] > oc[t] && ox[u] >= ox[t] && oy[u] >= oy[t] && !written.count(oc[u]) == fresh) {
      c.stride_x = ox[u] - ox[t];
      c.stride_y = oy[u] - oy[t];
      c.stride_c = oc[u] - oc[t];
      for (++u; u < T; ++u) {
        if (ox[u] - ox[u - 1] != c.stride_x || oy[u] - oy[u - 1] != c.stride_y ||
            oc[u] - oc[u - 1] != c.stride_c || !written.count(oc[u]) != fresh)
          break;
      }
    }
    c.batch = static_cast<int64_t>(u - t);
    c.beta = fresh ? 0.0f : 1.0f;
    for (size_t i = t; i < u; ++i) written.insert(oc[i]);
    calls.push_back(c);
    t = u;
  }
  return calls;
}

// The batch geometry of a[..., M, K] @ b[..., K, N]: per output matrix t the
// element offsets of its a, b and c matrices.
struct MatmulGeom {
  int64_t m, k, n;
  bool fold;  // b shared by every product and a not broadcast: batch folds into M
  int64_t batch;
  std::vector<int64_t> off_a, off_b, off_c;
};

MatmulGeom matmul_geom(const Shape& a, const Shape& b) {
  if (a.size() < 2 || b.size() < 2 || a.back() != b[b.size() - 2])
    throw ShapeError("matmul: operands " + shape_str(a) + " and " + shape_str(b) + " do not multiply");
  MatmulGeom g;
  g.m = a[a.size() - 2];
  g.k = a.back();
  g.n = b.back();
  Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  BroadcastPlan p = broadcast_plan(ba, bb, "matmul");
  g.batch = shape_numel(p.out);
  g.fold = shape_numel(bb) == 1 && shape_numel(ba) == g.batch;
  for (int64_t t = 0; t < g.batch; ++t) {
    g.off_a.push_back(broadcast_offset(p.out, p.stride_a, t) * g.m * g.k);
    g.off_b.push_back(broadcast_offset(p.out, p.stride_b, t) * g.k * g.n);
    g.off_c.push_back(t * g.m * g.n);
  }
  return g;
}

GemmPlan with_calls(GemmPlan p, std::vector<GemmCall> calls) {
  p.calls = std::move(calls);
  return p;
}

}  // namespace

const char* epilogue_name(Epilogue e) {
  switch (e) {
    case Epilogue::none:
      return "none";
    case Epilogue::bias:
      return "bias";
    case Epilogue::gelu:
      return "gelu";
    case Epilogue::gelu_bias:
      return "gelu_bias";
    case Epilogue::bias_grad:
      return "bias_grad";
  }
  return "?";
}

std::string GemmPlan::str() const {
  std::ostringstream s;
  s << "gemm(transa " << transa << ", transb " << transb << ", m " << m << ", n " << n << ", k " << k
    << ", lda " << lda << ", ldb " << ldb << ", ldc " << ldc << ", epilogue " << epilogue_name(epilogue)
    << ", " << calls.size() << " call(s)";
  if (!calls.empty())
    s << ", first batch " << calls[0].batch << " strides " << calls[0].stride_x << "/" << calls[0].stride_y
      << "/" << calls[0].stride_c;
  s << ")";
  return s.str();
}

GemmPlan to_column_major(const RowMajorGemm& g) {
  GemmPlan p;
  p.transa = g.trans_y;
  p.transb = g.trans_x;
  p.m = g.n;
  p.n = g.m;
  p.k = g.k;
  // packed row strides: Y stored [K,N] (or [N,K]), X stored [M,K] (or [K,M]), C [M,N]
  p.lda = g.ldy ? g.ldy : at_least_1(g.trans_y ? g.k : g.n);
  p.ldb = g.ldx ? g.ldx : at_least_1(g.trans_x ? g.m : g.k);
  p.ldc = g.ldc ? g.ldc : at_least_1(g.n);
  p.epilogue = g.epilogue;
  p.calls = {GemmCall{}};
  return p;
}

void check_plan(const GemmPlan& p, const char* op) {
  auto fail = [&](const std::string& why) {
    throw Error(std::string(op) + ": invalid " + p.str() + ": " + why);
  };
  if (p.m < 0 || p.n < 0 || p.k < 0) fail("negative dimension");
  if (p.lda < at_least_1(p.rows_a())) fail("lda below the rows of A");
  if (p.ldb < at_least_1(p.rows_b())) fail("ldb below the rows of B");
  if (p.ldc < at_least_1(p.m)) fail("ldc below the rows of C");
  for (const GemmCall& c : p.calls) {
    if (c.batch < 1) fail("batch count below 1");
    if (c.batch > 1 && (c.stride_c <= 0 || c.stride_x < 0 || c.stride_y < 0))
      fail("C must advance and X, Y must not go back within a batch");
    if (c.batch > 1 && p.epilogue == Epilogue::bias_grad) fail("bias_grad needs batch 1");
  }
  if (p.epilogue == Epilogue::bias_grad && p.calls.size() > 1) fail("bias_grad needs a single call");
}

GemmPlan linear_forward_plan(int64_t rows, int64_t k, int64_t n, Epilogue e) {
  if (e == Epilogue::bias_grad) throw Error("linear_forward_plan: bias_grad is a backward epilogue");
  return to_column_major({.trans_x = false, .trans_y = true, .m = rows, .n = n, .k = k, .epilogue = e});
}

GemmPlan linear_grad_input_plan(int64_t rows, int64_t k, int64_t n) {
  return to_column_major({.trans_x = false, .trans_y = false, .m = rows, .n = k, .k = n});
}

GemmPlan linear_grad_weight_plan(int64_t rows, int64_t k, int64_t n, bool bias_grad) {
  return to_column_major({.trans_x = true,
                          .trans_y = false,
                          .m = n,
                          .n = k,
                          .k = rows,
                          .epilogue = bias_grad ? Epilogue::bias_grad : Epilogue::none});
}

GemmPlan matmul_forward_plan(const Shape& a, const Shape& b) {
  MatmulGeom g = matmul_geom(a, b);
  if (g.fold)  // c[batch*M, N] = a[batch*M, K] b[K, N]
    return to_column_major({.m = g.batch * g.m, .n = g.n, .k = g.k});
  return with_calls(to_column_major({.m = g.m, .n = g.n, .k = g.k}), batch_calls(g.off_a, g.off_b, g.off_c));
}

GemmPlan matmul_grad_a_plan(const Shape& a, const Shape& b) {
  MatmulGeom g = matmul_geom(a, b);
  if (g.fold)  // da[batch*M, K] = dc[batch*M, N] b^T
    return to_column_major({.trans_y = true, .m = g.batch * g.m, .n = g.k, .k = g.n});
  return with_calls(to_column_major({.trans_y = true, .m = g.m, .n = g.k, .k = g.n}),
                    batch_calls(g.off_c, g.off_b, g.off_a));
}

GemmPlan matmul_grad_b_plan(const Shape& a, const Shape& b) {
  MatmulGeom g = matmul_geom(a, b);
  if (g.fold)  // db[K, N] = a^T[K, batch*M] dc[batch*M, N]
    return to_column_major({.trans_x = true, .m = g.k, .n = g.n, .k = g.batch * g.m});
  return with_calls(to_column_major({.trans_x = true, .m = g.k, .n = g.n, .k = g.m}),
                    batch_calls(g.off_a, g.off_c, g.off_b));
}

}  // namespace strata::gemm
