// TEMPORARY: ops whose kernels are being written. Each throws a named error;
// the registry test fails for them until their family files replace these.
// Delete an op's three lines when its real kernels land; delete the file when empty.
#include "core/error.h"
#include "kernels/backends.h"

namespace strata {

void reference::sdpa_forward(const OpAttrs&, const TensorView*, TensorView*) { throw Error("sdpa: not implemented yet"); }
void reference::sdpa_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView&, TensorView*) { throw Error("sdpa: not implemented yet"); }
void cpu::sdpa_forward(const OpAttrs&, const TensorView*, TensorView*) { throw Error("sdpa: not implemented yet"); }
void cpu::sdpa_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView&, TensorView*) { throw Error("sdpa: not implemented yet"); }
std::vector<OutputSpec> shape::sdpa_infer(const std::vector<OutputSpec>&, const OpAttrs&) { throw Error("sdpa: not implemented yet"); }
}  // namespace strata
