// The device side of strata-bench gemm --device cuda (see gemm_cuda.cpp for
// what is measured and how). The bench reaches kernels/cuda/context.h, which
// library code outside kernels/cuda does not: it must time strata's GEMMs on the
// stream they run on, and give the direct cuBLASLt call the same stream.
#if STRATA_HAVE_CUDA
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "base/error.h"
#include "gemm_cuda.h"
#include "kernels/backends.h"
#include "kernels/cuda/context.h"
#include "kernels/runtime/half.h"

namespace strata::bench {
namespace {

constexpr double kDeadlineSeconds = 120;  // the longest any one wait on the GPU may take

// Waits for `ev` by polling, never longer than the deadline.
void wait(cudaEvent_t ev, const char* what) {
  auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    cudaError_t e = cudaEventQuery(ev);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) STRATA_CUDA_CHECK(e);
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > kDeadlineSeconds)
      throw Error(std::string("strata-bench gemm: the GPU did not finish ") + what + " within " +
                  std::to_string(static_cast<int>(kDeadlineSeconds)) + " s");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// Median milliseconds of fn (element reps/2 of the sorted times) after warm-up.
template <typename Fn>
double median_ms(const GpuGemmOptions& o, cudaStream_t s, Fn fn) {
  std::vector<cudaEvent_t> ev(2 * static_cast<size_t>(o.reps) + 1);
  for (auto& e : ev) STRATA_CUDA_CHECK(cudaEventCreate(&e));
  for (int i = 0; i < o.warmup; ++i) fn();
  STRATA_CUDA_CHECK(cudaEventRecord(ev.back(), s));
  wait(ev.back(), "the warm-up");
  for (int r = 0; r < o.reps; ++r) {
    STRATA_CUDA_CHECK(cudaEventRecord(ev[2 * r], s));
    fn();
    STRATA_CUDA_CHECK(cudaEventRecord(ev[2 * r + 1], s));
  }
  wait(ev[2 * static_cast<size_t>(o.reps) - 1], "the timed runs");
  std::vector<double> ms(static_cast<size_t>(o.reps));
  for (int r = 0; r < o.reps; ++r) {
    float t = 0;
    STRATA_CUDA_CHECK(cudaEventElapsedTime(&t, ev[2 * r], ev[2 * r + 1]));
    ms[r] = t;
  }
  for (auto& e : ev) cudaEventDestroy(e);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// The peer: one cublasLtMatmul for row-major C[n,n] = A B, i.e. column-major
// C^T = B^T A^T: cuBLAS's A is our B. FP32 compute, the heuristic's first choice.
struct DirectLt {
  cublasLtHandle_t h = nullptr;
  void* ws = nullptr;
  size_t ws_bytes = 32u << 20;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t l = nullptr;
  cublasLtMatmulAlgo_t algo{};

  DirectLt(cudaDataType_t t, int64_t n) {
    STRATA_CUBLAS_CHECK(cublasLtCreate(&h));
    STRATA_CUDA_CHECK(cudaMalloc(&ws, ws_bytes));
    STRATA_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    STRATA_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, t, n, n, n));
    cublasLtMatmulPreference_t pref = nullptr;
    STRATA_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t bytes = ws_bytes;
    STRATA_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                             &bytes, sizeof(bytes)));
    cublasLtMatmulHeuristicResult_t res{};
    int found = 0;
    STRATA_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(h, desc, l, l, l, l, pref, 1, &res, &found));
    cublasLtMatmulPreferenceDestroy(pref);
    if (found == 0) throw Error("strata-bench gemm: cuBLASLt offers no algorithm for the direct call");
    algo = res.algo;
  }
  ~DirectLt() {
    cublasLtMatrixLayoutDestroy(l);
    cublasLtMatmulDescDestroy(desc);
    cudaFree(ws);
    cublasLtDestroy(h);
  }
  void run(const void* a, const void* b, void* c, cudaStream_t s) {
    const float alpha = 1, beta = 0;
    STRATA_CUBLAS_CHECK(
        cublasLtMatmul(h, desc, &alpha, b, l, a, l, &beta, c, l, c, l, &algo, ws, ws_bytes, s));
  }
};

struct Case {
  DType dt;
  cudaDataType_t cuda;
};
Case lookup(const std::string& name) {
  if (name == "fp16") return {DType::f16, CUDA_R_16F};
  if (name == "bf16") return {DType::bf16, CUDA_R_16BF};
  return {DType::f32, CUDA_R_32F};
}

