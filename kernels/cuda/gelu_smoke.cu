// The GELU smoke kernel behind runtime.h's gelu_forward_host: one thread per
// element, the same math::gelu the CPU kernels call (scalar math written once),
// on device buffers the helper allocates, fills and reads back itself. Apart
// from runtime.cu (device queries, which the host SIMT emulator does not build)
// so that this kernel also runs under the emulator (tests/simt).
#include <cuda_runtime.h>

#include <string>

#include "base/error.h"
#include "kernels/cuda/kernel_macros.cuh"
#include "kernels/cuda/runtime.h"
#include "kernels/scalar_math.h"

namespace strata::cuda {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("CUDA ") + what + ": " + cudaGetErrorString(e));
}

__global__ void gelu_kernel(const float* x, float* y, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = math::gelu(x[i]);
}

}  // namespace

void gelu_forward_host(const float* x, float* y, int64_t n) {
  if (n == 0) return;  // a grid of no blocks is an invalid launch configuration
  float *dx = nullptr, *dy = nullptr;
  size_t bytes = static_cast<size_t>(n) * sizeof(float);
  check(cudaMalloc(&dx, bytes), "cudaMalloc");
  check(cudaMalloc(&dy, bytes), "cudaMalloc");
  check(cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  int threads = 256;
  int blocks = static_cast<int>((n + threads - 1) / threads);
  STRATA_LAUNCH(blocks, threads, 0, 0, gelu_kernel)(dx, dy, n);
  check(cudaGetLastError(), "gelu kernel launch");
  check(cudaMemcpy(y, dy, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
  cudaFree(dx);
  cudaFree(dy);
}

}  // namespace strata::cuda
