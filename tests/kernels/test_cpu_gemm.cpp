// cpu::gemm against a product in double on the same inputs, on both sides of
// kDnnlMaxDim (where a build with oneDNN hands small products to dnnl_sgemm, on
// AVX-512 CPUs also those with every dimension >= kDnnlMaxDim, and keeps
// OpenBLAS for the rest; 300 x 200 x 256 and its panels cross that line): every transposition, padded leading
// dimensions, alpha and beta (beta = 0 must ignore a C full of NaN), calls from inside a parallel region, and
// OpenMP's thread setting left as it was.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/runtime/parallel.h"

namespace strata {
namespace {

struct Case {
  int64_t m, n, k;
  bool ta, tb;
  float alpha, beta;
};

std::string name(const Case& c) {
  return std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) + (c.ta ? " A^T" : "") +
         (c.tb ? " B^T" : "") + " alpha " + std::to_string(c.alpha) + " beta " + std::to_string(c.beta);
}

// Runs one case with leading dimensions 3 past the minimum and checks every
// element of C, and that the padding between rows was not written.
void check(const Case& c, bool from_parallel_region) {
  SCOPED_TRACE(name(c) + (cpu::gemm_uses_dnnl(c.m, c.n, c.k) ? " on oneDNN" : "") +
               (from_parallel_region ? " (inside a parallel region)" : ""));
  const int64_t ar = c.ta ? c.k : c.m, ac = c.ta ? c.m : c.k, br = c.tb ? c.n : c.k, bc = c.tb ? c.k : c.n;
  const int64_t lda = ac + 3, ldb = bc + 3, ldc = c.n + 3;
  std::mt19937 rng(static_cast<unsigned>(c.m * 131 + c.n * 17 + c.k));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> a(static_cast<size_t>(ar * lda)), b(static_cast<size_t>(br * ldb)),
      cm(static_cast<size_t>(c.m * ldc));
  for (float& x : a) x = u(rng);
  for (float& x : b) x = u(rng);
  const float pad = -7.0f;
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < ldc; ++j)
      cm[static_cast<size_t>(i * ldc + j)] =
          j >= c.n ? pad : (c.beta == 0.0f ? std::numeric_limits<float>::quiet_NaN() : u(rng));
  const std::vector<float> c0 = cm;
  auto A = [&](int64_t i, int64_t p) {
    return c.ta ? a[static_cast<size_t>(p * lda + i)] : a[static_cast<size_t>(i * lda + p)];
  };
  auto B = [&](int64_t p, int64_t j) {
    return c.tb ? b[static_cast<size_t>(j * ldb + p)] : b[static_cast<size_t>(p * ldb + j)];
  };

  auto run = [&] {
    cpu::gemm(c.ta, c.tb, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(), ldb, c.beta, cm.data(), ldc);
  };
  if (from_parallel_region)
    parallel_run(2, [&](int64_t chunk) {
      if (chunk == 0) run();
    });
  else
    run();

  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      float got = cm[static_cast<size_t>(i * ldc + j)];
      if (j >= c.n) {
        ASSERT_EQ(got, pad) << "padding at row " << i << " column " << j << " was written";
        continue;
      }
      double want = 0;
      for (int64_t p = 0; p < c.k; ++p) want += static_cast<double>(A(i, p)) * static_cast<double>(B(p, j));
      want *= c.alpha;
      if (c.beta != 0.0f) want += static_cast<double>(c.beta) * c0[static_cast<size_t>(i * ldc + j)];
      ASSERT_NEAR(got, want, 1e-5 * static_cast<double>(c.k) + 1e-5) << "C[" << i << "][" << j << "]";
    }
}

std::vector<Case> cases() {
  std::vector<Case> out;
  // small: every dimension within kDnnlMaxDim (the attention's 64-row blocks);
  // at the bound; one dimension past it; large enough to split into panels
  const int64_t shapes[][3] = {{64, 128, 64},
                               {64, 64, 128},
                               {5, 7, 3},
                               {cpu::kDnnlMaxDim, cpu::kDnnlMaxDim, cpu::kDnnlMaxDim},
                               {cpu::kDnnlMaxDim + 1, 40, 33},
                               {64, 64, cpu::kDnnlMaxDim + 1},
                               {300, 200, 256}};
  for (const auto& s : shapes)
    for (int t = 0; t < 4; ++t) out.push_back({s[0], s[1], s[2], (t & 1) != 0, (t & 2) != 0, 1.0f, 0.0f});
  out.push_back({64, 128, 64, false, true, 0.125f, 1.0f});
  out.push_back({64, 64, 128, true, false, -2.0f, 0.5f});
  out.push_back({300, 200, 256, false, false, 0.5f, 1.0f});
  out.push_back({300, 200, 256, true, true, 1.0f, 0.25f});
  return out;
}

TEST(CpuGemm, MatchesADoubleProductOnBothSidesOfTheProviderSplit) {
  set_num_threads(2);
  for (const Case& c : cases()) check(c, false);
}

TEST(CpuGemm, MatchesFromInsideAParallelRegion) {
  set_num_threads(2);
  for (const Case& c : cases()) check(c, true);
}

TEST(CpuGemm, LeavesOpenMPsThreadCountAsItWas) {
  set_num_threads(2);
  omp_set_num_threads(3);
  check({64, 64, 64, false, false, 1.0f, 0.0f}, false);
  check({64, 64, 64, true, true, 1.0f, 0.0f}, true);
  EXPECT_EQ(omp_get_max_threads(), 3);
  omp_set_num_threads(1);
}

}  // namespace
}  // namespace strata
