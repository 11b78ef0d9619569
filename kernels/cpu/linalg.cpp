// matmul and linear on f32, both through cpu::gemm. A batched matmul whose b is
// shared (rank 2, or batch dimensions all broadcast) folds a's batch into the row
// dimension: one [batch*M, K] x [K, N] GEMM that streams a once and keeps b in
// cache. Other batches run one GEMM per matrix: one per thread when the batch fills
// the threads or the products are small, otherwise one after another, each split
// over the threads inside cpu::gemm. Gradients
// of a broadcast operand accumulate serially (beta = 1) to stay race-free. linear
// is one GEMM against w^T with the bias preloaded into y (beta = 1); db is a
// column sum of dy split over column blocks (column_sums).
#include <algorithm>
#include <vector>

#include "kernels/backends.h"
#include "kernels/cpu/common.h"
#include "kernels/cpu/gemm.h"

namespace strata::cpu {
namespace {

// out[j] = sum over r of x[r * n + j] for j in [s, e), rows in order. A strip of
// kStrip columns is summed over every row into a local array that GCC keeps in
// vector registers; updating out in memory row by row was a load and a store per
// element (3.5-7x slower; 1.4% of the tiny GPT's step). Same order, same bits.
void column_sums(const float* x, int64_t rows, int64_t n, int64_t s, int64_t e, float* out) {
  constexpr int64_t kStrip = 32;
  int64_t j0 = s;
  for (; j0 + kStrip <= e; j0 += kStrip) {
    float acc[kStrip] = {};
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = x + r * n + j0;
      for (int64_t j = 0; j < kStrip; ++j) acc[j] += row[j];
    }
    std::copy(acc, acc + kStrip, out + j0);
  }
  if (j0 == e) return;
  std::fill(out + j0, out + e, 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = j0; j < e; ++j) out[j] += x[r * n + j];
}

struct MatmulGeom {
  int64_t m, k, n, batch, batch_a, batch_b;
  std::vector<int64_t> off_a, off_b;  // per output matrix: element offsets into a and b
};

MatmulGeom geom(const TensorView& a, const TensorView& b) {
  MatmulGeom g;
  g.m = a.size(-2);
  g.k = a.size(-1);
  g.n = b.size(-1);
  Shape ba(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
  auto p = broadcast_plan(ba, bb, "matmul");
  g.batch = shape_numel(p.out);
  g.batch_a = shape_numel(ba);
  g.batch_b = shape_numel(bb);
  for (int64_t t = 0; t < g.batch; ++t) {
    g.off_a.push_back(broadcast_offset(p.out, p.stride_a, t) * g.m * g.k);
    g.off_b.push_back(broadcast_offset(p.out, p.stride_b, t) * g.k * g.n);
  }
  return g;
}

// Runs fn(t) for every batch matrix t.
template <typename Fn>
void for_each_matrix(int64_t batch, int64_t flops, Fn fn) {
  // a batch that fills the threads (or products too small to split) goes one matrix
  // per thread: no synchronisation inside a product at all
  if (batch > 1 && (batch >= num_threads() || flops < kGemmParallelFlops)) {
    parallel_for(batch, 1, [&](int64_t s, int64_t e) {
      for (int64_t t = s; t < e; ++t) fn(t);
    });
  } else {
    for (int64_t t = 0; t < batch; ++t) fn(t);
  }
}

}  // namespace

void matmul_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  auto g = geom(in[0], in[1]);
  const float *a = F(in[0]), *b = F(in[1]);
  float* c = F(out[0]);
  if (g.batch_b == 1 && g.batch_a == g.batch) {  // shared b: fold the batch into rows
    gemm(false, false, g.batch * g.m, g.n, g.k, 1.0f, a, g.k, b, g.n, 0.0f, c, g.n);
    return;
  }
  for_each_matrix(g.batch, 2 * g.m * g.n * g.k, [&](int64_t t) {
    gemm(false, false, g.m, g.n, g.k, 1.0f, a + g.off_a[t], g.k, b + g.off_b[t], g.n, 0.0f, c + t * g.m * g.n,
         g.n);
  });
}

