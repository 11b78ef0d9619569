// Pinned and device allocators not written yet (replaced by kernels/cuda/device_allocator.cu).
#include "base/error.h"
#include "kernels/allocator.h"

namespace strata {

Allocator& pinned_host_allocator() {
  throw Error("pinned host memory allocator is not implemented yet");
}
Allocator& device_allocator() {
  throw Error("the CUDA device allocator is not implemented yet");
}

}  // namespace strata
