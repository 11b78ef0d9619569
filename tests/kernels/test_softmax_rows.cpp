// Host checks of what the CUDA softmax and cross-entropy kernels compute per row:
// math::OnlineLse (the online max/sum pair every thread keeps, merged across a
// warp by a shuffle butterfly and across warps in order), the cross-entropy row
// loss and gradient shared with the CPU kernel, and the row launch shape.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "base/error.h"
#include "kernels/cuda/row_launch.h"
#include "kernels/scalar_math.h"

namespace strata {
namespace {

using Lse = math::OnlineLse<float>;

std::vector<float> random_row(size_t n, double lo, double hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(u(rng));
  return v;
}

// log sum exp in double, two passes (max, then shifted sum): the definition.
double lse_double(const std::vector<float>& x) {
  double m = -INFINITY;
  for (float v : x) m = std::max(m, static_cast<double>(v));
  double s = 0;
  for (float v : x) s += std::exp(v - m);
  return m + std::log(s);
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// What one row group of the CUDA kernels does: thread t adds x[t], x[t + tpr], ...;
// each warp merges by an xor butterfly; warps' results merge in warp order.
// Returns the per-thread results so that the caller can check they agree.
std::vector<Lse> group_lse(const std::vector<float>& x, int tpr) {
  std::vector<Lse> t(static_cast<size_t>(tpr));
  for (size_t j = 0; j < x.size(); ++j) t[j % static_cast<size_t>(tpr)].add(x[j]);
  for (int w = 0; w < tpr; w += cuda::kWarp)
    for (int o = cuda::kWarp / 2; o > 0; o >>= 1) {
      std::vector<Lse> before(t.begin() + w, t.begin() + w + cuda::kWarp);
      for (int l = 0; l < cuda::kWarp; ++l) t[w + l].merge(before[l ^ o].m, before[l ^ o].s);
    }
  if (tpr == cuda::kWarp) return t;
  Lse total;
  for (int w = 0; w < tpr; w += cuda::kWarp) total.merge(t[w].m, t[w].s);
  return std::vector<Lse>(static_cast<size_t>(tpr), total);
}

TEST(OnlineLse, MatchesTheTwoPassDefinitionForEveryGroupWidth) {
  for (size_t n : {1u, 7u, 31u, 32u, 33u, 1000u, 1031u, 5003u, 50257u}) {
    auto x = random_row(n, -12, 12, n);
    double want = lse_double(x);
    for (int tpr : {32, 128, 256, 512, 1024}) {
      auto got = group_lse(x, tpr);
      EXPECT_NEAR(got[0].lse(), want, 2e-6 * std::max(1.0, std::fabs(want))) << "n " << n << " tpr " << tpr;
      for (auto& g : got) ASSERT_EQ(bits(g.lse()), bits(got[0].lse())) << "threads disagree, n " << n;
    }
  }
}

TEST(OnlineLse, StableForLargeLogits) {
  auto x = random_row(300, 80, 120, 3);  // exp(120) overflows f32: the shift must be in place
  double want = lse_double(x);
  EXPECT_NEAR(group_lse(x, 32)[0].lse(), want, 2e-6 * want);
  Lse one;
  for (float v : x) one.add(v);
  EXPECT_NEAR(one.lse(), want, 2e-6 * want);
}

TEST(OnlineLse, MaskedElementsContributeNothing) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {-inf, -inf, 1.0f, -inf, 2.0f, -inf};
  double want = std::log(std::exp(1.0) + std::exp(2.0));
  for (int tpr : {32, 128}) EXPECT_NEAR(group_lse(x, tpr)[0].lse(), want, 1e-6);
  // a thread that saw only -inf merges as empty, in either order
  Lse a, b;
  a.add(-inf);
  b.add(3.0f);
  Lse ab = a, ba = b;
  ab.merge(b.m, b.s);
  ba.merge(a.m, a.s);
  EXPECT_FLOAT_EQ(ab.lse(), 3.0f);
  EXPECT_EQ(bits(ab.lse()), bits(ba.lse()));
}

TEST(OnlineLse, NanPropagatesWhateverTheGrouping) {
  const float inf = std::numeric_limits<float>::infinity();
  for (int tpr : {32, 256}) {
    std::vector<float> x(100, -inf);
    x[37] = std::nanf("");
    for (auto& g : group_lse(x, tpr)) EXPECT_TRUE(std::isnan(g.lse())) << tpr;
    x[50] = 1.0f;
    for (auto& g : group_lse(x, tpr)) EXPECT_TRUE(std::isnan(g.lse())) << tpr;
  }
}

// -sum_c t_c log p_c from the definition, in double.
double ce_row_direct(const std::vector<float>& x, int64_t label, double eps) {
  double lse = lse_double(x), loss = 0, C = static_cast<double>(x.size());
  for (size_t c = 0; c < x.size(); ++c) {
    double t = eps / C + (static_cast<int64_t>(c) == label ? 1 - eps : 0);
    loss -= t * (x[c] - lse);
  }
  return loss;
}

TEST(CrossEntropyRow, LossMatchesTheDefinition) {
  for (double eps : {0.0, 0.1, 1.0}) {
    auto x = random_row(97, -5, 5, 11);
    double sum = 0;
    for (float v : x) sum += v;
    double got = math::cross_entropy_row_loss<double>(lse_double(x), x[40], sum / 97, eps);
    EXPECT_NEAR(got, ce_row_direct(x, 40, eps), 1e-12) << "eps " << eps;
  }
}

TEST(CrossEntropyRow, GradientMatchesFiniteDifferencesAndSumsToZero) {
  const double eps = 0.2, scale = 0.37, h = 1e-3;
  auto x = random_row(23, -3, 3, 5);
  const int64_t label = 9;
  double lse = lse_double(x), total = 0;
  for (size_t c = 0; c < x.size(); ++c) {
    double g = math::cross_entropy_grad<double>(x[c], lse, static_cast<int64_t>(c) == label, eps / 23,
                                                1 - eps, scale);
    total += g;
    auto xp = x, xm = x;
    xp[c] += static_cast<float>(h);
    xm[c] -= static_cast<float>(h);
    double dh = static_cast<double>(xp[c]) - xm[c];  // the step as stored in f32
    double fd = scale * (ce_row_direct(xp, label, eps) - ce_row_direct(xm, label, eps)) / dh;
    EXPECT_NEAR(g, fd, 1e-6) << "class " << c;
  }
  EXPECT_NEAR(total, 0.0, 1e-12);  // sum p = sum t = 1
}

TEST(RowLaunch, GroupsCoverEveryRowOnceWithinBlockLimits) {
  for (int64_t cols : {1, 31, 32, 1024, 1025, 4096, 4097, 16384, 16385, 32768, 32769, 50257, 1 << 20})
    for (int64_t rows : {1, 3, 4, 5, 1000, 8193}) {
      auto l = cuda::row_launch(rows, cols, "test");
      EXPECT_EQ(l.threads_per_row % cuda::kWarp, 0);
      EXPECT_LE(l.block, cuda::kMaxBlock);
      EXPECT_EQ(l.block, l.threads_per_row * l.rows_per_block);
      // row_reduce.cuh: a group wider than a warp must be the whole block
      if (l.threads_per_row > cuda::kWarp) {
        EXPECT_EQ(l.rows_per_block, 1);
      }
      EXPECT_GE(l.grid * l.rows_per_block, rows);
      EXPECT_LT((l.grid - 1) * l.rows_per_block, rows);
      // rows up to GPT-2's vocabulary keep under 64 elements per thread
      if (cols <= 50257) {
        EXPECT_LE((cols + l.threads_per_row - 1) / l.threads_per_row, 64) << cols;
      }
    }
}

TEST(RowLaunch, WiderRowsNeverGetFewerThreads) {
  int prev = 0;
  for (int64_t cols = 1; cols <= (1 << 17); cols = cols * 3 / 2 + 1) {
    int t = cuda::threads_per_row(cols);
    EXPECT_GE(t, prev) << cols;
    prev = t;
  }
}

TEST(RowLaunch, VectorWalkNeedsWholeChunksAndAlignedBuffers) {
  alignas(16) static unsigned char buf[64];
  EXPECT_TRUE(cuda::row_vectorizable(8, 2, {buf, buf + 32}));  // 8 halves = one chunk
  EXPECT_TRUE(cuda::row_vectorizable(50256, 2, {buf}));
  EXPECT_FALSE(cuda::row_vectorizable(50257, 2, {buf}));  // GPT-2's vocabulary is odd
  EXPECT_TRUE(cuda::row_vectorizable(4, 4, {buf}));       // 4 floats = one chunk
  EXPECT_FALSE(cuda::row_vectorizable(6, 4, {buf}));
  EXPECT_FALSE(cuda::row_vectorizable(8, 2, {buf, buf + 8}));  // second buffer off a 16-byte boundary
  EXPECT_FALSE(cuda::row_vectorizable(16, 8, {buf + 8}));
  EXPECT_TRUE(cuda::row_vectorizable(2, 8, {buf}));  // 2 doubles
}

TEST(RowLaunch, TooManyRowsIsANamedError) {
  try {
    cuda::row_launch(int64_t{1} << 40, 8, "softmax");
    FAIL() << "no error for 2^40 rows";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("softmax"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace strata
