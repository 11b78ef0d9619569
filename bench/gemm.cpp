// strata-bench gemm: fp32 GEMM throughput of strata's GEMM entry point
// (cpu::gemm, the one matmul/linear/conv/attention use) beside the library call it is
// built on (a bare Eigen::MatrixXf product) and OpenBLAS cblas_sgemm, measured in
// the same run on square sizes, with each figure as a share of the machine's fp32
// peak. Peak = cores x sustained GHz x FMA units x 16 lanes x 2 FLOP. The clock is
// measured, not read from /proc/cpuinfo: a dependent AVX-512 FMA chain (latency 4
// cycles assumed, as on Intel Skylake-SP through Sapphire Rapids and AMD Zen 4)
// runs on all threads at once in short bursts, and the fastest burst counts (a
// burst shorter than a scheduler slice is rarely preempted, so time-sharing with
// other processes does not read as a slow clock). AVX-512 is detected with cpuid;
// the FMA unit count is assumed to be 2 (server Xeons from Skylake-SP Gold on, all
// Sapphire Rapids parts; --fma-units overrides). A throughput loop of independent
// register-only FMAs is no good cross-check here: on this VM it reads 0.7 FMA/cycle
// while Eigen's GEMM sustains 1.4 on one core (see docs/kernels.md). --clock cpu times
// by process CPU time / threads instead of wall time: exact with --threads 1 on a
// machine shared with other work, approximate with more threads. Libraries run in
// turn with a pause between them so that one library's spinning worker threads
// do not slow the next. cpu::gemm cuts C into one panel per thread and runs Eigen
// serially on each; the bare-Eigen column uses Eigen's own threading.
#if STRATA_BENCH_OPENBLAS
#include <cblas.h>
#endif
#include <immintrin.h>
#include <omp.h>

// GCC 12 reports false -Wmaybe-uninitialized inside Eigen's AVX-512 packet code.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gemm_cuda.h"
#include "kernels/cpu/gemm.h"
#include "kernels/runtime/parallel.h"
#include "registry.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

constexpr int kFmaLatency = 4;  // cycles, vfmadd231ps zmm (see the file comment)

#if defined(__AVX512F__)
// One dependent chain: each FMA waits for the previous one.
__attribute__((noinline)) float dependent_fma(int64_t iters) {
  __m512 acc = _mm512_set1_ps(1.0f), a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
    acc = _mm512_fmadd_ps(acc, a, b);
    __asm__ volatile("" : "+v"(acc));
  }
  return _mm512_reduce_add_ps(acc);
}

#endif

struct Peak {
  bool avx512 = false;
  int threads = 1;
  double ghz = 0;  // sustained, all threads busy
  int units = 2;   // FMA units assumed
  double gflops = 0;
};

// Runs fn on every thread at once, `bursts` times; returns the fastest burst's
// wall seconds on any thread.
template <typename Fn>
double fastest_burst(int threads, int bursts, Fn fn) {
  std::vector<double> best(static_cast<size_t>(threads), 1e30);
  std::vector<float> result(static_cast<size_t>(threads));
#pragma omp parallel num_threads(threads)
  {
    auto id = static_cast<size_t>(omp_get_thread_num());
    for (int b = 0; b < bursts; ++b) {
#pragma omp barrier
      auto t0 = Clock::now();
      result[id] += fn();
      best[id] = std::min(best[id], seconds_since(t0));
    }
  }
  volatile float sink = 0;
  for (float r : result) sink = sink + r;
  return *std::max_element(best.begin(), best.end());  // the slowest thread's best: all cores busy
}

Peak estimate_peak(int threads, int units) {
  Peak p;
  p.threads = threads;
  p.units = units;
#if defined(__AVX512F__)
  p.avx512 = __builtin_cpu_supports("avx512f");
  if (!p.avx512) return p;
  const int64_t iters = 200'000;                                      // ~0.25 ms per burst at 3 GHz
  fastest_burst(threads, 200, [&] { return dependent_fma(iters); });  // settle at the AVX-512 clock
  double t_dep = fastest_burst(threads, 400, [&] { return dependent_fma(iters); });
  p.ghz = static_cast<double>(iters) * kFmaLatency / t_dep / 1e9;
  p.gflops = threads * p.ghz * p.units * 16 * 2;
#endif
  return p;
}

