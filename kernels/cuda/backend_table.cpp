// The CUDA backend table, generated from STRATA_OP_LIST like the reference and
// cpu tables: it takes the address of cuda::<op>_forward and cuda::<op>_backward
// for every op, so a CUDA build missing one kernel fails to link.
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

}  // namespace strata
