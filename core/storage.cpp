#include "core/storage.h"

#include <utility>

#include "base/destructor_error.h"

namespace strata {

Storage::Storage(size_t bytes, Device device) : Storage(bytes, allocator_for(device)) {}

Storage::Storage(size_t bytes, Allocator& allocator)
    : data_(allocator.allocate(bytes)), bytes_(bytes), device_(allocator.device()), allocator_(&allocator) {}

std::shared_ptr<Storage> Storage::wrap(void* data, size_t bytes, Device device,
                                       std::function<void()> release) {
  std::shared_ptr<Storage> s(new Storage());
  s->data_ = data;
  s->bytes_ = bytes;
  s->device_ = device;
  s->release_ = std::move(release);
  return s;
}

// Never throws (base/destructor_error.h): after a sticky CUDA error the device
// pool's deallocate fails (recording an event, freeing a block over the cap),
// and a throw from here, often during the unwinding from that very error, would
// end in std::terminate with the first message lost. Reported instead; the
// bytes are then lost to the pool, which is the least of the program's problems.
Storage::~Storage() {
  try {
    if (allocator_)
      allocator_->deallocate(data_, bytes_);
    else if (release_)
      release_();
  } catch (...) {
    report_destructor_error(allocator_ ? "freeing a tensor's storage"
                                       : "releasing a wrapped tensor's storage");
  }
}

}  // namespace strata
