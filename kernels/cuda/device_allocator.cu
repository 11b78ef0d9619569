// The CUDA allocators: the caching pool (kernels/runtime/caching_pool.h) over cudaMalloc
// for device memory, one pool per device with the context stream as its default
// stream, and over cudaHostAlloc for pinned host memory, one pool for the
// process with a small cache (pinning is slow, but page-locked memory the cache
// holds is memory the OS cannot page out). No kernels here: this file is .cu
// only to sit with the CUDA backend.
//
// Pools live for the process, as the contexts do: a Storage freed during static
// destruction must still find its pool, and CUDA may be torn down by then.
#include <cuda_runtime.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/error.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/runtime.h"
#include "kernels/runtime/allocator.h"
#include "kernels/runtime/caching_pool.h"

namespace strata {
namespace {

constexpr int kMaxDevices = 64;
// The loader's ring slots are allocated once per run; the pinned cache serves the
// churn around them (staging buffers), so it stays small.
constexpr size_t kPinnedCacheBytes = size_t{256} << 20;

// Makes `device` current for a scope (a no-op when it already is).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    STRATA_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) STRATA_CUDA_CHECK(cudaSetDevice(device));
    device_ = device;
  }
  ~DeviceGuard() {
    if (previous_ != device_) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0, device_ = 0;
};

std::string device_text(int device) {
  cudaDeviceProp p{};
  std::string name = cudaGetDeviceProperties(&p, device) == cudaSuccess ? p.name : "unknown";
  return "CUDA device " + std::to_string(device) + " (" + name + ")";
}

// Events and synchronisation on one device. Events are recycled: a training step
// frees blocks used on the copy and communication streams every step.
class CudaEventBackend : public PoolBackend {
 public:
  explicit CudaEventBackend(int device) : device_(device), where_(device_text(device)) {}
  ~CudaEventBackend() override {
    for (cudaEvent_t e : spare_) cudaEventDestroy(e);
  }

  PoolEvent record_event(StreamId stream) override {
    DeviceGuard g(device_);
    cudaEvent_t e = nullptr;
    if (spare_.empty()) {
      STRATA_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    } else {
      e = spare_.back();
      spare_.pop_back();
    }
    STRATA_CUDA_CHECK(cudaEventRecord(e, reinterpret_cast<cudaStream_t>(stream)));
    return reinterpret_cast<PoolEvent>(e);
  }
  bool event_done(PoolEvent e) override {
    cudaError_t r = cudaEventQuery(reinterpret_cast<cudaEvent_t>(e));
    if (r == cudaErrorNotReady) {
      (void)cudaGetLastError();  // "not ready" is an answer, not an error for the next launch check
      return false;
    }
    STRATA_CUDA_CHECK(r);
    return true;
  }
  void release_event(PoolEvent e) override { spare_.push_back(reinterpret_cast<cudaEvent_t>(e)); }
  void synchronize() override {
    DeviceGuard g(device_);
    cuda::note_host_sync();
    STRATA_CUDA_CHECK(cudaDeviceSynchronize());
  }
  std::string where() const override { return where_; }

 protected:
  int device_;
  std::string where_;
  std::vector<cudaEvent_t> spare_;
};

// Runs alloc(&p), an allocation call; its "out of memory" is the pool's cue to
// release its cache and retry (nullptr), any other failure an error. The failed
// call's error is cleared so that the next launch check does not report it.
// The call happens in here, before p is read: this took (cudaMalloc(&p, n), p)
// as two arguments once, whose order of evaluation C++ leaves unspecified, and
// GCC copied p while still null, so every allocation read as out of memory on
// the first GPU run (2026-12-04, H200).
template <typename Alloc>
void* null_when_out_of_memory(const char* call, Alloc&& alloc) {
  void* p = nullptr;
  const cudaError_t e = alloc(&p);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    return nullptr;
  }
  if (e != cudaSuccess) ::strata::cuda::throw_cuda_error(e, call, __FILE__, __LINE__);
  return p;
}

