// A build without CUDA has no CUDA kernels: asking for them is an error that
// says why, never a silent fallback to the CPU.
#include "base/error.h"
#include "kernels/backends.h"

namespace strata {

const Backend& cuda_backend() {
  throw Error(
      "a tensor is on cuda, but strata was built without CUDA (STRATA_CUDA=OFF or no nvcc at configure "
      "time)");
}

bool cuda_backend_built() { return false; }

}  // namespace strata
