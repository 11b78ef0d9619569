// The CUDA copy engine: a non-blocking stream of its own for host-to-device
// copies, so they run on a copy engine while kernels run on the context stream,
// and events as fences between the two. Nothing here synchronises the device or
// a stream except wait(), which waits for one event, and the destructor.
#include "kernels/runtime/copy_engine.h"

#include <cuda_runtime.h>

#include <string>

#include "base/error.h"
#include "kernels/cuda/context.h"

namespace strata {
namespace {

class CudaFence final : public StreamFence {
 public:
  CudaFence() { STRATA_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming)); }
  ~CudaFence() override { cudaEventDestroy(event); }  // a pending event is released once it completes
  CudaFence(const CudaFence&) = delete;
  CudaFence& operator=(const CudaFence&) = delete;
  cudaEvent_t event = nullptr;
};

cudaEvent_t event_of(StreamFence& f) {
  auto* c = dynamic_cast<CudaFence*>(&f);
  if (!c) throw Error("CUDA copy engine: a fence made by another copy engine");
  return c->event;
}

class CudaCopyEngine final : public CopyEngine {
 public:
  CudaCopyEngine() : compute_(cuda::context().stream) {
    STRATA_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
  }
  ~CudaCopyEngine() override {
    // Queued copies still read their host buffers and write device memory.
    cudaStreamSynchronize(copy_);
    cudaStreamDestroy(copy_);
  }
  CudaCopyEngine(const CudaCopyEngine&) = delete;
  CudaCopyEngine& operator=(const CudaCopyEngine&) = delete;

  Device device() const override { return Device::cuda; }
  bool pass_through() const override { return false; }
  std::unique_ptr<StreamFence> make_fence() override { return std::make_unique<CudaFence>(); }
  void copy_to_device(const void* src, void* dst, size_t bytes) override {
    if (bytes == 0) return;
    // From page-locked memory the DMA reads src later, on the copy stream; from
    // pageable memory CUDA stages it before returning (correct, not overlapped).
    STRATA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, copy_));
  }
  void record_after_copies(StreamFence& f) override {
    STRATA_CUDA_CHECK(cudaEventRecord(event_of(f), copy_));
  }
  void record_after_compute(StreamFence& f) override {
    STRATA_CUDA_CHECK(cudaEventRecord(event_of(f), compute_));
  }
  void copies_wait(StreamFence& f) override { STRATA_CUDA_CHECK(cudaStreamWaitEvent(copy_, event_of(f), 0)); }
  void compute_waits(StreamFence& f) override {
    STRATA_CUDA_CHECK(cudaStreamWaitEvent(compute_, event_of(f), 0));
  }
  bool passed(StreamFence& f) override {
    const cudaError_t e = cudaEventQuery(event_of(f));
    if (e == cudaErrorNotReady) {
      // "Not ready" is an answer, not a failure, but the runtime may keep it as
      // the thread's last error, and the next STRATA_CUDA_LAUNCH_CHECK
      // (cudaGetLastError) would then fail a kernel that launched fine. Cleared
      // here, as the caching pool's event_done does.
      (void)cudaGetLastError();
      return false;
    }
    STRATA_CUDA_CHECK(e);
    return true;
  }
  void wait(StreamFence& f) override { STRATA_CUDA_CHECK(cudaEventSynchronize(event_of(f))); }

 private:
  cudaStream_t compute_ = nullptr;
  cudaStream_t copy_ = nullptr;
};

}  // namespace

std::unique_ptr<CopyEngine> make_cuda_copy_engine() { return std::make_unique<CudaCopyEngine>(); }

}  // namespace strata
