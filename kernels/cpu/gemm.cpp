// GEMM: one entry point for matmul, linear, conv and attention. C is cut into one
// static panel per thread (rows when C is tall, columns when wide; edges on
// multiples of 48 rows or 16 columns) and each thread runs the provider serially
// on its panel; panels meet once, at the end, so a descheduled thread on a busy
// machine stalls nobody mid-product. Products under 2 x 128^3 FLOPs run on one
// thread, and so does a call from inside a parallel region (batched callers).
// The provider is chosen at build time by measurement (STRATA_GEMM, docs/kernels.md):
// OpenBLAS's sgemm kernel (default; 2048^3 at 294 GFLOP/s = 62% of the 2-core
// fp32 peak here, Eigen 266) or Eigen 3.4 on row-major maps (no operand copies;
// transposes as Eigen expressions). With OpenBLAS, a product no larger than
// kDnnlMaxDim in any dimension goes to oneDNN's sgemm when oneDNN is built in: on
// one thread of this machine's AVX2 cores it ran the attention's 64-row blocks
// 1.19-1.46x as fast as OpenBLAS (strata-bench gemm_shapes). It also won on the
// tiny GPT's 256-deep layer products (1.03-1.10x) but lost on deeper ones (k = 1024:
// 0.91-0.94x; 2048: down to 0.72x); with every k <= 256 product on it, the step spent 3% in the
// kernel's clear_page (fresh memory faulted in, most likely oneDNN's packing
// buffers, which it allocates per call), which ate the gain; docs/kernels.md. On a
// CPU where oneDNN runs AVX-512 (a Sapphire Rapids-class Xeon, 2 cores), its sgemm
// beat OpenBLAS 0.3.21's SkylakeX kernels on the tiny GPT's layer products too
// (0.99-1.20x on one thread, strata-bench gemm_shapes), and sending every product with all
// three dimensions >= kDnnlMaxDim there made the tiny GPT's 24 steps 10-14%
// shorter (alternated runs), so there those go to oneDNN as well. The split is by
// shape and the CPU's ISA alone, so on a given machine a product always takes the
// same path (runs stay reproducible).
#include "kernels/cpu/gemm.h"

#include <algorithm>
#include <mutex>

// GCC 12 reports false -Wmaybe-uninitialized inside Eigen's AVX-512 packet code.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>

#include "kernels/runtime/parallel.h"

#if defined(STRATA_GEMM_OPENBLAS)
#include <cblas.h>
#if defined(STRATA_DNNL)
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#endif
#endif

namespace strata::cpu {
namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMat, Eigen::Unaligned, Eigen::OuterStride<>>;
using MutMap = Eigen::Map<RowMat, Eigen::Unaligned, Eigen::OuterStride<>>;

template <typename A, typename B>
void assign(MutMap& c, const A& a, const B& b, float alpha, float beta) {
  if (beta == 0.0f) {
    if (alpha == 1.0f)
      c.noalias() = a * b;
    else
      c.noalias() = alpha * (a * b);
  } else {
    if (beta != 1.0f) c *= beta;
    if (alpha == 1.0f)
      c.noalias() += a * b;
    else
      c.noalias() += alpha * (a * b);
  }
}

#if defined(STRATA_GEMM_OPENBLAS) && defined(STRATA_DNNL)
// Whether oneDNN runs its AVX-512 kernels on this CPU (asked once; the answer
// does not change within a process, so neither does any product's path).
bool dnnl_has_avx512() {
  static const bool has =
      (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core;
  return has;
}

// oneDNN threads through OpenMP: one thread per call, as conv_dnnl.cpp does, so
// the pool's threads stay the only ones (the OpenMP setting is restored after).
bool dnnl_serial_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                      const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                      int64_t ldc) {
  int omp_threads = omp_get_max_threads();
  if (omp_threads != 1) omp_set_num_threads(1);
  dnnl_status_t st =
      dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (omp_threads != 1) omp_set_num_threads(omp_threads);
  return st == dnnl_success;
}
#endif

// One thread's GEMM (Eigen stays serial: it is told one thread, or sees the
// enclosing parallel region).
void serial_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  MutMap cm(c, m, n, Eigen::OuterStride<>(ldc));
  if (k <= 0) {
    if (beta == 0.0f)
      cm.setZero();
    else
      cm *= beta;
    return;
  }
#if defined(STRATA_GEMM_OPENBLAS)
#if defined(STRATA_DNNL)
  if (gemm_uses_dnnl(m, n, k) &&
      dnnl_serial_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
    return;
#endif
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
              static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
  return;
#endif
  ConstMap am(a, trans_a ? k : m, trans_a ? m : k, Eigen::OuterStride<>(lda));
  ConstMap bm(b, trans_b ? n : k, trans_b ? k : n, Eigen::OuterStride<>(ldb));
  if (!trans_a && !trans_b)
    assign(cm, am, bm, alpha, beta);
  else if (!trans_a && trans_b)
    assign(cm, am, bm.transpose(), alpha, beta);
  else if (trans_a && !trans_b)
    assign(cm, am.transpose(), bm, alpha, beta);
  else
    assign(cm, am.transpose(), bm.transpose(), alpha, beta);
}

// Row panels are multiples of 48 for OpenBLAS's kernels; where oneDNN's AVX-512
// path takes the products with every dimension >= kDnnlMaxDim, 16 keeps an even
// split of such a product on that path: 256 rows over two threads are 128 + 128,
// where 48 made them 144 + 112 and sent the 112-row half to OpenBLAS (the tiny
// GPT's 256 x 256 weight gradients).
int64_t row_panel_align() {
#if defined(STRATA_GEMM_OPENBLAS) && defined(STRATA_DNNL)
  if (dnnl_has_avx512()) return 16;
#endif
  return 48;
}

}  // namespace

