// The one single-precision GEMM entry point of the CPU backend: matmul, linear,
// conv2d and attention all go through it, and strata-bench gemm measures it.
#pragma once
#include <cstdint>

namespace strata::cpu {

// C[m,n] = alpha * op(A) op(B) + beta * C, all row-major with leading dimensions
// (elements between rows); op(X) = X^T when trans_x. beta == 0 ignores C's old
// contents (NaN included). Multithreaded over num_threads() when called outside a
// parallel region; single-threaded when called from inside one (batched callers
// parallelise over the batch instead).
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// Size (in every dimension) up to which the OpenBLAS provider hands a product to
// oneDNN's sgemm when oneDNN is built in, and on CPUs where oneDNN runs AVX-512
// also the size from which (in every dimension) it does (gemm.cpp says why).
inline constexpr int64_t kDnnlMaxDim = 128;

// Whether gemm() runs an m x n x k product on oneDNN in this build (the rule
// above, false where OpenBLAS or oneDNN is not built in); strata-bench reports it.
bool gemm_uses_dnnl(int64_t m, int64_t n, int64_t k);

// FLOPs (2 x 128^3) below which gemm stays on one thread, and below which batched
// callers run one matrix per thread rather than each matrix on all threads.
inline constexpr int64_t kGemmParallelFlops = int64_t{1} << 22;

}  // namespace strata::cpu
