// matmul and linear on CUDA: every product is a cuBLASLt GEMM on Tensor Cores
// (f16/bf16 storage read and written directly, FP32 accumulation; f32 in FP32
// unless allow_tf32), planned by kernels/gemm_plan.h and run by
// kernels/cuda/blaslt.h. Fusion: linear's bias rides the forward GEMM's epilogue
// (CUBLASLT_EPILOGUE_BIAS), and its bias gradient the weight-gradient GEMM's
// (BGRADB: db is summed while dy is read for dw), so neither costs a pass over
// y or dy. Memory traffic is the GEMMs' own: each operand read once per product,
// each output written once. A matmul with a shared b folds its batch into M (one
// GEMM); other batches run as strided-batched calls; the gradient of a broadcast
// operand accumulates with beta = 1 over calls on the one stream.
//
// kernels: none of its own (cuBLASLt; epilogue fallbacks in gemm_epilogue.cu).
#include <algorithm>
#include <string>

#include "base/error.h"
#include "kernels/backends.h"
#include "kernels/cuda/blaslt.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/gemm_epilogue.h"
#include "kernels/gemm_plan.h"

namespace strata::cuda {
namespace {

std::string describe(const TensorView& v) { return shape_str(v.shape) + " " + dtype_name(v.dtype); }

// All defined views share the first one's dtype (shape inference promises it;
// a direct caller may not have been through it).
DType common_dtype(const char* op, std::initializer_list<const TensorView*> views) {
  const TensorView* first = *views.begin();
  for (const TensorView* v : views)
    if (v->defined() && v->dtype != first->dtype)
      throw Error(std::string(op) + ": operands must share one dtype, got " + describe(*first) + " and " +
                  describe(*v));
  return first->dtype;
}

// A gradient no product writes (its batch is empty) is zero.
void zero(const TensorView& v) {
  if (v.bytes() > 0) STRATA_CUDA_CHECK(cudaMemsetAsync(v.data, 0, v.bytes(), context().stream));
}

void run_or_zero(const gemm::GemmPlan& p, DType dt, const blaslt::Operands& o, const TensorView& out,
                 const char* op) {
  if (p.calls.empty())
    zero(out);
  else
    blaslt::run(p, dt, o, op);
}

}  // namespace

// ---- launchers ----------------------------------------------------------------

// c[..., M, N] = a[..., M, K] @ b[..., K, N]
void matmul_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  DType dt = common_dtype("matmul", {&in[0], &in[1], &out[0]});
  auto p = gemm::matmul_forward_plan(in[0].shape, in[1].shape);
  run_or_zero(p, dt, {.x = in[0].data, .y = in[1].data, .c = out[0].data}, out[0], "matmul_forward");
}

// da = dc b^T, db = a^T dc (each summed over the batches its operand is broadcast in)
void matmul_backward(const OpAttrs&, const TensorView* in, const TensorView*, const TensorView& gout,
                     TensorView* gin) {
  DType dt = common_dtype("matmul", {&in[0], &in[1], &gout, &gin[0], &gin[1]});
  if (gin[0].defined())
    run_or_zero(gemm::matmul_grad_a_plan(in[0].shape, in[1].shape), dt,
                {.x = gout.data, .y = in[1].data, .c = gin[0].data}, gin[0], "matmul_backward (da)");
  if (gin[1].defined())
    run_or_zero(gemm::matmul_grad_b_plan(in[0].shape, in[1].shape), dt,
                {.x = in[0].data, .y = gout.data, .c = gin[1].data}, gin[1], "matmul_backward (db)");
}

namespace {
struct LinearDims {
  int64_t rows, k, n;
};
// x[..., K] is rows x K; with K = 0 the rows come from y[..., N].
LinearDims linear_dims(const TensorView& x, const TensorView& w, const TensorView& y) {
  int64_t k = x.size(-1), n = w.size(0);
  int64_t rows = k > 0 ? x.numel() / k : y.numel() / std::max<int64_t>(1, n);
  return {rows, k, n};
}
}  // namespace

// y[rows, N] = x[rows, K] w[N, K]^T + b[N]
void linear_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  DType dt = common_dtype("linear", {&in[0], &in[1], &in[2], &out[0]});
  auto d = linear_dims(in[0], in[1], out[0]);
  bool bias = in[2].defined();
  auto p = gemm::linear_forward_plan(d.rows, d.k, d.n, bias ? gemm::Epilogue::bias : gemm::Epilogue::none);
  blaslt::run(p, dt, {.x = in[0].data, .y = in[1].data, .c = out[0].data, .bias = in[2].data},
              "linear_forward");
}

// dx = dy w; dw = dy^T x with db = column sums of dy fused in (BGRADB)
void linear_backward(const OpAttrs&, const TensorView* in, const TensorView*, const TensorView& gout,
                     TensorView* gin) {
  DType dt = common_dtype("linear", {&in[0], &in[1], &gout, &gin[0], &gin[1], &gin[2]});
  auto d = linear_dims(in[0], in[1], gout);
  if (gin[0].defined())
    blaslt::run(gemm::linear_grad_input_plan(d.rows, d.k, d.n), dt,
                {.x = gout.data, .y = in[1].data, .c = gin[0].data}, "linear_backward (dx)");
  if (gin[1].defined()) {
    bool db = gin[2].defined();
    blaslt::run(gemm::linear_grad_weight_plan(d.rows, d.k, d.n, db), dt,
                {.x = gout.data, .y = in[0].data, .c = gin[1].data, .bias_grad = db ? gin[2].data : nullptr},
                "linear_backward (dw)");
  } else if (gin[2].defined()) {  // db alone: the column sums without the GEMM
    gemm_epilogue::bias_grad(gemm::linear_grad_weight_plan(d.rows, d.k, d.n, true), gout.data, gin[2].data,
                             dt);
  }
}

}  // namespace strata::cuda
