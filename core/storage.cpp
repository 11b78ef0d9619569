#include "core/storage.h"

#include <utility>

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

Storage::~Storage() {
  if (allocator_)
    allocator_->deallocate(data_, bytes_);
  else if (release_)
    release_();
}

}  // namespace strata