bool gemm_uses_dnnl(int64_t m, int64_t n, int64_t k) {
#if defined(STRATA_GEMM_OPENBLAS) && defined(STRATA_DNNL)
  if (std::max({m, n, k}) <= kDnnlMaxDim) return true;
  return dnnl_has_avx512() && std::min({m, n, k}) >= kDnnlMaxDim;
#else
  (void)m, (void)n, (void)k;
  return false;
#endif
}

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  int threads = num_threads();
  bool nested = in_parallel();
  // Eigen must not thread on its own: built with OpenMP it defaults to all cores
  // and would open OpenMP regions inside our pool's workers. Set once before any
  // use (a batched caller's first call may come from a worker), and again from
  // top-level calls in case someone (strata-bench's Eigen column) changed it.
  static std::once_flag eigen_serial;
  // the panels are our threads: Eigen and OpenBLAS each run one thread per call
  std::call_once(eigen_serial, [] {
    Eigen::setNbThreads(1);
#if defined(STRATA_GEMM_OPENBLAS)
    openblas_set_num_threads(1);
#endif
  });
  if (!nested && Eigen::nbThreads() != 1) Eigen::setNbThreads(1);
#if defined(STRATA_GEMM_OPENBLAS)
  if (!nested && openblas_get_num_threads() != 1) openblas_set_num_threads(1);
#endif
  double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  // under kGemmParallelFlops (2 x 128^3) waking a second thread costs more than it saves
  if (threads <= 1 || nested || flops < static_cast<double>(kGemmParallelFlops)) {
    serial_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  bool by_rows = m >= n;
  int64_t extent = by_rows ? m : n, align = by_rows ? row_panel_align() : 16;
  int64_t step = (extent + threads - 1) / threads;
  step = std::max(align, (step + align - 1) / align * align);
  int64_t panels = (extent + step - 1) / step;
  parallel_run(panels, [&](int64_t p) {
    int64_t s = p * step, len = std::min(extent, s + step) - s;
    if (by_rows)  // C[s:s+len, :] = op(A)[s:s+len, :] op(B)
      serial_gemm(trans_a, trans_b, len, n, k, alpha, trans_a ? a + s : a + s * lda, lda, b, ldb, beta,
                  c + s * ldc, ldc);
    else  // C[:, s:s+len] = op(A) op(B)[:, s:s+len]
      serial_gemm(trans_a, trans_b, m, len, k, alpha, a, lda, trans_b ? b + s * ldb : b + s, ldb, beta, c + s,
                  ldc);
  });
}

}  // namespace strata::cpu
