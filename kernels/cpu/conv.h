// The CPU backend's two conv2d implementations behind the op table's
// conv2d_forward / conv2d_backward (kernels/cpu/conv.cpp): oneDNN's (when built
// with STRATA_DNNL, kernels/cpu/conv_dnnl.cpp) and strata's own im2col + GEMM,
// which takes every call oneDNN declines. Both follow the op table's conventions
// (f32 NCHW, backward assigns each requested gradient).
#pragma once
#include <cstdint>

#include "kernels/op_table.h"

namespace strata::cpu {

void conv2d_im2col_forward(const OpAttrs& a, const TensorView* in, TensorView* out);
void conv2d_im2col_backward(const OpAttrs& a, const TensorView* in, const TensorView* out,
                            const TensorView& gout, TensorView* gin);

// True when strata was built with oneDNN (STRATA_DNNL).
bool dnnl_conv_available();

// Each returns false, having written nothing, when oneDNN does not take the call
// (not built, fewer images than threads, fewer than 8 input channels, or no
// oneDNN implementation for the shape); the caller then runs the im2col kernels.
bool conv2d_dnnl_forward(const OpAttrs& a, const TensorView* in, TensorView* out);
bool conv2d_dnnl_backward(const OpAttrs& a, const TensorView* in, const TensorView* out,
                          const TensorView& gout, TensorView* gin);

// Counters for tests and benchmarks: calls oneDNN ran, calls it declined, and
// primitive sets built (one per distinct per-thread shape).
struct DnnlConvStats {
  int64_t calls = 0, declined = 0, plans = 0;
};
DnnlConvStats dnnl_conv_stats();

}  // namespace strata::cpu
