// Reference matmul (batch dimensions broadcast) and linear, triple loops in double.
#include "kernels/backends.h"
#include "kernels/reference/common.h"

namespace strata::reference {
namespace {

struct MatmulGeom {
  int64_t m, k, n, batch;
  Shape batch_a, batch_b, batch_out;  // the batch dimensions (all but the last two)
};

MatmulGeom geom(const TensorView& a, const TensorView& b) {
  MatmulGeom g;
  g.m = a.size(-2);
  g.k = a.size(-1);
  g.n = b.size(-1);
  g.batch_a = Shape(a.shape.begin(), a.shape.end() - 2);
  g.batch_b = Shape(b.shape.begin(), b.shape.end() - 2);
  g.batch_out = broadcast_shape(g.batch_a, g.batch_b, "matmul");
  g.batch = shape_numel(g.batch_out);
  return g;
}

// The rows of x [..., K]: the product of its leading dimensions (K may be 0).
int64_t leading_rows(const TensorView& x) {
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < x.dim(); ++d) rows *= x.size(d);
  return rows;
}

}  // namespace

void matmul_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  auto g = geom(in[0], in[1]);
  for (int64_t t = 0; t < g.batch; ++t) {
    const double* a = D(in[0]) + broadcast_source(g.batch_out, g.batch_a, t) * g.m * g.k;
    const double* b = D(in[1]) + broadcast_source(g.batch_out, g.batch_b, t) * g.k * g.n;
    double* c = D(out[0]) + t * g.m * g.n;
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < g.k; ++p) s += a[i * g.k + p] * b[p * g.n + j];
        c[i * g.n + j] = s;
      }
  }
}

void matmul_backward(const OpAttrs&, const TensorView* in, const TensorView*, const TensorView& gout,
                     TensorView* gin) {
  auto g = geom(in[0], in[1]);
  for (int k = 0; k < 2; ++k)
    if (gin[k].defined())
      for (int64_t i = 0; i < gin[k].numel(); ++i) D(gin[k])[i] = 0;
  for (int64_t t = 0; t < g.batch; ++t) {
    int64_t oa = broadcast_source(g.batch_out, g.batch_a, t) * g.m * g.k;
    int64_t ob = broadcast_source(g.batch_out, g.batch_b, t) * g.k * g.n;
    const double* a = D(in[0]) + oa;
    const double* b = D(in[1]) + ob;
    const double* dc = D(gout) + t * g.m * g.n;
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j)
        for (int64_t p = 0; p < g.k; ++p) {
          if (gin[0].defined()) D(gin[0])[oa + i * g.k + p] += dc[i * g.n + j] * b[p * g.n + j];
          if (gin[1].defined()) D(gin[1])[ob + p * g.n + j] += a[i * g.k + p] * dc[i * g.n + j];
        }
  }
}

void linear_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  int64_t k = in[0].size(-1), n = in[1].size(0), rows = leading_rows(in[0]);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double s = D(in[2])[j];
      for (int64_t p = 0; p < k; ++p) s += D(in[0])[r * k + p] * D(in[1])[j * k + p];
      D(out[0])[r * n + j] = s;
    }
}

void linear_backward(const OpAttrs&, const TensorView* in, const TensorView*, const TensorView& gout,
                     TensorView* gin) {
  int64_t k = in[0].size(-1), n = in[1].size(0), rows = leading_rows(in[0]);
  for (int i = 0; i < 3; ++i)
    if (gin[i].defined())
      for (int64_t e = 0; e < gin[i].numel(); ++e) D(gin[i])[e] = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double g = D(gout)[r * n + j];
      if (gin[2].defined()) D(gin[2])[j] += g;
      for (int64_t p = 0; p < k; ++p) {
        if (gin[0].defined()) D(gin[0])[r * k + p] += g * D(in[1])[j * k + p];
        if (gin[1].defined()) D(gin[1])[j * k + p] += g * D(in[0])[r * k + p];
      }
    }
}

}  // namespace strata::reference
