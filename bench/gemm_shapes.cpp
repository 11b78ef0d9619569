// strata-bench gemm_shapes: one thread's fp32 GEMM throughput on the tiny GPT's
// products (configs/gpt_tiny.yaml: 2048 rows of 256 wide, MLP 1024, 64-wide
// heads of 128 tokens), OpenBLAS's cblas_sgemm beside oneDNN's dnnl_sgemm, then
// cpu::gemm on one thread, which runs one of the two by shape (products no larger
// than kDnnlMaxDim in any dimension go to oneDNN, and where oneDNN runs AVX-512
// also those no smaller than it in any dimension, kernels/cpu/gemm.cpp). The
// layer products are the shapes one of two pool threads runs on its panel
// (half the rows; weight gradients: half the output rows), the attention's the
// 64-row causal blocks each thread runs for its own heads. Providers alternate
// `--rounds` times and each keeps its best time, so a busy machine costs both
// alike; the ratio oneDNN / OpenBLAS is what the split rests on.
//   strata-bench gemm_shapes [--rounds 3]
#if STRATA_BENCH_OPENBLAS
#include <cblas.h>
#endif
#if STRATA_BENCH_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/runtime/parallel.h"
#include "registry.h"

namespace {

struct Shape {
  const char* what;
  bool ta, tb;
  int64_t m, n, k;
};

// Best wall time of `reps` calls, in seconds.
double best_of(int reps, const std::function<void()>& fn) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

STRATA_BENCH(
    gemm_shapes,
    "one thread's GEMM on the tiny GPT's products: OpenBLAS beside oneDNN, and which cpu::gemm runs") {
  using namespace strata;
  int rounds = 3;
  cli.app.add_option("--rounds", rounds, "Times each provider runs each shape, alternating")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cli.parse();
#if !STRATA_BENCH_OPENBLAS || !STRATA_BENCH_DNNL
  std::fprintf(stderr, "gemm_shapes: this strata-bench was built without %s; nothing to compare\n",
               STRATA_BENCH_OPENBLAS ? "oneDNN" : "OpenBLAS");
  return 2;
#else
  set_num_threads(1);
  omp_set_num_threads(1);
  openblas_set_num_threads(1);
  const std::vector<Shape> shapes = {
      {"forward 256 -> 768/3 (q, k, v, proj)", false, true, 1024, 256, 256},
      {"forward 256 -> 1024 (fc)", false, true, 1024, 1024, 256},
      {"forward 1024 -> 256 (MLP proj)", false, true, 1024, 256, 1024},
      {"dx 256 <- 256", false, false, 1024, 256, 256},
      {"dx 256 <- 1024", false, false, 1024, 256, 1024},
      {"dx 1024 <- 256", false, false, 1024, 1024, 256},
      {"dW 256 x 256", true, false, 128, 256, 2048},
      {"dW 1024 x 256", true, false, 512, 256, 2048},
      {"dW 256 x 1024", true, false, 256, 512, 2048},
      {"attention q k^T, first block", false, true, 64, 64, 64},
      {"attention q k^T, second block", false, true, 64, 128, 64},
      {"attention P v, first block", false, false, 64, 64, 64},
      {"attention P v, second block", false, false, 64, 64, 128},
      {"attention dS^T q", true, false, 64, 64, 128},
  };
  std::vector<float> a(size_t{2048} * 1024, 0.5f), b(size_t{2048} * 1024, 0.25f), c(size_t{2048} * 1024);
  std::printf(
      "# one thread; GFLOP/s, best of %d alternated rounds; cpu::gemm takes oneDNN when max(m, n, k) <= "
      "%lld%s\n",
      rounds, static_cast<long long>(cpu::kDnnlMaxDim),
      cpu::gemm_uses_dnnl(4096, 4096, 4096) ? " and (oneDNN on AVX-512 here) when min(m, n, k) >= it" : "");
  std::printf("%-38s %5s %5s %5s  %9s %9s %7s  %-8s %9s\n", "product", "m", "n", "k", "OpenBLAS", "oneDNN",
              "oDNN/OB", "cpu::gemm", "GFLOP/s");
  for (const Shape& s : shapes) {
    const int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
    const double flops = 2.0 * static_cast<double>(s.m * s.n * s.k);
    const int reps = flops < 1e7 ? 300 : 20;
    double t_blas = 1e30, t_dnnl = 1e30, t_strata = 1e30;
    for (int r = 0; r < rounds; ++r) {
      t_blas = std::min(t_blas, best_of(reps, [&] {
                          cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans,
                                      s.tb ? CblasTrans : CblasNoTrans, static_cast<blasint>(s.m),
                                      static_cast<blasint>(s.n), static_cast<blasint>(s.k), 1.0f, a.data(),
                                      static_cast<blasint>(lda), b.data(), static_cast<blasint>(ldb), 0.0f,
                                      c.data(), static_cast<blasint>(s.n));
                        }));
      t_dnnl = std::min(t_dnnl, best_of(reps, [&] {
                          dnnl_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k, 1.0f, a.data(), lda,
                                     b.data(), ldb, 0.0f, c.data(), s.n);
                        }));
      t_strata = std::min(t_strata, best_of(reps, [&] {
                            cpu::gemm(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f,
                                      c.data(), s.n);
                          }));
    }
    const bool dnnl = cpu::gemm_uses_dnnl(s.m, s.n, s.k);
    std::printf("%-38s %5lld %5lld %5lld  %9.1f %9.1f %6.2fx  %-9s %9.1f\n", s.what,
                static_cast<long long>(s.m), static_cast<long long>(s.n), static_cast<long long>(s.k),
                flops / t_blas / 1e9, flops / t_dnnl / 1e9, t_blas / t_dnnl, dnnl ? "oneDNN" : "OpenBLAS",
                flops / t_strata / 1e9);
  }
  return 0;
#endif
}
