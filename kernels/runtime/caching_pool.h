// A stream-ordered caching allocator, written against a small backend so that the
// same bookkeeping serves CUDA device memory, pinned host memory, and the fake
// device of the unit tests (tests/kernels/test_caching_pool.cpp).
//
// The policy, after PyTorch's CUDA caching allocator:
// - Sizes are rounded to size classes: 512-byte steps up to 1 MiB, 2 MiB steps
//   above (round_size). A block is one system allocation of its rounded size;
//   blocks are never split or merged, so a block goes back to the system whole
//   and the bookkeeping stays a map from pointer to block. The price is some
//   waste inside blocks, bounded by the reuse rule below.
// - Each block belongs to the stream it was allocated for. A freed block goes
//   back to its stream's free list, and a later allocation on the same stream may
//   take it at once: stream order runs the new work after the old, so no
//   synchronisation is needed. A block is never handed to another stream.
// - A request takes the smallest free block of its stream whose size is at least
//   the rounded request and at most 5/4 of it (so a small request never pins a
//   large block); otherwise it asks the system.
// - record_stream(p, s): work on another stream s uses p. When p is freed, an
//   event is recorded on each such stream, and p waits (counted as cached) until
//   every event has completed before it rejoins its free list.
// - When the system has no memory left, every cached block is released (after a
//   device synchronisation, as queued work may still use them) and the request is
//   retried once; if that fails too, strata::Error names the bytes requested, in
//   use and cached, and the device.
// - max_cached_bytes caps the cache (the pinned host pool keeps a small one):
//   a block freed while the cache is over the cap goes back to the system.
// Thread-safe: one mutex guards the pool; the backend is called under it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/runtime/allocator.h"

namespace strata {

// An event as an integer (a cudaEvent_t cast on CUDA).
using PoolEvent = std::uintptr_t;
// The stream of blocks that belong to no stream (pinned host memory); never a real stream.
inline constexpr StreamId kNoStream = ~StreamId{0};

// What the pool needs from a device. Called with the pool's mutex held.
class PoolBackend {
 public:
  virtual ~PoolBackend() = default;
  // `bytes` from the system, or nullptr when the system has no memory left (other
  // failures throw strata::Error).
  virtual void* system_allocate(size_t bytes) = 0;
  virtual void system_free(void* p) = 0;
  // An event that completes when the work queued on `stream` so far has finished.
  virtual PoolEvent record_event(StreamId stream) = 0;
  virtual bool event_done(PoolEvent e) = 0;  // a non-blocking query
  virtual void release_event(PoolEvent e) = 0;
  // Blocks until all queued work on the device has finished.
  virtual void synchronize() = 0;
  // Where the memory is, for messages: "CUDA device 0 (NVIDIA H200)".
  virtual std::string where() const = 0;
};

struct PoolOptions {
  const char* name = "caching";        // Allocator::name()
  Device device = Device::cuda;        // Allocator::device()
  StreamId default_stream = 0;         // the stream of allocate(bytes)
  size_t max_cached_bytes = SIZE_MAX;  // cap on cached_bytes (see above)
};

class CachingPool final : public Allocator {
 public:
  static constexpr size_t kSmallStep = 512;               // granularity up to kSmallLimit
  static constexpr size_t kSmallLimit = size_t{1} << 20;  // 1 MiB
  static constexpr size_t kLargeStep = size_t{2} << 20;   // granularity above it
  // The size class of a request of `bytes` (0 takes the smallest class).
  static size_t round_size(size_t bytes);

  CachingPool(std::unique_ptr<PoolBackend> backend, PoolOptions options);
  ~CachingPool() override;  // releases the cache; blocks still in use are left alone
  CachingPool(const CachingPool&) = delete;
  CachingPool& operator=(const CachingPool&) = delete;

  void* allocate(size_t bytes) override { return allocate(bytes, opts_.default_stream); }
  void* allocate(size_t bytes, StreamId stream) override;
  // Throws strata::Error for a pointer this pool did not hand out (or has already
  // released), a double free, and a size that is not the one allocated.
  void deallocate(void* p, size_t bytes) override;
  void record_stream(void* p, StreamId stream) override;
  Device device() const override { return opts_.device; }
  const char* name() const override { return opts_.name; }
  AllocatorStats stats() const override;
  void release_cached() override;

  // Blocks freed but waiting for an event of another stream (for tests and stats).
  size_t pending_blocks() const;

 private:
  struct Block {
    void* ptr = nullptr;
    size_t size = 0;       // rounded, what the system gave
    size_t requested = 0;  // what allocate() was asked for
    StreamId stream = 0;
    bool in_use = false;
    std::vector<StreamId> used_on;   // other streams (record_stream)
    std::vector<PoolEvent> pending;  // events to complete before reuse
  };
  using FreeList = std::multimap<size_t, Block*>;  // by size

  Block* take_free(StreamId stream, size_t rounded);
  void make_free(Block* b);  // into its free list, or back to the system over the cap
  void collect_pending();    // pending blocks whose events are all done become free
  void release_cached_locked();
  Block& find(void* p, const char* what);
  [[noreturn]] void throw_out_of_memory(size_t bytes, size_t rounded, size_t released);
  std::string where() const;

  std::unique_ptr<PoolBackend> backend_;
  PoolOptions opts_;
  mutable std::mutex mu_;
  std::unordered_map<void*, std::unique_ptr<Block>> blocks_;  // every block the pool holds
  std::map<StreamId, FreeList> free_;
  std::vector<Block*> pending_;
  AllocatorStats stats_;
};

}  // namespace strata