// Uniform values in [-1, 1) in dtype dt, from a 64-bit LCG (fast at 8192^2).
std::vector<char> random_matrix(DType dt, int64_t count, uint64_t seed) {
  std::vector<float> f(static_cast<size_t>(count));
  uint64_t x = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (auto& v : f) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    v = static_cast<float>(static_cast<double>(x >> 11) * 0x1.0p-53 * 2 - 1);
  }
  std::vector<char> out(static_cast<size_t>(count) * dtype_size(dt));
  if (dt == DType::f32) std::memcpy(out.data(), f.data(), out.size());
  if (dt == DType::f16) f32_to_f16(f.data(), reinterpret_cast<uint16_t*>(out.data()), f.size());
  if (dt == DType::bf16) f32_to_bf16(f.data(), reinterpret_cast<uint16_t*>(out.data()), f.size());
  return out;
}

// Largest |strata - direct| over the first elements, relative to their largest
// |direct|; infinite where either holds a NaN or infinity (std::max would drop a NaN).
double disagreement(DType dt, const void* c1, const void* c2, int64_t count) {
  std::vector<uint16_t> h1(static_cast<size_t>(count) * 2), h2(h1.size());
  size_t bytes = static_cast<size_t>(count) * dtype_size(dt);
  STRATA_CUDA_CHECK(cudaMemcpy(h1.data(), c1, bytes, cudaMemcpyDeviceToHost));
  STRATA_CUDA_CHECK(cudaMemcpy(h2.data(), c2, bytes, cudaMemcpyDeviceToHost));
  auto value = [&](const std::vector<uint16_t>& h, int64_t i) -> double {
    if (dt == DType::f32) return reinterpret_cast<const float*>(h.data())[i];
    return dt == DType::f16 ? f16_bits_to_float(h[i]) : bf16_bits_to_float(h[i]);
  };
  double err = 0, scale = 1e-30;
  for (int64_t i = 0; i < count; ++i) {
    if (!std::isfinite(value(h1, i)) || !std::isfinite(value(h2, i))) return INFINITY;
    err = std::max(err, std::fabs(value(h1, i) - value(h2, i)));
    scale = std::max(scale, std::fabs(value(h2, i)));
  }
  return err / scale;
}

// How far strata's GEMM may be from the direct cuBLASLt call, relative to the
// output's largest element: both run cuBLASLt on the same inputs, possibly with
// different algorithms (split-k, another accumulation order), so in f32 (no TF32)
// they differ by the accumulation's rounding over k = n terms, ~1e-6 relative;
// in f16/bf16 by the output's rounding, an element's ulp (2^-11, 2^-8) at most
// twice over. A result off by a wrong layout or a missing term is off by O(1).
double disagreement_bound(DType dt) {
  if (dt == DType::f32) return 1e-4;
  return dt == DType::f16 ? 2.0 * std::ldexp(1.0, -11) : 2.0 * std::ldexp(1.0, -8);
}

// Dense FLOP per clock per SM: Tensor Cores for fp16/bf16, CUDA cores for fp32.
double peak_tflops(int cc, int sms, double ghz, DType dt) {
  double per_sm = 0;
  if (cc == 80) per_sm = dt == DType::f32 ? 128 : 2048;
  if (cc == 90) per_sm = dt == DType::f32 ? 256 : 4096;
  return per_sm * sms * ghz / 1e3;
}

}  // namespace

