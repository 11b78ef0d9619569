// Pinned and device memory in a build without CUDA: an error that says why.
#include "base/error.h"
#include "kernels/allocator.h"

namespace strata {

Allocator& pinned_host_allocator() {
  throw Error("pinned host memory needs CUDA, but strata was built without CUDA (STRATA_CUDA=OFF or no nvcc)");
}
Allocator& device_allocator() {
  throw Error("a cuda tensor was asked for, but strata was built without CUDA (STRATA_CUDA=OFF or no nvcc)");
}

}  // namespace strata
