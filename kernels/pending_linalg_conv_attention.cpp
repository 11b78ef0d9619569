// TEMPORARY: ops whose kernels are being written. Each throws a named error;
// the registry test fails for them until their family files replace these.
// Delete an op's three lines when its real kernels land; delete the file when empty.
#include "core/error.h"
#include "kernels/backends.h"

namespace strata {

void reference::conv2d_forward(const OpAttrs&, const TensorView*, TensorView*) { throw Error("conv2d: not implemented yet"); }
void reference::conv2d_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView&, TensorView*) { throw Error("conv2d: not implemented yet"); }
void cpu::conv2d_forward(const OpAttrs&, const TensorView*, TensorView*) { throw Error("conv2d: not implemented yet"); }
void cpu::conv2d_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView&, TensorView*) { throw Error("conv2d: not implemented yet"); }
std::vector<OutputSpec> shape::conv2d_infer(const std::vector<OutputSpec>&, const OpAttrs&) { throw Error("conv2d: not implemented yet"); }
void reference::max_pool2d_forward(const OpAttrs&, const TensorView*, TensorView*) { throw Error("max_pool2d: not implemented yet"); }
void reference::max_pool2d_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView&, TensorView*) { throw Error("max_pool2d: not implemented yet"); }
void cpu::max_pool2d_forward(const OpAttrs&, const TensorView*, TensorView*) { throw Error("max_pool2d: not implemented yet"); }
void cpu::max_pool2d_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView&, TensorView*) { throw Error("max_pool2d: not implemented yet"); }
std::vector<OutputSpec> shape::max_pool2d_infer(const std::vector<OutputSpec>&, const OpAttrs&) { throw Error("max_pool2d: not implemented yet"); }
void reference::avg_pool2d_forward(const OpAttrs&, const TensorView*, TensorView*) { throw Error("avg_pool2d: not implemented yet"); }
void reference::avg_pool2d_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView&, TensorView*) { throw Error("avg_pool2d: not implemented yet"); }
void cpu::avg_pool2d_forward(const OpAttrs&, const TensorView*, TensorView*) { throw Error("avg_pool2d: not implemented yet"); }
void cpu::avg_pool2d_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView&, TensorView*) { throw Error("avg_pool2d: not implemented yet"); }
std::vector<OutputSpec> shape::avg_pool2d_infer(const std::vector<OutputSpec>&, const OpAttrs&) { throw Error("avg_pool2d: not implemented yet"); }
void reference::global_avg_pool2d_forward(const OpAttrs&, const TensorView*, TensorView*) { throw Error("global_avg_pool2d: not implemented yet"); }
void reference::global_avg_pool2d_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView&, TensorView*) { throw Error("global_avg_pool2d: not implemented yet"); }
void cpu::global_avg_pool2d_forward(const OpAttrs&, const TensorView*, TensorView*) { throw Error("global_avg_pool2d: not implemented yet"); }
void cpu::global_avg_pool2d_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView&, TensorView*) { throw Error("global_avg_pool2d: not implemented yet"); }
std::vector<OutputSpec> shape::global_avg_pool2d_infer(const std::vector<OutputSpec>&, const OpAttrs&) { throw Error("global_avg_pool2d: not implemented yet"); }
void reference::sdpa_forward(const OpAttrs&, const TensorView*, TensorView*) { throw Error("sdpa: not implemented yet"); }
void reference::sdpa_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView&, TensorView*) { throw Error("sdpa: not implemented yet"); }
void cpu::sdpa_forward(const OpAttrs&, const TensorView*, TensorView*) { throw Error("sdpa: not implemented yet"); }
void cpu::sdpa_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView&, TensorView*) { throw Error("sdpa: not implemented yet"); }
std::vector<OutputSpec> shape::sdpa_infer(const std::vector<OutputSpec>&, const OpAttrs&) { throw Error("sdpa: not implemented yet"); }
}  // namespace strata