// cudaMalloc out of memory first trims CUDA's stream-ordered pool, where
// cuda::Scratch (kernels/cuda/context.h) allocates kernels' temporaries and which
// may keep freed memory this pool cannot see, and retries; only then does it
// tell the pool (null), which releases its own cache (synchronising the device
// when it has any) and calls again: that second call's trim then also finds the
// stream-ordered frees completed. (Scratch does the converse: it empties this
// pool's cache when cudaMallocAsync fails.)
class DeviceMemoryBackend final : public CudaEventBackend {
 public:
  using CudaEventBackend::CudaEventBackend;
  void* system_allocate(size_t bytes) override {
    DeviceGuard g(device_);
    auto malloc = [&](void** p) { return cudaMalloc(p, bytes); };
    if (void* p = null_when_out_of_memory("cudaMalloc", malloc)) return p;
    // the async pool (Scratch's temporaries) may hold memory cudaMalloc needs
    cudaMemPool_t pool = nullptr;
    STRATA_CUDA_CHECK(cudaDeviceGetMemPool(&pool, device_));
    STRATA_CUDA_CHECK(cudaMemPoolTrimTo(pool, 0));
    return null_when_out_of_memory("cudaMalloc", malloc);
  }
  void system_free(void* p) override {
    DeviceGuard g(device_);
    STRATA_CUDA_CHECK(cudaFree(p));
  }
};

class PinnedMemoryBackend final : public CudaEventBackend {
 public:
  explicit PinnedMemoryBackend(int device) : CudaEventBackend(device) {
    where_ = "host memory page-locked for " + where_;
  }
  void* system_allocate(size_t bytes) override {
    // Portable: page-locked for every device, whichever is current.
    return null_when_out_of_memory("cudaHostAlloc",
                                   [&](void** p) { return cudaHostAlloc(p, bytes, cudaHostAllocPortable); });
  }
  void system_free(void* p) override { STRATA_CUDA_CHECK(cudaFreeHost(p)); }
};

// The current device, or an error that says why there is none.
int current_device(const char* what) {
  cuda::DeviceStatus st = cuda::device_status();
  if (st.device_count == 0) throw Error(std::string(what) + " needs a CUDA device: " + st.reason);
  int device = 0;
  STRATA_CUDA_CHECK(cudaGetDevice(&device));
  if (device < 0 || device >= kMaxDevices)
    throw Error("CUDA device index " + std::to_string(device) + " out of range");
  return device;
}

}  // namespace

Allocator& device_allocator() {
  static std::mutex mu;
  static CachingPool* pools[kMaxDevices] = {};
  int device = 0;
  if (cudaGetDevice(&device) == cudaSuccess && device >= 0 && device < kMaxDevices) {
    std::lock_guard<std::mutex> lock(mu);
    if (pools[device]) return *pools[device];
  } else {
    (void)cudaGetLastError();
  }
  device = current_device("the CUDA device allocator");
  std::lock_guard<std::mutex> lock(mu);
  if (!pools[device]) {
    PoolOptions o;
    o.name = "cuda";
    o.device = Device::cuda;
    o.default_stream = reinterpret_cast<StreamId>(cuda::context().stream);
    pools[device] = new CachingPool(std::make_unique<DeviceMemoryBackend>(device), o);
  }
  return *pools[device];
}

Allocator& pinned_host_allocator() {
  static std::mutex mu;
  static CachingPool* pool = nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (!pool) {
    int device = current_device("pinned host memory");
    PoolOptions o;
    o.name = "pinned";
    o.device = Device::cpu;
    o.default_stream = kNoStream;  // host memory: only record_stream ties it to streams
    o.max_cached_bytes = kPinnedCacheBytes;
    pool = new CachingPool(std::make_unique<PinnedMemoryBackend>(device), o);
  }
  return *pool;
}

}  // namespace strata
