// GEMM on Eigen 3.4 maps: no copies of the operands, row-major maps with outer
// strides, transposes expressed as Eigen expressions so that Eigen's packed,
// cache-blocked kernel (AVX-512 FMA under -march=native) reads each panel once
// per block. Eigen splits large products over OpenMP threads itself (thread count
// set by strata::set_num_threads via Eigen::setNbThreads) and stays serial inside
// an enclosing parallel region. Measured against OpenBLAS in docs/kernels.md.
#include "kernels/cpu/gemm.h"

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
    if (alpha == 1.0f) c.noalias() = a * b;
    else c.noalias() = alpha * (a * b);
  } else {
    if (beta != 1.0f) c *= beta;
    if (alpha == 1.0f) c.noalias() += a * b;
    else c.noalias() += alpha * (a * b);
  }
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  MutMap cm(c, m, n, Eigen::OuterStride<>(ldc));
  if (k <= 0) {
    if (beta == 0.0f) cm.setZero();
    else cm *= beta;
    return;
  }
  num_threads();  // makes sure Eigen has seen the process-wide thread count
  ConstMap am(a, trans_a ? k : m, trans_a ? m : k, Eigen::OuterStride<>(lda));
  ConstMap bm(b, trans_b ? n : k, trans_b ? k : n, Eigen::OuterStride<>(ldb));
  if (!trans_a && !trans_b) assign(cm, am, bm, alpha, beta);
  else if (!trans_a && trans_b) assign(cm, am, bm.transpose(), alpha, beta);
  else if (trans_a && !trans_b) assign(cm, am.transpose(), bm, alpha, beta);
  else assign(cm, am.transpose(), bm.transpose(), alpha, beta);
}

}  // namespace strata::cpu
