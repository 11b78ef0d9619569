// The host allocator (64-byte aligned, for AVX-512 loads) and the choice of
// allocator per device. Blocks of kHostCacheMin bytes and more are cached, by
// the same size classes and reuse rule as the device pool (kernels/runtime/caching_pool.h),
// because glibc does not keep them: it serves them from mmap or from the top of
// the heap and gives them back on free (munmap, brk trim), so every step of a
// training loop faults its activations in again, page by page, zero-filled by
// the kernel. Measured on the tiny GPT (configs/gpt_tiny.yaml, 16 steps of
// strata-train, 2 threads, perf stat): 390k page faults and 17.0 s of CPU
// without the cache, 127k and 14.7-16.0 s (two runs) with it. Smaller blocks
// stay with malloc, whose free lists reuse them. The cache keeps at most a
// quarter of the machine's memory (blocks freed beyond that go back to the
// system), and it is given back whole when a request finds the system out of
// memory. Under AddressSanitizer nothing is cached (kHostCacheEnabled): a
// reused block would hide a use-after-free from it.
#include "kernels/runtime/allocator.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>

#include "base/error.h"
#include "kernels/runtime/caching_pool.h"

namespace strata {
namespace {

constexpr size_t kAlignment = 64;

void* aligned_or_null(size_t bytes) {
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  return std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
}

// The cached blocks' system: aligned malloc; host memory has no streams, so
// every event is complete when it is recorded.
class HostPoolBackend final : public PoolBackend {
 public:
  void* system_allocate(size_t bytes) override { return aligned_or_null(bytes); }
  void system_free(void* p) override { std::free(p); }
  PoolEvent record_event(StreamId) override { return 0; }
  bool event_done(PoolEvent) override { return true; }
  void release_event(PoolEvent) override {}
  void synchronize() override {}
  std::string where() const override { return "the host"; }
};

size_t quarter_of_physical_memory() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return size_t{1} << 30;
  return static_cast<size_t>(pages) / 4 * static_cast<size_t>(page);
}

class HostAllocator final : public Allocator {
 public:
  using Allocator::allocate;  // allocate(bytes, stream): host memory has no stream

  HostAllocator()
      : pool_(std::make_unique<HostPoolBackend>(),
              PoolOptions{"host", Device::cpu, kNoStream, quarter_of_physical_memory()}) {}

  void* allocate(size_t bytes) override {
    if (cached(bytes)) return pool_.allocate(bytes);
    void* p = aligned_or_null(bytes);
    if (!p) throw Error("host allocator: cannot allocate " + std::to_string(bytes) + " bytes");
    size_t now = in_use_.fetch_add(bytes) + bytes;
    size_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
    allocations_.fetch_add(1);
    return p;
  }
  void deallocate(void* p, size_t bytes) override {
    if (!p) return;
    if (cached(bytes)) return pool_.deallocate(p, bytes);
    std::free(p);
    in_use_.fetch_sub(bytes);
  }
  Device device() const override { return Device::cpu; }
  const char* name() const override { return "host"; }
  // The small blocks' figures plus the pool's; the peak is the sum of the two
  // peaks, an upper bound of the true one.
  AllocatorStats stats() const override {
    AllocatorStats s = pool_.stats();
    s.in_use_bytes += in_use_.load();
    s.peak_bytes += peak_.load();
    s.allocations += allocations_.load();
    s.system_allocations += allocations_.load();
    return s;
  }
  void release_cached() override { pool_.release_cached(); }

 private:
  static bool cached(size_t bytes) { return kHostCacheEnabled && bytes >= kHostCacheMin; }

  CachingPool pool_;
  std::atomic<size_t> in_use_{0}, peak_{0};
  std::atomic<uint64_t> allocations_{0};
};

}  // namespace

Allocator& host_allocator() {
  static HostAllocator a;
  return a;
}

Allocator& allocator_for(Device d) { return d == Device::cpu ? host_allocator() : device_allocator(); }

}  // namespace strata