int run_gpu_gemm_bench(const GpuGemmOptions& o) {
  cuda::Context& ctx = cuda::context();
  cudaDeviceProp prop{};
  STRATA_CUDA_CHECK(cudaGetDeviceProperties(&prop, ctx.device));
  int khz = 0, runtime = 0;
  STRATA_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, ctx.device));
  STRATA_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  const double ghz = khz / 1e6;
  std::printf("device: %s, sm_%d, %d SMs, max clock %.2f GHz; CUDA runtime %d, cuBLASLt %zu\n", prop.name,
              ctx.compute_capability, ctx.sm_count, ghz, runtime, cublasLtGetVersion());
  std::printf(
      "timing: cudaEvents per call, median of %d runs after %d warm-up; fp32 without TF32 (allow_tf32 %s)\n",
      o.reps, o.warmup, ctx.allow_tf32 ? "on" : "off");
  struct Row {
    std::string name;
    int64_t n;
    double strata_ms, direct_ms, disagree, peak;
  };
  std::vector<Row> rows;
  for (const std::string& name : o.dtypes) {
    Case c = lookup(name);
    for (int64_t n : o.sizes) {
      const int64_t count = n * n;
      const size_t bytes = static_cast<size_t>(count) * dtype_size(c.dt);
      void *a = nullptr, *b = nullptr, *c1 = nullptr, *c2 = nullptr;
      STRATA_CUDA_CHECK(cudaMalloc(&a, bytes));
      STRATA_CUDA_CHECK(cudaMalloc(&b, bytes));
      STRATA_CUDA_CHECK(cudaMalloc(&c1, bytes));
      STRATA_CUDA_CHECK(cudaMalloc(&c2, bytes));
      STRATA_CUDA_CHECK(cudaMemcpy(a, random_matrix(c.dt, count, 1).data(), bytes, cudaMemcpyHostToDevice));
      STRATA_CUDA_CHECK(cudaMemcpy(b, random_matrix(c.dt, count, 2).data(), bytes, cudaMemcpyHostToDevice));
      TensorView in[2] = {{a, c.dt, {n, n}, Device::cuda}, {b, c.dt, {n, n}, Device::cuda}};
      TensorView out[1] = {{c1, c.dt, {n, n}, Device::cuda}};
      Row r{name, n, 0, 0, 0, peak_tflops(ctx.compute_capability, ctx.sm_count, ghz, c.dt)};
      r.strata_ms = median_ms(o, ctx.stream, [&] { kernel_forward(Op::matmul, {}, in, out); });
      {
        DirectLt lt(c.cuda, n);
        r.direct_ms = median_ms(o, ctx.stream, [&] { lt.run(a, b, c2, ctx.stream); });
      }
      // both paths have finished: median_ms waited for their last events
      r.disagree = disagreement(c.dt, c1, c2, std::min<int64_t>(count, 1 << 16));
      for (void* p : {a, b, c1, c2}) cudaFree(p);
      rows.push_back(r);
      std::printf("  measured %s %lld^3\n", name.c_str(), static_cast<long long>(n));
      std::fflush(stdout);
    }
  }
  std::string torch_why;
  std::map<std::pair<std::string, int64_t>, double> torch;
  if (o.torch)
    torch = torch_matmul_ms(o, torch_why);
  else
    torch_why = "not run (--no-torch)";
  if (!torch_why.empty()) std::printf("torch: %s\n", torch_why.c_str());

  auto tflops = [](int64_t n, double ms) { return 2.0 * n * n * n / (ms * 1e-3) / 1e12; };
  std::printf("\n%-5s %6s  %9s %9s %9s  %7s %9s  %7s  %9s\n", "dtype", "n", "strata", "cublasLt", "torch",
              "str/lt", "str/torch", "%peak", "|str-lt|");
  std::printf("%-5s %6s  %9s %9s %9s  %7s %9s  %7s  %9s\n", "", "", "TFLOP/s", "TFLOP/s", "TFLOP/s", "", "",
              "strata", "rel");
  for (const Row& r : rows) {
    double s = tflops(r.n, r.strata_ms), d = tflops(r.n, r.direct_ms);
    auto it = torch.find({r.name, r.n});
    double t = it == torch.end() ? NAN : tflops(r.n, it->second);
    std::printf("%-5s %6lld  %9.1f %9.1f %9.1f  %7.3f %9.3f  %6.1f%%  %9.2e\n", r.name.c_str(),
                static_cast<long long>(r.n), s, d, t, s / d, s / t, r.peak > 0 ? 100 * s / r.peak : NAN,
                r.disagree);
  }
  int bad = 0;
  for (const Row& r : rows) {
    if (r.disagree <= disagreement_bound(lookup(r.name).dt)) continue;
    std::printf("FAIL: %s %lld^3: strata and the direct cuBLASLt call differ by %.2e (bound %.2e)\n",
                r.name.c_str(), static_cast<long long>(r.n), r.disagree,
                disagreement_bound(lookup(r.name).dt));
    ++bad;
  }
  if (bad == 0) std::printf("PASS: strata's GEMM agrees with the direct cuBLASLt call in every case\n");
  return bad == 0 ? 0 : 1;
}

}  // namespace strata::bench
#endif  // STRATA_HAVE_CUDA
