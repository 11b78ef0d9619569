// The CUDA backend table, generated from STRATA_OP_LIST like the reference and
// cpu tables: it takes the address of cuda::<op>_forward and cuda::<op>_backward
// for every op, so a CUDA build missing one kernel fails to link. The op
// table's dispatch stubs (kernels/backends.h) reach it through the forward and
// backward registered here.
#include "kernels/backends.h"

namespace strata {

const Backend& cuda_backend() {
  static const Backend b{"cuda",
                         {{
#define STRATA_X(name, nin, nout, mask) {&cuda::name##_forward, &cuda::name##_backward},
                             STRATA_OP_LIST(STRATA_X)
#undef STRATA_X
                         }}};
  return b;
}

bool cuda_backend_built() { return true; }

namespace cuda {
namespace {
void forward(Op op, const OpAttrs& a, const TensorView* in, TensorView* out) {
  cuda_backend().ops[static_cast<size_t>(op)].forward(a, in, out);
}
void backward(Op op, const OpAttrs& a, const TensorView* in, const TensorView* out,
              const TensorView& grad_out, TensorView* grad_in) {
  cuda_backend().ops[static_cast<size_t>(op)].backward(a, in, out, grad_out, grad_in);
}
}  // namespace

void register_op_table(OpTableStubs& s) {
  s.forward.set(Device::cuda, &forward);
  s.backward.set(Device::cuda, &backward);
}
}  // namespace cuda

}  // namespace strata
