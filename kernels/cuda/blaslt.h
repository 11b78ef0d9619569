// The cuBLASLt wrapper: runs a GemmPlan (kernels/gemm_plan.h) on the context
// stream. f32/f16/bf16 storage for A, B, C and the bias, FP32 compute and scale
// (TF32 for f32 only when context().allow_tf32), the context's 32 MiB
// workspace, and the algorithm from cublasLtMatmulAlgoGetHeuristic cached per
// (device, dtype, compute type, transposes, m/n/k, leading dimensions, batch and
// strides, epilogue, operand alignments). Epilogues run inside the GEMM where
// cuBLASLt can; otherwise (a bias pointer off 16 bytes, or no algorithm for the
// epilogue) the plain GEMM runs and kernels/cuda/gemm_epilogue.cu applies it.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/gemm_plan.h"
#include "kernels/runtime/dtype.h"

namespace strata::cuda::blaslt {

// Device buffers of one plan, named as the plan names them (X, Y, C).
struct Operands {
  const void* x = nullptr;
  const void* y = nullptr;
  void* c = nullptr;
  const void* bias = nullptr;  // epilogues bias and gelu_bias: [plan m]
  void* bias_grad = nullptr;   // epilogue bias_grad: [plan n]
};

// Runs every call of `p` (all operands of storage dtype `dt`); `op` names the
// caller in errors. Asynchronous on context().stream.
void run(const gemm::GemmPlan& p, DType dt, const Operands& o, const char* op);

// Bookkeeping for tests and the bench.
struct CacheStats {
  size_t entries = 0;             // distinct problems seen
  size_t epilogue_fallbacks = 0;  // calls whose epilogue ran as a separate kernel
};
CacheStats cache_stats();

}  // namespace strata::cuda::blaslt
