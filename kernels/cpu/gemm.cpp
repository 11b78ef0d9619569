// GEMM on Eigen 3.4 maps: no copies of the operands, row-major maps with outer
// strides, transposes expressed as Eigen expressions so that Eigen's packed,
// cache-blocked kernel (AVX-512 FMA under -march=native) does the work. Threads
// are ours, not Eigen's: C is cut into one static panel per thread (rows when C
// is tall, columns when wide; edges on multiples of 48 rows or 16 columns, Eigen's
// register block), and each thread runs Eigen serially on its panel, packing the
// shared operand itself (an extra O(K x N) read per thread, negligible against
// O(M x N x K / threads) FLOPs). Why not Eigen's own threading: it synchronises
// the threads once per cache block, so on oversubscribed cores (CI, shared dev
// machines) every descheduled thread stalls the others; panels meet once, at the
// end (the shared dev box was too noisy to measure the difference either way;
// the provider measurement is in docs/kernels.md). Products under 128^3 run on one thread (waking a second
// costs more than it saves), and so does a call from inside a parallel region (batched callers).
#include "kernels/cpu/gemm.h"

#include <algorithm>
#include <mutex>

// GCC 12 reports false -Wmaybe-uninitialized inside Eigen's AVX-512 packet code.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>

#include "kernels/parallel.h"

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

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  int threads = num_threads();
  bool nested = in_parallel();
  // Eigen must not thread on its own: built with OpenMP it defaults to all cores
  // and would open OpenMP regions inside our pool's workers. Set once before any
  // use (a batched caller's first call may come from a worker), and again from
  // top-level calls in case someone (strata-bench's Eigen column) changed it.
  static std::once_flag eigen_serial;
  std::call_once(eigen_serial, [] { Eigen::setNbThreads(1); });
  if (!nested && Eigen::nbThreads() != 1) Eigen::setNbThreads(1);
  double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  // under kGemmParallelFlops (2 x 128^3) waking a second thread costs more than it saves
  if (threads <= 1 || nested || flops < static_cast<double>(kGemmParallelFlops)) {
    serial_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  bool by_rows = m >= n;
  int64_t extent = by_rows ? m : n, align = by_rows ? 48 : 16;
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
