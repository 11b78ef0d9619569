// GEMM epilogues as separate kernels, for what cuBLASLt cannot fuse (a bias
// pointer off 16 bytes, no algorithm for the epilogue, k = 0). Each works on the
// plan's column-major D of one call; launches on context().stream.
#pragma once
#include "kernels/gemm_plan.h"
#include "kernels/runtime/dtype.h"

namespace strata::cuda::gemm_epilogue {

// Every matrix of `call`: D = beta D, with beta = 0 writing zeros (D may hold NaN).
void scale(const gemm::GemmPlan& p, const gemm::GemmCall& call, void* c, DType dt);
// Every matrix of `call`: D[i,j] = act(D[i,j] + bias[i]), act = GELU when the plan's
// epilogue has it; bias may be null (GELU alone).
void bias_act(const gemm::GemmPlan& p, const gemm::GemmCall& call, void* c, const void* bias, DType dt);
// bias[j] = sum over q < k of op(B)[q, j] (BGRADB), B = x of the plan's single call.
void bias_grad(const gemm::GemmPlan& p, const void* x, void* bias, DType dt);

}  // namespace strata::cuda::gemm_epilogue
