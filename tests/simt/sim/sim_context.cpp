// The CUDA context as the emulated backend sees it (kernels/cuda/context.h):
// one context on the host, an H200's shape (132 SMs, compute capability 9.0) so
// that launchers size their grids as they would there, no stream (launches run
// synchronously), and Scratch from the emulated cudaMalloc, so that
// AddressSanitizer sees a kernel that overruns its temporaries and a kernel that
// reads them before writing sees NaN.
#include <string>

#include "base/error.h"
#include "kernels/cuda/context.h"

namespace strata::cuda {

void throw_cuda_error(cudaError_t e, const char* what, const char* file, int line) {
  throw Error(std::string("cuda-sim: ") + what + " failed (error " + std::to_string(static_cast<int>(e)) +
              ") at " + file + ":" + std::to_string(line));
}
void throw_cublas_error(cublasStatus_t s, const char* what, const char* file, int line) {
  throw Error(std::string("cuda-sim: ") + what + " failed (cuBLAS status " +
              std::to_string(static_cast<int>(s)) + ") at " + file + ":" + std::to_string(line));
}
void throw_cudnn_error(cudnnStatus_t s, const char* what, const char* file, int line) {
  throw Error(std::string("cuda-sim: ") + what + " failed (cuDNN status " +
              std::to_string(static_cast<int>(s)) + ") at " + file + ":" + std::to_string(line));
}

Context& context() {
  static Context c = [] {
    Context x;
    x.device = 0;
    x.sm_count = 132;
    x.compute_capability = 90;
    return x;
  }();
  return c;
}

cudnnHandle_t Context::cudnn() {
  throw Error("cuda-sim: cuDNN is not emulated (its calls go to the reference)");
}

// the emulated cudaMalloc (sim_runtime.cpp): an exact, 0xFF-filled heap block
Scratch::Scratch(size_t bytes) : bytes_(bytes) { STRATA_CUDA_CHECK(cudaMalloc(&ptr_, bytes)); }
Scratch::~Scratch() { cudaFree(ptr_); }

}  // namespace strata::cuda
