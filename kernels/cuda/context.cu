// The per-device context: one stream, one cuBLASLt handle and workspace, one
// cuDNN handle, created lazily for the current device and kept for the process.
#include <mutex>
#include <string>

#include "base/destructor_error.h"
#include "base/error.h"
#include "kernels/cuda/context.h"
#include "kernels/runtime/allocator.h"

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

// Created on first use under a lock: two threads running their first conv at
// once (a data loader thread and the trainer, two ranks' threads in one process)
// would otherwise both see null, both create a handle, and one would leak or be
// used half set up (cudnnSetStream not yet called). One mutex for every device's
// context; after the first call it is an uncontended lock per conv call, next to
// cuDNN's own work. (The cuBLASLt handle and its workspace are not lazy: they are
// made with the context, under context()'s lock.)
cudnnHandle_t Context::cudnn() {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (!cudnn_) {
    cudnnHandle_t h = nullptr;
    STRATA_CUDNN_CHECK(cudnnCreate(&h));
    cudnnStatus_t s = cudnnSetStream(h, stream);
    if (s != CUDNN_STATUS_SUCCESS) {
      cudnnDestroy(h);
      throw_cudnn_error(s, "cudnnSetStream(h, stream)", __FILE__, __LINE__);
    }
    cudnn_ = h;  // published only once bound to the stream
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

// Scratch memory comes from CUDA's stream-ordered pool (cudaMallocAsync), tensors
// from the caching device allocator (kernels/runtime/caching_pool.h), and neither sees
// the other's free memory: the caching pool may hold gigabytes of freed blocks
// while a large scratch (attention's) fails. So out of memory here first asks
// the caching pool to give its cache back (release_cached synchronises the
// device and cudaFrees the cached blocks; the synchronisation also lets the
// stream-ordered pool return what it holds above its release threshold), trims
// the stream-ordered pool, and retries once. The failed call's error is cleared
// so that the next launch check does not report it. (The caching pool does the
// converse: device_allocator.cu trims this pool when cudaMalloc fails.)
Scratch::Scratch(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  cudaStream_t stream = context().stream;
  cudaError_t e = cudaMallocAsync(&ptr_, bytes, stream);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    ptr_ = nullptr;
    device_allocator().release_cached();
    cudaMemPool_t pool = nullptr;
    int device = 0;
    STRATA_CUDA_CHECK(cudaGetDevice(&device));
    STRATA_CUDA_CHECK(cudaDeviceGetMemPool(&pool, device));
    STRATA_CUDA_CHECK(cudaMemPoolTrimTo(pool, 0));
    e = cudaMallocAsync(&ptr_, bytes, stream);
  }
  if (e != cudaSuccess) {
    ptr_ = nullptr;
    std::string what = "cudaMallocAsync of " + std::to_string(bytes) + " bytes of scratch";
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // reported by the throw below
      what += ", after emptying the device allocator's cache and retrying";
    }
    throw_cuda_error(e, what.c_str(), __FILE__, __LINE__);
  }
}

// Never throws (base/destructor_error.h): a Scratch is often destroyed while the
// stack unwinds from the CUDA error of the kernel that used it, and a throw from
// here (context() after a sticky error, say) would end in std::terminate and
// lose that error. A failed cudaFreeAsync is reported once and its error
// cleared; a sticky error stays, and the next checked call reports it.
Scratch::~Scratch() {
  if (!ptr_) return;
  try {
    cudaError_t e = cudaFreeAsync(ptr_, context().stream);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      report_destructor_error(
          "cudaFreeAsync of a kernel's scratch memory",
          (std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")").c_str());
    }
  } catch (...) {
    report_destructor_error("freeing a kernel's scratch memory");
  }
}

}  // namespace strata::cuda
