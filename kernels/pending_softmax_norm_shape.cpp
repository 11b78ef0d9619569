// TEMPORARY: ops whose kernels are being written. Each throws a named error;
// the registry test fails for them until their family files replace these.
// Delete an op's three lines when its real kernels land; delete the file when empty.
#include "core/error.h"
#include "kernels/backends.h"

namespace strata {

void reference::reshape_forward(const OpAttrs&, const TensorView*, TensorView*) { throw Error("reshape: not implemented yet"); }
void reference::reshape_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView&, TensorView*) { throw Error("reshape: not implemented yet"); }
void cpu::reshape_forward(const OpAttrs&, const TensorView*, TensorView*) { throw Error("reshape: not implemented yet"); }
void cpu::reshape_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView&, TensorView*) { throw Error("reshape: not implemented yet"); }
std::vector<OutputSpec> shape::reshape_infer(const std::vector<OutputSpec>&, const OpAttrs&) { throw Error("reshape: not implemented yet"); }
void reference::permute_forward(const OpAttrs&, const TensorView*, TensorView*) { throw Error("permute: not implemented yet"); }
void reference::permute_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView&, TensorView*) { throw Error("permute: not implemented yet"); }
void cpu::permute_forward(const OpAttrs&, const TensorView*, TensorView*) { throw Error("permute: not implemented yet"); }
void cpu::permute_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView&, TensorView*) { throw Error("permute: not implemented yet"); }
std::vector<OutputSpec> shape::permute_infer(const std::vector<OutputSpec>&, const OpAttrs&) { throw Error("permute: not implemented yet"); }
void reference::concat_forward(const OpAttrs&, const TensorView*, TensorView*) { throw Error("concat: not implemented yet"); }
void reference::concat_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView&, TensorView*) { throw Error("concat: not implemented yet"); }
void cpu::concat_forward(const OpAttrs&, const TensorView*, TensorView*) { throw Error("concat: not implemented yet"); }
void cpu::concat_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView&, TensorView*) { throw Error("concat: not implemented yet"); }
std::vector<OutputSpec> shape::concat_infer(const std::vector<OutputSpec>&, const OpAttrs&) { throw Error("concat: not implemented yet"); }
void reference::slice_forward(const OpAttrs&, const TensorView*, TensorView*) { throw Error("slice: not implemented yet"); }
void reference::slice_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView&, TensorView*) { throw Error("slice: not implemented yet"); }
void cpu::slice_forward(const OpAttrs&, const TensorView*, TensorView*) { throw Error("slice: not implemented yet"); }
void cpu::slice_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView&, TensorView*) { throw Error("slice: not implemented yet"); }
std::vector<OutputSpec> shape::slice_infer(const std::vector<OutputSpec>&, const OpAttrs&) { throw Error("slice: not implemented yet"); }
}  // namespace strata
