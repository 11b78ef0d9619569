// GEMM plans: strata's row-major GEMM problems mapped to the column-major
// description cuBLASLt takes. Pure host code, so the mapping is tested on any
// machine (tests/kernels/test_gemm_plan.cpp runs plans through a naive
// column-major GEMM) and kernels/cuda/blaslt.cu only translates a plan into
// cuBLASLt descriptors.
//
// The mapping: a row-major matrix with row stride ld is, read column-major, its
// transpose with the same ld. So C[M,N] = op(X)[M,K] op(Y)[K,N] in row-major is
// C^T[N,M] = op(Y)^T op(X)^T in column-major: cuBLAS's A is strata's Y, its B is
// strata's X, m = N, n = M, and each operand keeps its own transpose flag.
//
// Epilogues use cuBLASLt's definitions on the column-major D[m,n]: `bias` adds
// bias[i] to row i of D (= column i of the row-major C: one bias per output
// feature), `gelu` applies the tanh-form GELU after the bias, and `bias_grad`
// (cuBLASLt BGRADB) writes bias[j] = sum_p op(B)[p,j] over k, i.e. the sums over
// the GEMM's k of strata's X rows: db = sum over rows of dy when X = dy^T.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/runtime/tensor_view.h"
#include "kernels/scalar_math.h"  // STRATA_HD

namespace strata::gemm {

enum class Epilogue : uint8_t { none, bias, gelu, gelu_bias, bias_grad };

const char* epilogue_name(Epilogue e);
inline bool epilogue_has_bias(Epilogue e) { return e == Epilogue::bias || e == Epilogue::gelu_bias; }
inline bool epilogue_has_gelu(Epilogue e) { return e == Epilogue::gelu || e == Epilogue::gelu_bias; }

// Element (i, j) of a column-major matrix with leading dimension ld, and of
// op(M) for a stored M (the transpose when `trans`). The host test's GEMM and
// the CUDA epilogue kernels index through these, so the test proves both.
STRATA_HD inline int64_t col_major(int64_t i, int64_t j, int64_t ld) { return i + j * ld; }
STRATA_HD inline int64_t op_element(bool trans, int64_t i, int64_t j, int64_t ld) {
  return trans ? col_major(j, i, ld) : col_major(i, j, ld);
}

// A row-major problem: C[M,N] = op(X)[M,K] op(Y)[K,N]; X is stored [K,M] when
// trans_x, Y is stored [N,K] when trans_y. ld* are row strides in elements; 0
// means packed.
struct RowMajorGemm {
  bool trans_x = false, trans_y = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t ldx = 0, ldy = 0, ldc = 0;
  Epilogue epilogue = Epilogue::none;
};

// One cuBLASLt call of a plan: a strided batch of `batch` GEMMs whose first
// matrices start at these element offsets into the X, Y and C buffers. Strides
// may be 0 for X or Y (an operand shared by the batch), never for C. beta = 1
// accumulates into C: the gradient of a broadcast operand is the sum of several
// products, which run one after another on the stream (race-free).
struct GemmCall {
  int64_t off_x = 0, off_y = 0, off_c = 0;
  int64_t batch = 1;
  int64_t stride_x = 0, stride_y = 0, stride_c = 0;
  float beta = 0.0f;
};

// The column-major problem cuBLASLt receives: D[m,n] = op(A)[m,k] op(B)[k,n]
// with A = strata's Y and B = strata's X (see the file comment), one GemmCall per
// cublasLtMatmul.
struct GemmPlan {
  bool transa = false, transb = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 1, ldb = 1, ldc = 1;
  Epilogue epilogue = Epilogue::none;
  std::vector<GemmCall> calls;

  // Stored (column-major) rows of A and B: what lda/ldb must cover.
  int64_t rows_a() const { return transa ? k : m; }
  int64_t rows_b() const { return transb ? n : k; }
  bool empty() const { return m == 0 || n == 0 || calls.empty(); }
  std::string str() const;  // for error messages
};

// The column-major plan of one row-major GEMM (a single call, batch 1).
GemmPlan to_column_major(const RowMajorGemm& g);

// Throws strata::Error naming `op` and the plan when a leading dimension is
// smaller than its matrix or a batch stride is negative or zero for C.
void check_plan(const GemmPlan& p, const char* op);

// linear: x[rows, K], w[N, K], b[N], y[rows, N].
// y = x w^T (+ epilogue: bias, gelu, gelu_bias). X = x, Y = w, C = y.
GemmPlan linear_forward_plan(int64_t rows, int64_t k, int64_t n, Epilogue e);
// dx[rows, K] = dy[rows, N] w[N, K]. X = dy, Y = w, C = dx.
GemmPlan linear_grad_input_plan(int64_t rows, int64_t k, int64_t n);
// dw[N, K] = dy^T x, and with bias_grad db[N] = sum over rows of dy (BGRADB on
// X = dy^T). X = dy, Y = x, C = dw.
GemmPlan linear_grad_weight_plan(int64_t rows, int64_t k, int64_t n, bool bias_grad);

// matmul: a[..., M, K] @ b[..., K, N] -> c[..., M, N], batch dimensions
// broadcast. A b shared by the whole batch (rank 2, or batch dimensions all 1)
// with a not broadcast folds the batch into M: one GEMM. Otherwise the output's
// batch is cut into runs where every operand's offset moves by a constant
// stride: one strided-batched call per run (usually one in all).
// c = a b: X = a, Y = b, C = c.
GemmPlan matmul_forward_plan(const Shape& a, const Shape& b);
// da = dc b^T (summed over the batches a is broadcast in): X = dc, Y = b, C = da.
GemmPlan matmul_grad_a_plan(const Shape& a, const Shape& b);
// db = a^T dc (summed over the batches b is broadcast in): X = a, Y = dc, C = db.
GemmPlan matmul_grad_b_plan(const Shape& a, const Shape& b);

}  // namespace strata::gemm
