// A build without CUDA has no CUDA kernels: asking for them is an error that
// says why, never a silent fallback to the CPU. The op table's cuda column
// (kernels/backends.h) holds functions that throw that error.
#include "base/error.h"
#include "kernels/backends.h"

namespace strata {
namespace {

[[noreturn]] void no_cuda() {
  throw Error(
      "a tensor is on cuda, but strata was built without CUDA (STRATA_CUDA=OFF or no nvcc at configure "
      "time)");
}

}  // namespace

const Backend& cuda_backend() { no_cuda(); }

bool cuda_backend_built() { return false; }

namespace cuda {
namespace {
void forward(Op, const OpAttrs&, const TensorView*, TensorView*) { no_cuda(); }
void backward(Op, const OpAttrs&, const TensorView*, const TensorView*, const TensorView&, TensorView*) {
  no_cuda();
}
}  // namespace

void register_op_table(OpTableStubs& s) {
  s.forward.set(Device::cuda, &forward);
  s.backward.set(Device::cuda, &backward);
}
}  // namespace cuda

}  // namespace strata
