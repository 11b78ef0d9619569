// The backends of the op table and the one entry point the rest of strata uses.
#pragma once
#include "kernels/op_table.h"

namespace strata {

namespace reference {
STRATA_OP_LIST(STRATA_DECLARE_KERNELS)
}
namespace cpu {
STRATA_OP_LIST(STRATA_DECLARE_KERNELS)
}

// Naive double-precision loops: the yardstick for every fast kernel.
const Backend& reference_backend();
// Fast multithreaded f32 kernels.
const Backend& cpu_backend();

// CPU dispatch: runs the cpu kernel; f16/bf16 floating buffers are converted to
// f32 at the boundary and the results converted back (FP32 arithmetic).
void cpu_forward(Op op, const OpAttrs& a, const TensorView* in, TensorView* out);
void cpu_backward(Op op, const OpAttrs& a, const TensorView* in, const TensorView* out,
                  const TensorView& grad_out, TensorView* grad_in);

}  // namespace strata
