// Sum reductions shared by the CUDA kernels: the sum/mean ops (kernels/cuda/reduce.cu)
// and the gradients of broadcast operands (kernels/cuda/elementwise.cu).
#pragma once
#include "kernels/launch_shape.h"
#include "kernels/runtime/dtype.h"

namespace strata::cuda {

// y[o] = scale * sum over r of x[plan.kept.offset(o) + plan.reduced.offset(r)]
// for o < plan.n_out; x and y are f32, f16 or bf16 device buffers (y contiguous,
// plan.n_out elements). FP64 accumulation, fixed combination order: the same
// inputs give the same bits. Queued on the context stream; `what` names the
// caller in errors.
void reduce_sum(const void* x, DType xt, void* y, DType yt, const launch::ReducePlan& plan, double scale,
                const char* what);

}  // namespace strata::cuda