void matmul_backward(const OpAttrs&, const TensorView* in, const TensorView*, const TensorView& gout,
                     TensorView* gin) {
  auto g = geom(in[0], in[1]);
  const float *a = F(in[0]), *b = F(in[1]), *dc = F(gout);
  int64_t flops = 2 * g.m * g.n * g.k;
  if (g.batch_b == 1 && g.batch_a == g.batch) {
    // dA[bM, K] = dC[bM, N] B^T;  dB[K, N] = A^T[K, bM] dC[bM, N]
    if (gin[0].defined())
      gemm(false, true, g.batch * g.m, g.k, g.n, 1.0f, dc, g.n, b, g.n, 0.0f, F(gin[0]), g.k);
    if (gin[1].defined())
      gemm(true, false, g.k, g.n, g.batch * g.m, 1.0f, a, g.k, dc, g.n, 0.0f, F(gin[1]), g.n);
    return;
  }
  if (gin[0].defined()) {  // dA[t] (+)= dC[t] B[t]^T
    float* da = F(gin[0]);
    if (g.batch_a == g.batch) {
      for_each_matrix(g.batch, flops, [&](int64_t t) {
        gemm(false, true, g.m, g.k, g.n, 1.0f, dc + t * g.m * g.n, g.n, b + g.off_b[t], g.n, 0.0f,
             da + g.off_a[t], g.k);
      });
    } else {
      std::fill(da, da + gin[0].numel(), 0.0f);
      for (int64_t t = 0; t < g.batch; ++t)
        gemm(false, true, g.m, g.k, g.n, 1.0f, dc + t * g.m * g.n, g.n, b + g.off_b[t], g.n, 1.0f,
             da + g.off_a[t], g.k);
    }
  }
  if (gin[1].defined()) {  // dB[t] (+)= A[t]^T dC[t]
    float* db = F(gin[1]);
    if (g.batch_b == g.batch) {
      for_each_matrix(g.batch, flops, [&](int64_t t) {
        gemm(true, false, g.k, g.n, g.m, 1.0f, a + g.off_a[t], g.k, dc + t * g.m * g.n, g.n, 0.0f,
             db + g.off_b[t], g.n);
      });
    } else {
      std::fill(db, db + gin[1].numel(), 0.0f);
      for (int64_t t = 0; t < g.batch; ++t)
        gemm(true, false, g.k, g.n, g.m, 1.0f, a + g.off_a[t], g.k, dc + t * g.m * g.n, g.n, 1.0f,
             db + g.off_b[t], g.n);
    }
  }
}

void linear_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  int64_t k = in[0].size(-1), n = in[1].size(0), rows = in[0].numel() / std::max<int64_t>(1, k);
  if (k == 0) rows = out[0].numel() / std::max<int64_t>(1, n);
  float* y = F(out[0]);
  const float* bias = in[2].defined() ? F(in[2]) : nullptr;
  parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, n)),
               [&](int64_t s, int64_t e) {
                 for (int64_t r = s; r < e; ++r) {
                   if (bias)
                     std::memcpy(y + r * n, bias, sizeof(float) * static_cast<size_t>(n));
                   else
                     std::memset(y + r * n, 0, sizeof(float) * static_cast<size_t>(n));
                 }
               });
  gemm(false, true, rows, n, k, 1.0f, F(in[0]), k, F(in[1]), k, 1.0f, y, n);
}

void linear_backward(const OpAttrs&, const TensorView* in, const TensorView*, const TensorView& gout,
                     TensorView* gin) {
  int64_t k = in[0].size(-1), n = in[1].size(0), rows = gout.numel() / std::max<int64_t>(1, n);
  const float* dy = F(gout);
  if (gin[0].defined())
    gemm(false, false, rows, k, n, 1.0f, dy, n, F(in[1]), k, 0.0f, F(gin[0]), k);  // dx = dy w
  if (gin[1].defined())
    gemm(true, false, n, k, rows, 1.0f, dy, n, F(in[0]), k, 0.0f, F(gin[1]), k);  // dw = dy^T x
  if (gin[2].defined()) {                                                         // db = column sums of dy
    float* db = F(gin[2]);
    parallel_for(n, std::max<int64_t>(16, kElementwiseGrain / std::max<int64_t>(1, rows)),
                 [&](int64_t s, int64_t e) { column_sums(dy, rows, n, s, e, db); });
  }
}

}  // namespace strata::cpu
