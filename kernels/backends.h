// The backends of the op table and the one entry point the rest of strata uses.
#pragma once
#include "kernels/op_table.h"
#include "kernels/runtime/dispatch_stub.h"

namespace strata {

namespace reference {
STRATA_OP_LIST(STRATA_DECLARE_KERNELS)
}
namespace cpu {
STRATA_OP_LIST(STRATA_DECLARE_KERNELS)
}
// Defined in kernels/cuda/*.cu; the table in kernels/cuda/backend_table.cpp takes
// the address of every one, so a missing CUDA kernel fails the link of a CUDA build.
namespace cuda {
STRATA_OP_LIST(STRATA_DECLARE_KERNELS)
}

// Naive double-precision loops: the yardstick for every fast kernel.
const Backend& reference_backend();
// Fast multithreaded f32 kernels.
const Backend& cpu_backend();

// CUDA kernels reading f16/bf16 storage directly with FP32 accumulation. In a
// build without CUDA (kernels/cuda_stub) this throws strata::Error saying so.
const Backend& cuda_backend();
// Whether this build has the CUDA backend (not whether a device is present).
bool cuda_backend_built();

// The one entry point core uses: picks the backend from the views' device.
// Every defined view must be on the same device (common_device in
// kernels/runtime/view_device.h), else strata::Error naming the op and the offending
// input or output.
void kernel_forward(Op op, const OpAttrs& a, const TensorView* in, TensorView* out);
void kernel_backward(Op op, const OpAttrs& a, const TensorView* in, const TensorView* out,
                     const TensorView& grad_out, TensorView* grad_in);

// CPU dispatch: runs the cpu kernel; f16/bf16 floating buffers are converted to
// f32 at the boundary and the results converted back (FP32 arithmetic).
void cpu_forward(Op op, const OpAttrs& a, const TensorView* in, TensorView* out);
void cpu_backward(Op op, const OpAttrs& a, const TensorView* in, const TensorView* out,
                  const TensorView& grad_out, TensorView* grad_in);

// The op table's dispatch (kernels/runtime/dispatch_stub.h): one stub for forward and
// one for backward, taking the op. Registered by kernels/cpu/dispatch.cpp
// (cpu_forward, cpu_backward) and kernels/cuda/backend_table.cpp (cuda_backend()'s
// kernels), or kernels/cuda_stub/backend_stub.cpp without CUDA.
using OpForward = void(Op op, const OpAttrs& a, const TensorView* in, TensorView* out);
using OpBackward = void(Op op, const OpAttrs& a, const TensorView* in, const TensorView* out,
                        const TensorView& grad_out, TensorView* grad_in);
struct OpTableStubs {
  DispatchStub<OpForward> forward{"kernel_forward"};
  DispatchStub<OpBackward> backward{"kernel_backward"};
};
namespace cpu {
void register_op_table(OpTableStubs& s);
}
namespace cuda {
void register_op_table(OpTableStubs& s);
}

}  // namespace strata
