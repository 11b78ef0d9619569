// CUDA kernels not written yet: each line defines cuda::<op>_forward/_backward
// to throw a named error, so the table links while the backend is being filled
// in. A family's author deletes its lines when the real kernels land; when this
// file is empty of ops it is deleted, and from then on a missing kernel fails the link.
#include <string>

#include "base/error.h"
#include "kernels/backends.h"

#define STRATA_CUDA_PENDING(name)                                                              \
  void name##_forward(const OpAttrs&, const TensorView*, TensorView*) {                        \
    throw Error("CUDA kernel " #name "_forward is not implemented yet");                        \
  }                                                                                            \
  void name##_backward(const OpAttrs&, const TensorView*, const TensorView*, const TensorView&, \
                       TensorView*) {                                                          \
    throw Error("CUDA kernel " #name "_backward is not implemented yet");                       \
  }

namespace strata::cuda {

STRATA_CUDA_PENDING(sdpa)

}  // namespace strata::cuda
