// Backend tables generated from STRATA_OP_LIST: a backend missing an op's
// forward or backward fails to link.
#include "kernels/backends.h"

namespace strata {

const Backend& reference_backend() {
  static const Backend b{"reference",
                         {{
#define STRATA_X(name, nin, nout, mask) {&reference::name##_forward, &reference::name##_backward},
                             STRATA_OP_LIST(STRATA_X)
#undef STRATA_X
                         }}};
  return b;
}

const Backend& cpu_backend() {
  static const Backend b{"cpu",
                         {{
#define STRATA_X(name, nin, nout, mask) {&cpu::name##_forward, &cpu::name##_backward},
                             STRATA_OP_LIST(STRATA_X)
#undef STRATA_X
                         }}};
  return b;
}

}  // namespace strata
