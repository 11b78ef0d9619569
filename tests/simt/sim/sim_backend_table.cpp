// The emulated CUDA backend's op table, built like kernels/cuda/backend_table.cpp
// from STRATA_OP_LIST: the address of every cuda::<op>_forward and _backward as
// compiled for the host (cuda is cuda_sim here, tests/simt/cuda_host.h), so an
// op without an emulated entry fails to link.
#include "kernels/backends.h"

namespace strata {

const Backend& cuda_sim_backend() {
  static const Backend b{"cuda-sim",
                         {{
#define STRATA_X(name, nin, nout, mask) {&cuda::name##_forward, &cuda::name##_backward},
                             STRATA_OP_LIST(STRATA_X)
#undef STRATA_X
                         }}};
  return b;
}

}  // namespace strata
