// The per-device CUDA context: the compute stream every kernel launches on, the
// cuBLASLt handle with its workspace and the cuDNN handle. Kernels reach it
// through context() instead of taking it as an argument, so the op table's
// signatures are the same on every backend. Created on first use for the
// current device (cudaGetDevice), which a process sets once at start-up.
//
// Only code under kernels/cuda includes this header (it pulls in the CUDA
// headers); the rest of strata sees kernels/cuda/runtime.h.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>

namespace strata::cuda {

// Throws strata::Error naming the call, the CUDA error and the source line.
void throw_cuda_error(cudaError_t e, const char* what, const char* file, int line);
void throw_cublas_error(cublasStatus_t s, const char* what, const char* file, int line);
void throw_cudnn_error(cudnnStatus_t s, const char* what, const char* file, int line);

#define STRATA_CUDA_CHECK(expr)                                                                           \
  do {                                                                                                    \
    cudaError_t strata_e_ = (expr);                                                                       \
    if (strata_e_ != cudaSuccess) ::strata::cuda::throw_cuda_error(strata_e_, #expr, __FILE__, __LINE__); \
  } while (0)
#define STRATA_CUBLAS_CHECK(expr)                                               \
  do {                                                                          \
    cublasStatus_t strata_s_ = (expr);                                          \
    if (strata_s_ != CUBLAS_STATUS_SUCCESS)                                     \
      ::strata::cuda::throw_cublas_error(strata_s_, #expr, __FILE__, __LINE__); \
  } while (0)
#define STRATA_CUDNN_CHECK(expr)                                               \
  do {                                                                         \
    cudnnStatus_t strata_s_ = (expr);                                          \
    if (strata_s_ != CUDNN_STATUS_SUCCESS)                                     \
      ::strata::cuda::throw_cudnn_error(strata_s_, #expr, __FILE__, __LINE__); \
  } while (0)
// After a kernel launch: launch-configuration errors surface here, at the launch.
#define STRATA_CUDA_LAUNCH_CHECK() STRATA_CUDA_CHECK(cudaGetLastError())

struct Context {
  int device = 0;
  int sm_count = 0;
  int compute_capability = 0;  // major*10 + minor, e.g. 90 for Hopper
  cudaStream_t stream = nullptr;
  cublasLtHandle_t blaslt = nullptr;
  void* blaslt_workspace = nullptr;  // 32 MiB, the size cuBLAS recommends for Hopper
  size_t blaslt_workspace_bytes = 0;
  bool allow_tf32 = false;  // precision.allow_tf32: f32 GEMMs/convs may use TF32 Tensor Cores

  cudnnHandle_t cudnn();  // created on first call, bound to `stream`
  cudnnHandle_t cudnn_ = nullptr;
};

// The current device's context (one per device, created on first use).
Context& context();

// Stream-ordered scratch memory for a kernel's temporaries (cudaMallocAsync /
// cudaFreeAsync on the context stream): freed when it goes out of scope, reused
// by later work on the same stream without a synchronisation.
class Scratch {
 public:
  explicit Scratch(size_t bytes);
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* data() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace strata::cuda
