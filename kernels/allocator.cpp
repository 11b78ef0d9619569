// The host allocator (64-byte aligned, for AVX-512 loads) and the choice of
// allocator per device. Host memory is not cached: malloc's own arenas already
// reuse freed blocks, so a cache here would only hide leaks from the sanitizers.
#include "kernels/allocator.h"

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include "base/error.h"

namespace strata {
namespace {

class HostAllocator final : public Allocator {
 public:
  static constexpr size_t kAlignment = 64;
  using Allocator::allocate;  // allocate(bytes, stream): host memory has no stream

  void* allocate(size_t bytes) override {
    size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    if (rounded == 0) rounded = kAlignment;
    void* p = std::aligned_alloc(kAlignment, rounded);
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
    std::free(p);
    in_use_.fetch_sub(bytes);
  }
  Device device() const override { return Device::cpu; }
  const char* name() const override { return "host"; }
  AllocatorStats stats() const override {
    AllocatorStats s;
    s.in_use_bytes = in_use_.load();
    s.peak_bytes = peak_.load();
    s.allocations = allocations_.load();
    s.system_allocations = s.allocations;
    return s;
  }

 private:
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
