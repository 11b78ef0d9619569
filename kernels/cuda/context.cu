// The per-device context: one stream, one cuBLASLt handle and workspace, one
// cuDNN handle, created lazily for the current device and kept for the process.
#include <mutex>
#include <string>

#include "base/error.h"
#include "kernels/cuda/context.h"

namespace strata::cuda {

void throw_cuda_error(cudaError_t e, const char* what, const char* file, int line) {
  throw Error(std::string("CUDA error ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ") in " +
              what + " at " + file + ":" + std::to_string(line));
}
void throw_cublas_error(cublasStatus_t s, const char* what, const char* file, int line) {
  throw Error(std::string("cuBLAS error ") + cublasGetStatusName(s) + " (" + cublasGetStatusString(s) +
              ") in " + what + " at " + file + ":" + std::to_string(line));
}
void throw_cudnn_error(cudnnStatus_t s, const char* what, const char* file, int line) {
  throw Error(std::string("cuDNN error ") + cudnnGetErrorString(s) + " in " + what + " at " + file + ":" +
              std::to_string(line));
}

namespace {
constexpr int kMaxDevices = 64;
constexpr size_t kBlasLtWorkspace = 32u << 20;

Context* make_context(int device) {
  auto* c = new Context;  // lives for the process: kernels may run until exit
  c->device = device;
  cudaDeviceProp p{};
  STRATA_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  c->sm_count = p.multiProcessorCount;
  c->compute_capability = p.major * 10 + p.minor;
  STRATA_CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
  STRATA_CUBLAS_CHECK(cublasLtCreate(&c->blaslt));
  STRATA_CUDA_CHECK(cudaMalloc(&c->blaslt_workspace, kBlasLtWorkspace));
  c->blaslt_workspace_bytes = kBlasLtWorkspace;
  return c;
}
}  // namespace

cudnnHandle_t Context::cudnn() {
  if (!cudnn_) {
    STRATA_CUDNN_CHECK(cudnnCreate(&cudnn_));
    STRATA_CUDNN_CHECK(cudnnSetStream(cudnn_, stream));
  }
  return cudnn_;
}

Context& context() {
  static std::mutex mu;
  static Context* contexts[kMaxDevices] = {};
  int device = 0;
  STRATA_CUDA_CHECK(cudaGetDevice(&device));
  if (device < 0 || device >= kMaxDevices)
    throw Error("CUDA device index " + std::to_string(device) + " out of range");
  std::lock_guard<std::mutex> lock(mu);
  if (!contexts[device]) contexts[device] = make_context(device);
  return *contexts[device];
}

Scratch::Scratch(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  STRATA_CUDA_CHECK(cudaMallocAsync(&ptr_, bytes, context().stream));
}

Scratch::~Scratch() {
  if (ptr_) cudaFreeAsync(ptr_, context().stream);
}

}  // namespace strata::cuda