std::vector<float> random_matrix(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> m(static_cast<size_t>(n * n));
  for (auto& x : m) x = u(rng);
  return m;
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Seconds of one call: wall time, or (--clock cpu) the process's CPU time over the
// thread count -- what the call would take with the cores to itself, spin-waits
// included, on a machine shared with other work.
bool g_cpu_clock = false;
int g_threads = 1;

// Best GFLOP/s over repetitions of fn (one warm-up call, then at least 3 runs and
// about 1 s of work).
template <typename Fn>
double best_gflops(int64_t n, Fn fn) {
  double flops = 2.0 * static_cast<double>(n) * n * n;
  fn();
  double best = 1e30, total = 0;
  for (int rep = 0; rep < 3 || (total < 1.0 && rep < 200); ++rep) {
    auto t0 = Clock::now();
    double c0 = process_cpu_seconds();
    fn();
    double t = g_cpu_clock ? (process_cpu_seconds() - c0) / g_threads : seconds_since(t0);
    best = std::min(best, t);
    total += t;
  }
  return flops / best / 1e9;
}

// Lets worker threads of the previous library stop spinning (OpenBLAS spins for
// about 0.1 s after a call, libgomp for a shorter while).
void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(250)); }

int gemm_cpu(int threads, std::vector<int64_t> sizes, int units);

}  // namespace

STRATA_BENCH(
    gemm,
    "fp32 GEMM GFLOP/s: strata cpu::gemm vs bare Eigen vs OpenBLAS, and % of fp32 peak; --device cuda: "
    "fp32/fp16/bf16 TFLOP/s through strata vs direct cuBLASLt vs torch") {
  std::string device = "cpu", clock = "wall";
  std::vector<int64_t> sizes;
  int threads = 0, units = 2;
  strata::bench::GpuGemmOptions gpu;
  cli.app
      .add_option("--device", device, "cpu: strata vs Eigen vs OpenBLAS; cuda: strata vs cuBLASLt vs torch")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cli.app
      .add_option("--sizes", sizes,
                  "Square sizes n, comma-separated (default cpu 256,...,4096; cuda 4096,8192)")
      ->delimiter(',');
  cli.app.add_option("--threads", threads, "cpu: compute threads (0 = all cores)")->capture_default_str();
  cli.app.add_option("--fma-units", units, "cpu: AVX-512 FMA units per core, for the peak")
      ->check(CLI::IsMember({1, 2}))
      ->capture_default_str();
  cli.app.add_option("--clock", clock, "cpu: time by the wall clock or by process CPU time / threads")
      ->check(CLI::IsMember({"wall", "cpu"}))
      ->capture_default_str();
  cli.app.add_option("--dtypes", gpu.dtypes, "cuda: comma-separated fp32, fp16, bf16")
      ->delimiter(',')
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  cli.app.add_option("--warmup", gpu.warmup, "cuda: untimed calls first")->capture_default_str();
  cli.app.add_option("--reps", gpu.reps, "cuda: timed calls (the median is reported)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cli.app.add_flag_callback(
      "--no-torch", [&gpu] { gpu.torch = false; }, "cuda: no torch.matmul column");
  if (int rc = cli.parse(); rc >= 0) return rc;
  if (device == "cuda") {
    if (!sizes.empty()) gpu.sizes = sizes;
    return strata::bench::gemm_cuda(gpu);
  }
  g_cpu_clock = clock == "cpu";
  return gemm_cpu(threads, sizes.empty() ? std::vector<int64_t>{256, 512, 1024, 2048, 4096} : sizes, units);
}

