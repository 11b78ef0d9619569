// A std::pmr::memory_resource over a strata::Allocator: the pinned caching pool
// keeps freed page-locked blocks, so a new HostBatch's first buffers cost a
// cudaHostAlloc once per run, not once per batch.
#include "core/batch_memory.h"

#include <cstdint>
#include <string>

#include "base/destructor_error.h"
#include "base/error.h"
#include "kernels/runtime/allocator.h"

namespace strata {
namespace {

class AllocatorResource final : public HostBufferResource {
 public:
  explicit AllocatorResource(Allocator& a) : a_(a) {}

 private:
  void* do_allocate(size_t bytes, size_t alignment) override {
    void* p = a_.allocate(bytes);
    if (reinterpret_cast<std::uintptr_t>(p) % alignment != 0) {
      a_.deallocate(p, bytes);
      throw Error(std::string("batch memory: the ") + a_.name() + " allocator gave " + std::to_string(bytes) +
                  " bytes not aligned to " + std::to_string(alignment));
    }
    return p;
  }
  // Runs in HostBytes' destructor: a throw (the pinned pool records events and
  // frees page-locked blocks with CUDA calls, which fail after a sticky error)
  // would end in std::terminate, so it is reported instead
  // (base/destructor_error.h).
  void do_deallocate(void* p, size_t bytes, size_t) override {
    try {
      a_.deallocate(p, bytes);
    } catch (...) {
      report_destructor_error("freeing a batch buffer's page-locked memory");
    }
  }
  bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }

  Allocator& a_;
};

}  // namespace

HostBufferResource* batch_memory_for(Device device) {
  if (device == Device::cpu) return std::pmr::new_delete_resource();
  static AllocatorResource pinned(pinned_host_allocator());  // throws (and retries next call) without CUDA
  return &pinned;
}

}  // namespace strata
