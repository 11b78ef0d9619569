// Reference embedding: a row gather, and a scatter-add for the table gradient.
#include <string>

#include "base/error.h"
#include "kernels/backends.h"
#include "kernels/reference/common.h"

namespace strata::reference {
namespace {

int64_t checked_id(const TensorView& ids, int64_t i, int64_t V) {
  int64_t id = ids.as<int64_t>()[i];
  if (id < 0 || id >= V)
    throw Error("embedding: id " + std::to_string(id) + " at position " + std::to_string(i) +
                " is out of range for a table of " + std::to_string(V) + " rows");
  return id;
}

}  // namespace

void embedding_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  int64_t V = in[1].shape[0], Dn = in[1].shape[1];
  for (int64_t i = 0; i < in[0].numel(); ++i) {
    int64_t id = checked_id(in[0], i, V);
    for (int64_t j = 0; j < Dn; ++j) D(out[0])[i * Dn + j] = D(in[1])[id * Dn + j];
  }
}

void embedding_backward(const OpAttrs&, const TensorView* in, const TensorView*, const TensorView& g,
                        TensorView* gin) {
  if (!gin[1].defined()) return;
  int64_t V = in[1].shape[0], Dn = in[1].shape[1];
  for (int64_t k = 0; k < V * Dn; ++k) D(gin[1])[k] = 0;
  for (int64_t i = 0; i < in[0].numel(); ++i) {
    int64_t id = checked_id(in[0], i, V);
    for (int64_t j = 0; j < Dn; ++j) D(gin[1])[id * Dn + j] += D(g)[i * Dn + j];
  }
}

}  // namespace strata::reference