namespace {

#if !STRATA_BENCH_OPENBLAS
// The GPU bundle (scripts/gpu-bundle.sh) leaves OpenBLAS out: 35 MiB of library
// for a CPU peer that a GPU check never runs.
int gemm_cpu(int, std::vector<int64_t>, int) {
  std::fprintf(stderr,
               "the CPU GEMM bench needs its OpenBLAS peer: this build has STRATA_BENCH_OPENBLAS=OFF\n");
  return 2;
}
#else
int gemm_cpu(int threads, std::vector<int64_t> sizes, int units) {
  strata::set_num_threads(threads);
  threads = strata::num_threads();
  g_threads = threads;
  openblas_set_num_threads(threads);

  double load = 0;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1) load = 0;
    std::fclose(f);
  }
  Peak peak = estimate_peak(threads, units);
  std::printf("threads %d, Eigen %d.%d.%d, OpenBLAS %s\n", threads, EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION,
              EIGEN_MINOR_VERSION, openblas_get_config());
  std::printf("timing: %s, best of several runs\n",
              g_cpu_clock ? "process CPU time / threads (--clock cpu)" : "wall clock");
  if (load > 0.5 * threads && !g_cpu_clock)
    std::printf(
        "note: 1-min load average %.1f on %d threads: other processes share the cores, so wall-clock "
        "GEMM figures are lower bounds (--clock cpu counts only the time this process ran)\n",
        load, threads);
  if (peak.avx512)
    std::printf(
        "fp32 peak estimate: %d cores x %.2f GHz (dependent-FMA clock, latency %d assumed) x %d FMA units "
        "(assumed) x 16 lanes x 2 = %.0f GFLOP/s\n\n",
        peak.threads, peak.ghz, kFmaLatency, peak.units, peak.gflops);
  else
    std::printf("fp32 peak: not estimated (built without AVX-512)\n\n");

  std::printf("%6s  %10s %10s %10s  %9s %9s  %7s %7s %7s\n", "n", "strata", "eigen", "openblas", "str/eig",
              "str/oblas", "%peak", "%peak", "%peak");
  std::printf("%6s  %10s %10s %10s  %9s %9s  %7s %7s %7s\n", "", "GFLOP/s", "GFLOP/s", "GFLOP/s", "", "",
              "strata", "eigen", "oblas");
  double fastest = 0;
  for (int64_t n : sizes) {
    auto a = random_matrix(n, 1), b = random_matrix(n, 2);
    std::vector<float> c(static_cast<size_t>(n * n));
    double g_strata = best_gflops(n, [&] {
      strata::cpu::gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    });
    Eigen::MatrixXf ea = Eigen::MatrixXf::Random(n, n), eb = Eigen::MatrixXf::Random(n, n), ec(n, n);
    settle();
    Eigen::setNbThreads(threads);  // Eigen's own threading (cpu::gemm turns it off for itself)
    double g_eigen = best_gflops(n, [&] { ec.noalias() = ea * eb; });
    settle();
    openblas_set_num_threads(threads);  // OpenBLAS's own threading (cpu::gemm turns it off for itself)
    double g_blas = best_gflops(n, [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(n), static_cast<int>(n),
                  static_cast<int>(n), 1.0f, a.data(), static_cast<int>(n), b.data(), static_cast<int>(n),
                  0.0f, c.data(), static_cast<int>(n));
    });
    settle();
    auto pct = [&](double g) { return peak.gflops > 0 ? 100.0 * g / peak.gflops : NAN; };
    std::printf("%6lld  %10.1f %10.1f %10.1f  %9.2f %9.2f  %6.1f%% %6.1f%% %6.1f%%\n",
                static_cast<long long>(n), g_strata, g_eigen, g_blas, g_strata / g_eigen, g_strata / g_blas,
                pct(g_strata), pct(g_eigen), pct(g_blas));
    std::fflush(stdout);
    fastest = std::max({fastest, g_strata, g_eigen, g_blas});
  }
  if (peak.gflops > 0 && fastest > peak.gflops)
    std::printf(
        "\nnote: a measured GEMM beat the estimated peak: the clock or FMA-unit estimate is low "
        "(try --fma-units, or a quieter machine)\n");
  return 0;
}
#endif

}  // namespace
