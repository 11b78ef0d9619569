// Backend choice by device: the views of one op call must agree on where they
// live (kernels/runtime/view_device.h), and the backend registered for that device in
// the op table's stubs runs the kernel. No fallback: a CUDA view in a build
// without CUDA is an error, never a silent host copy.
#include "kernels/backends.h"
#include "kernels/runtime/view_device.h"

namespace strata {
namespace {

const OpTableStubs& stubs() {
  return registered_stubs<OpTableStubs, &cpu::register_op_table, &cuda::register_op_table>();
}

size_t count(int n) { return static_cast<size_t>(n); }

}  // namespace

void kernel_forward(Op op, const OpAttrs& a, const TensorView* in, TensorView* out) {
  const OpInfo& info = op_info(op);
  Device d =
      common_device(info.name, {{"input", in, count(info.inputs)}, {"output", out, count(info.outputs)}});
  stubs().forward(d, op, a, in, out);
}

void kernel_backward(Op op, const OpAttrs& a, const TensorView* in, const TensorView* out,
                     const TensorView& grad_out, TensorView* grad_in) {
  const OpInfo& info = op_info(op);
  Device d = common_device(info.name, {{"input", in, count(info.inputs)},
                                       {"output", out, count(info.outputs)},
                                       {"grad_output", grad_out},
                                       {"grad of input", grad_in, count(info.inputs)}});
  stubs().backward(d, op, a, in, out, grad_out, grad_in);
}

}  // namespace strata
