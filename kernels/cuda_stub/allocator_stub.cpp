// Pinned and device memory in a build without CUDA: an error that says why.
#include <string>

#include "base/error.h"
#include "kernels/cuda/runtime.h"
#include "kernels/runtime/allocator.h"

namespace strata {

Allocator& pinned_host_allocator() {
  throw Error("pinned host memory needs a CUDA device: " + cuda::device_status().reason);
}
Allocator& device_allocator() {
  throw Error("the CUDA device allocator needs a CUDA device: " + cuda::device_status().reason);
}

}  // namespace strata
