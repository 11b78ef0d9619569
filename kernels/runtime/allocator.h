// Allocators: where Storage gets its bytes. An aligned host allocator (caching
// blocks of 128 KiB and more, which malloc would give back to the system), a pinned
// (page-locked) host allocator for buffers the GPU copies from asynchronously,
// and a stream-ordered caching device allocator (freed blocks are kept and reused
// by size class, as PyTorch's CUDA caching allocator does, so a training step
// makes no cudaMalloc after the first). Statistics feed the run's metrics.
// The caching bookkeeping itself is kernels/runtime/caching_pool.h.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/runtime/device.h"

namespace strata {

// A CUDA stream as an integer (reinterpret_cast of a cudaStream_t), so that this
// header needs no CUDA headers. 0 is the legacy default stream.
using StreamId = std::uintptr_t;

struct AllocatorStats {
  size_t in_use_bytes = 0;          // handed out and not yet returned
  size_t peak_bytes = 0;            // high-water mark of in_use_bytes
  size_t cached_bytes = 0;          // held by the allocator, free for reuse
  uint64_t allocations = 0;         // allocate() calls
  uint64_t system_allocations = 0;  // of those, the ones that went to the system (malloc, cudaMalloc)
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Never returns null: throws strata::Error naming the bytes and the device.
  // On a device, the memory belongs to the context stream (kernels/cuda/context.h):
  // work queued there may use it at once, and after deallocate() work queued
  // there earlier may still be reading it.
  virtual void* allocate(size_t bytes) = 0;
  // `bytes` is the size given to allocate(); an allocator may check it.
  virtual void deallocate(void* p, size_t bytes) = 0;
  // Memory for work queued on `stream` (a device allocator keeps a cache per
  // stream); allocators without streams ignore it. Cached blocks stay keyed by
  // the stream's handle, which CUDA may give to a later stream: synchronise a
  // stream before destroying it.
  virtual void* allocate(size_t bytes, StreamId stream) {
    (void)stream;
    return allocate(bytes);
  }
  // Tells the allocator that work on `stream` (another stream than p's own) uses
  // p, so that p is reused only after the work queued there by the time of
  // deallocate() has finished. A no-op for allocators without streams.
  virtual void record_stream(void* p, StreamId stream) {
    (void)p;
    (void)stream;
  }
  virtual Device device() const = 0;
  virtual const char* name() const = 0;
  virtual AllocatorStats stats() const = 0;
  // Returns cached blocks to the system (no-op where nothing is cached).
  virtual void release_cached() {}
};

// Host blocks of this size and more are cached by host_allocator() (kernels/runtime/allocator.cpp
// says why): glibc's default threshold for serving a block from mmap. Not under
// AddressSanitizer, where a reused block would hide a use-after-free.
inline constexpr size_t kHostCacheMin = size_t{128} << 10;
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kHostCacheEnabled = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kHostCacheEnabled = false;
#else
inline constexpr bool kHostCacheEnabled = true;
#endif
#else
inline constexpr bool kHostCacheEnabled = true;
#endif

Allocator& host_allocator();         // 64-byte aligned host memory, large blocks cached
Allocator& pinned_host_allocator();  // page-locked host memory; throws without CUDA or a device
Allocator& device_allocator();       // the caching allocator of the current CUDA device; throws without one
Allocator& allocator_for(Device d);  // host_allocator() or device_allocator()

}  // namespace strata
