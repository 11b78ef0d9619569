// CopyEngine: host-to-device copies on a stream of their own, and the fences
// that order them against the compute stream without the host waiting. The
// trainer's DeviceFeeder (train/trainer/device_feeder.h) double-buffers batches
// through it: copy batch k+1 while the device computes on batch k, make compute
// wait on the copy's fence, and hand a host buffer back to the loader only once
// the fence of its copy has passed (a page-locked source is read by the DMA
// engine after copy_to_device() returns). CUDA-free: the CUDA engine is in
// kernels/cuda/copy_engine.cu (streams and events); the CPU one is synchronous.
#pragma once
#include <cstddef>
#include <memory>

#include "kernels/runtime/device.h"

namespace strata {

// A point in one stream's queued work; an engine's own type behind it (a CUDA
// event). A fence never recorded has passed.
class StreamFence {
 public:
  virtual ~StreamFence() = default;
};

class CopyEngine {
 public:
  virtual ~CopyEngine() = default;
  // Where copies land.
  virtual Device device() const = 0;
  // True where host memory is the device's (the CPU): there is nothing to copy,
  // and a feeder hands host batches through as they are.
  virtual bool pass_through() const = 0;
  virtual std::unique_ptr<StreamFence> make_fence() = 0;
  // Queues a copy of `bytes` from host `src` to `dst` (device memory) on the copy
  // stream, after what copies_wait() asked for. `src` must stay unchanged until
  // a fence recorded after this call has passed.
  virtual void copy_to_device(const void* src, void* dst, size_t bytes) = 0;
  // Records `f` after the copies queued so far.
  virtual void record_after_copies(StreamFence& f) = 0;
  // Records `f` after the compute work queued so far (kernels on the compute stream).
  virtual void record_after_compute(StreamFence& f) = 0;
  // Later copies start after `f`; the host does not wait.
  virtual void copies_wait(StreamFence& f) = 0;
  // Later compute work starts after `f`; the host does not wait.
  virtual void compute_waits(StreamFence& f) = 0;
  // Whether the work before `f` has finished (no waiting).
  virtual bool passed(StreamFence& f) = 0;
  // Blocks the host until `f` has passed (that fence only, not the device).
  virtual void wait(StreamFence& f) = 0;
};

// The synchronous engine of the host: copies are memcpy, every fence has passed.
std::unique_ptr<CopyEngine> make_cpu_copy_engine();
// A copy stream on the current CUDA device, ordered against its context stream;
// throws strata::Error naming why where there is no CUDA device or build.
std::unique_ptr<CopyEngine> make_cuda_copy_engine();
// make_cpu_copy_engine() or make_cuda_copy_engine().
std::unique_ptr<CopyEngine> make_copy_engine(Device device);

}  // namespace strata
