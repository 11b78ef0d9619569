// The CUDA copy engine in a build without CUDA: an error that says why.
#include "base/error.h"
#include "kernels/cuda/runtime.h"
#include "kernels/runtime/copy_engine.h"

namespace strata {

std::unique_ptr<CopyEngine> make_cuda_copy_engine() {
  throw Error("the CUDA copy engine needs a CUDA device: " + cuda::device_status().reason);
}

}  // namespace strata
