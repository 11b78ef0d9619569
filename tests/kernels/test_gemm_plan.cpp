// The row-major -> column-major GEMM mapping proven without a GPU: every plan the
// CUDA linear/matmul kernels use is executed by a naive column-major GEMM written
// here with cuBLASLt's semantics (transposes, leading dimensions, strided batches,
// beta, and the bias / GELU / BGRADB epilogues as cuBLASLt defines them on D), and
// the result compared with a row-major reference computed straight from the op's
// definition. Buffers are bounds-checked (.at) and outputs pre-filled with NaN,
// so a plan that reads out of range or leaves an element unwritten fails.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "base/error.h"
#include "kernels/gemm_plan.h"
#include "kernels/scalar_math.h"

namespace strata::gemm {
namespace {

using Vec = std::vector<double>;
const double kNaN = std::numeric_limits<double>::quiet_NaN();

Vec random_vec(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Vec v(static_cast<size_t>(n));
  for (auto& x : v) x = u(rng);
  return v;
}

// cuBLASLt's column-major D[m,n] = op(A) op(B) (+ beta C) with A = y, B = x,
// applied call by call; `bias` is read (bias, gelu_bias) or written (bias_grad).
void execute(const GemmPlan& p, const Vec& x, const Vec& y, Vec& c, Vec* bias) {
  check_plan(p, "test");
  auto at = [](const Vec& v, int64_t i) { return v.at(static_cast<size_t>(i)); };
  for (const GemmCall& call : p.calls) {
    for (int64_t b = 0; b < call.batch; ++b) {
      int64_t A = call.off_y + b * call.stride_y, B = call.off_x + b * call.stride_x,
              C = call.off_c + b * call.stride_c;
      auto opa = [&](int64_t i, int64_t q) { return at(y, A + op_element(p.transa, i, q, p.lda)); };
      auto opb = [&](int64_t q, int64_t j) { return at(x, B + op_element(p.transb, q, j, p.ldb)); };
      for (int64_t j = 0; j < p.n; ++j) {
        for (int64_t i = 0; i < p.m; ++i) {
          double acc = 0;
          for (int64_t q = 0; q < p.k; ++q) acc += opa(i, q) * opb(q, j);
          double& d = c.at(static_cast<size_t>(C + col_major(i, j, p.ldc)));
          double v = call.beta != 0 ? acc + call.beta * d : acc;  // beta 0 ignores C (NaN)
          if (epilogue_has_bias(p.epilogue)) v += bias->at(static_cast<size_t>(i));
          if (epilogue_has_gelu(p.epilogue)) v = math::gelu(v);
          d = v;
        }
      }
      if (p.epilogue == Epilogue::bias_grad) {
        for (int64_t j = 0; j < p.n; ++j) {
          double s = 0;
          for (int64_t q = 0; q < p.k; ++q) s += opb(q, j);
          bias->at(static_cast<size_t>(j)) = s;
        }
      }
    }
  }
}

// GELU, tanh form, restated from its definition.
double gelu_ref(double v) {
  const double pi = 3.14159265358979323846;
  return 0.5 * v * (1 + std::tanh(std::sqrt(2 / pi) * (v + 0.044715 * v * v * v)));
}

void expect_close(const Vec& got, const Vec& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-12 * (1 + std::fabs(want[i]))) << what << " at " << i;
}

struct LinearCase {
  int64_t rows, k, n;
};
const LinearCase kLinear[] = {{3, 5, 7}, {1, 4, 6}, {6, 1, 3}, {5, 3, 1}, {1, 1, 1}, {17, 9, 13}};

std::string name(const LinearCase& c) {
  return "rows " + std::to_string(c.rows) + " k " + std::to_string(c.k) + " n " + std::to_string(c.n);
}

TEST(GemmPlan, LinearForwardWithEveryEpilogue) {
  for (const LinearCase& lc : kLinear) {
    for (Epilogue e : {Epilogue::none, Epilogue::bias, Epilogue::gelu, Epilogue::gelu_bias}) {
      Vec x = random_vec(lc.rows * lc.k, 1), w = random_vec(lc.n * lc.k, 2), b = random_vec(lc.n, 3);
      Vec y(static_cast<size_t>(lc.rows * lc.n), kNaN), want(y.size());
      for (int64_t r = 0; r < lc.rows; ++r)
        for (int64_t j = 0; j < lc.n; ++j) {
          double s = 0;
          for (int64_t q = 0; q < lc.k; ++q) s += x[r * lc.k + q] * w[j * lc.k + q];
          if (epilogue_has_bias(e)) s += b[j];
          want[r * lc.n + j] = epilogue_has_gelu(e) ? gelu_ref(s) : s;
        }
      execute(linear_forward_plan(lc.rows, lc.k, lc.n, e), x, w, y, &b);
      expect_close(y, want, name(lc) + " epilogue " + epilogue_name(e));
    }
  }
}

TEST(GemmPlan, LinearBackwardInputWeightAndBias) {
  for (const LinearCase& lc : kLinear) {
    Vec x = random_vec(lc.rows * lc.k, 4), w = random_vec(lc.n * lc.k, 5), dy = random_vec(lc.rows * lc.n, 6);
    Vec dx(x.size(), kNaN), dw(w.size(), kNaN), db(static_cast<size_t>(lc.n), kNaN);
    Vec want_dx(x.size(), 0), want_dw(w.size(), 0), want_db(db.size(), 0);
    for (int64_t r = 0; r < lc.rows; ++r)
      for (int64_t j = 0; j < lc.n; ++j) {
        want_db[j] += dy[r * lc.n + j];
        for (int64_t q = 0; q < lc.k; ++q) {
          want_dx[r * lc.k + q] += dy[r * lc.n + j] * w[j * lc.k + q];
          want_dw[j * lc.k + q] += dy[r * lc.n + j] * x[r * lc.k + q];
        }
      }
    execute(linear_grad_input_plan(lc.rows, lc.k, lc.n), dy, w, dx, nullptr);
    expect_close(dx, want_dx, "dx " + name(lc));
    execute(linear_grad_weight_plan(lc.rows, lc.k, lc.n, true), dy, x, dw, &db);
    expect_close(dw, want_dw, "dw " + name(lc));
    expect_close(db, want_db, "db " + name(lc));
    Vec dw2(w.size(), kNaN);
    execute(linear_grad_weight_plan(lc.rows, lc.k, lc.n, false), dy, x, dw2, nullptr);
    expect_close(dw2, want_dw, "dw without bias_grad " + name(lc));
  }
}

// matmul's row-major definition with numpy batch broadcasting, indexed on its own.
struct Matmul {
  Shape a, b, c;
  int64_t m, k, n;
  Shape batch;  // output batch shape
  // Flat matrix index into an operand's batch for output batch index t.
  int64_t index(const Shape& op_batch_full, int64_t t) const {
    Shape idx(batch.size());
    for (int64_t d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d) {
      idx[d] = t % batch[d];
      t /= batch[d];
    }
    size_t lead = batch.size() - op_batch_full.size();
    int64_t flat = 0;
    for (size_t d = 0; d < op_batch_full.size(); ++d)
      flat = flat * op_batch_full[d] + (op_batch_full[d] == 1 ? 0 : idx[lead + d]);
    return flat;
  }
};

Matmul make_matmul(const Shape& a, const Shape& b) {
  Matmul mm{a, b, {}, a[a.size() - 2], a.back(), b.back(), {}};
  const int64_t ra = static_cast<int64_t>(a.size()) - 2, rb = static_cast<int64_t>(b.size()) - 2;
  const int64_t r = std::max(ra, rb);
  for (int64_t d = 0; d < r; ++d) {  // right-aligned batch dimensions, 1 where missing
    int64_t da = d >= r - ra ? a[d - (r - ra)] : 1, db = d >= r - rb ? b[d - (r - rb)] : 1;
    mm.batch.push_back(std::max(da, db));
  }
  mm.c = mm.batch;
  mm.c.push_back(mm.m);
  mm.c.push_back(mm.n);
  return mm;
}

const std::vector<std::pair<Shape, Shape>> kMatmul = {
    {{3, 4}, {4, 5}},              // 2D
    {{1, 4}, {4, 1}},              // M = 1, N = 1
    {{5, 1}, {1, 3}},              // K = 1
    {{2, 3, 4, 5}, {2, 3, 5, 2}},  // batched: one strided call
    {{2, 3, 4, 5}, {5, 6}},        // shared b: batch folds into M
    {{2, 3, 4, 5}, {1, 1, 5, 6}},  // shared b with unit batch dimensions: folds
    {{4, 5}, {3, 5, 6}},           // shared a: stride 0 on X, da summed over the batch
    {{2, 1, 3, 4}, {1, 3, 4, 2}},  // both broadcast
    {{3, 2, 2, 3}, {2, 3, 1}},     // b broadcast in the leading dimension
    {{2, 1, 1, 7}, {2, 4, 7, 3}},  // a broadcast inside, M = 1
    {{3, 1, 5, 2}, {1, 2, 1}},     // b broadcast, K = 2, N = 1
};

TEST(GemmPlan, MatmulForwardAndBothGradients) {
  for (const auto& [sa, sb] : kMatmul) {
    Matmul mm = make_matmul(sa, sb);
    std::string what = shape_str(sa) + " @ " + shape_str(sb);
    Vec a = random_vec(shape_numel(sa), 7), b = random_vec(shape_numel(sb), 8),
        dc = random_vec(shape_numel(mm.c), 9);
    Vec c(static_cast<size_t>(shape_numel(mm.c)), kNaN), da(a.size(), kNaN), db(b.size(), kNaN);
    Vec want_c(c.size(), 0), want_da(a.size(), 0), want_db(b.size(), 0);
    Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
    for (int64_t t = 0; t < shape_numel(mm.batch); ++t) {
      int64_t ia = mm.index(batch_a, t) * mm.m * mm.k, ib = mm.index(batch_b, t) * mm.k * mm.n,
              ic = t * mm.m * mm.n;
      for (int64_t i = 0; i < mm.m; ++i)
        for (int64_t j = 0; j < mm.n; ++j)
          for (int64_t q = 0; q < mm.k; ++q) {
            want_c[ic + i * mm.n + j] += a[ia + i * mm.k + q] * b[ib + q * mm.n + j];
            want_da[ia + i * mm.k + q] += dc[ic + i * mm.n + j] * b[ib + q * mm.n + j];
            want_db[ib + q * mm.n + j] += a[ia + i * mm.k + q] * dc[ic + i * mm.n + j];
          }
    }
    execute(matmul_forward_plan(sa, sb), a, b, c, nullptr);
    expect_close(c, want_c, "c of " + what);
    execute(matmul_grad_a_plan(sa, sb), dc, b, da, nullptr);
    expect_close(da, want_da, "da of " + what);
    execute(matmul_grad_b_plan(sa, sb), a, dc, db, nullptr);
    expect_close(db, want_db, "db of " + what);
  }
}

// The batching the CUDA path relies on for speed: one cuBLASLt call where one suffices.
TEST(GemmPlan, CommonMatmulsAreOneCall) {
  EXPECT_EQ(matmul_forward_plan({2, 3, 4, 5}, {5, 6}).calls.size(), 1u);
  EXPECT_EQ(matmul_forward_plan({2, 3, 4, 5}, {5, 6}).n, 2 * 3 * 4);  // folded: batch*M columns of D
  auto batched = matmul_forward_plan({8, 16, 32}, {8, 32, 4});
  ASSERT_EQ(batched.calls.size(), 1u);
  EXPECT_EQ(batched.calls[0].batch, 8);
  EXPECT_EQ(batched.calls[0].stride_c, 16 * 4);
  for (auto* f : {&matmul_forward_plan, &matmul_grad_a_plan, &matmul_grad_b_plan})
    EXPECT_EQ(f({4, 2, 16, 32}, {4, 2, 32, 8}).calls.size(), 1u);
  auto shared_a = matmul_forward_plan({16, 32}, {8, 32, 4});
  ASSERT_EQ(shared_a.calls.size(), 1u);
  EXPECT_EQ(shared_a.calls[0].stride_x, 0);
}

TEST(GemmPlan, AccumulatedGradientsNeverShareACallWithFreshOnes) {
  // da of a[4,5] @ b[3,5,6]: three products into one matrix; only the first may overwrite
  auto p = matmul_grad_a_plan({4, 5}, {3, 5, 6});
  ASSERT_EQ(p.calls.size(), 3u);
  EXPECT_EQ(p.calls[0].beta, 0.0f);
  EXPECT_EQ(p.calls[1].beta, 1.0f);
  EXPECT_EQ(p.calls[2].beta, 1.0f);
  for (const auto& [sa, sb] : kMatmul)
    for (const GemmPlan& q : {matmul_grad_a_plan(sa, sb), matmul_grad_b_plan(sa, sb)})
      for (const GemmCall& c : q.calls) EXPECT_TRUE(c.batch == 1 || c.stride_c > 0) << q.str();
}

TEST(GemmPlan, EmptyDimensionsGiveEmptyPlans) {
  EXPECT_TRUE(matmul_forward_plan({0, 4, 5}, {5, 6}).empty());
  EXPECT_TRUE(matmul_forward_plan({2, 0, 5}, {2, 5, 6}).empty());
  EXPECT_TRUE(linear_forward_plan(0, 4, 3, Epilogue::bias).empty());
  EXPECT_FALSE(linear_forward_plan(2, 0, 3, Epilogue::bias).empty());  // k = 0: y = bias
  Vec x, w, b = {1, 2, 3}, y(6, kNaN);
  execute(linear_forward_plan(2, 0, 3, Epilogue::bias), x, w, y, &b);
  expect_close(y, {1, 2, 3, 1, 2, 3}, "k = 0");
}

TEST(GemmPlan, RejectsInvalidPlans) {
  GemmPlan p = linear_forward_plan(4, 8, 6, Epilogue::none);
  p.lda = p.rows_a() - 1;
  EXPECT_THROW(check_plan(p, "linear"), Error);
  EXPECT_THROW(linear_forward_plan(4, 8, 6, Epilogue::bias_grad), Error);
  EXPECT_THROW(matmul_forward_plan({3, 4}, {5, 6}), ShapeError);
  GemmPlan q = matmul_forward_plan({2, 3, 4}, {2, 4, 5});
  q.calls[0].stride_c = 0;
  EXPECT_THROW(check_plan(q, "matmul"), Error);
}

}  // namespace
}  // namespace strata::gemm
