// Strided gather (layout_gather.h): a grid-stride loop in which thread i decodes the
// source offset of output element i through the packed index map and copies
// one word. Writes are coalesced; reads are as contiguous as the map allows.
// The word type is chosen by element size, so every dtype of that size shares
// one kernel.
#include "kernels/cuda/context.h"
#include "kernels/cuda/kernel_macros.cuh"
#include "kernels/cuda/layout_gather.h"

namespace strata::cuda {
namespace {

// ---- kernels -------------------------------------------------------------------

template <typename U>
__global__ void gather_kernel(const U* src, launch::IndexMap map, U* dst, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = src[map.offset(i)];
}

}  // namespace

// ---- launchers -------------------------------------------------------------------

void strided_gather(const void* src, const launch::IndexMap& map, void* dst, int64_t n, size_t elem_bytes) {
  Context& c = context();
  int64_t blocks = launch::blocks_for(n, launch::grid_cap(c.sm_count));
  if (blocks == 0) return;
  auto run = [&](auto word) {
    using U = decltype(word);
    STRATA_LAUNCH(static_cast<unsigned>(blocks), launch::kThreads, 0, c.stream, gather_kernel)
    (static_cast<const U*>(src), map, static_cast<U*>(dst), n);
    STRATA_CUDA_LAUNCH_CHECK();
  };
  switch (elem_bytes) {
    case 1:
      return run(uint8_t{});
    case 2:
      return run(uint16_t{});
    case 4:
      return run(uint32_t{});
    default:
      return run(uint64_t{});
  }
}

}  // namespace strata::cuda
