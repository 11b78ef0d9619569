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

STRATA_CUDA_PENDING(add)
STRATA_CUDA_PENDING(sub)
STRATA_CUDA_PENDING(mul)
STRATA_CUDA_PENDING(div)
STRATA_CUDA_PENDING(relu)
STRATA_CUDA_PENDING(gelu)
STRATA_CUDA_PENDING(tanh)
STRATA_CUDA_PENDING(sigmoid)
STRATA_CUDA_PENDING(sum)
STRATA_CUDA_PENDING(mean)
STRATA_CUDA_PENDING(matmul)
STRATA_CUDA_PENDING(linear)
STRATA_CUDA_PENDING(softmax)
STRATA_CUDA_PENDING(log_softmax)
STRATA_CUDA_PENDING(cross_entropy)
STRATA_CUDA_PENDING(conv2d)
STRATA_CUDA_PENDING(max_pool2d)
STRATA_CUDA_PENDING(avg_pool2d)
STRATA_CUDA_PENDING(global_avg_pool2d)
STRATA_CUDA_PENDING(batch_norm)
STRATA_CUDA_PENDING(layer_norm)
STRATA_CUDA_PENDING(embedding)
STRATA_CUDA_PENDING(dropout)
STRATA_CUDA_PENDING(reshape)
STRATA_CUDA_PENDING(permute)
STRATA_CUDA_PENDING(concat)
STRATA_CUDA_PENDING(slice)

}  // namespace strata::cuda
