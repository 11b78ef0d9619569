// Storage: bytes on one device shared by the tensors that view it. Allocated
// storage comes from an Allocator (kernels/runtime/allocator.h: 64-byte aligned host
// memory, pinned host memory, or the caching device allocator) and is not
// zero-filled. Wrapped storage views memory owned elsewhere (a loader's pinned
// ring slot, a buffer from another library) without copying; its release
// callback runs when the last tensor viewing it goes.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>

#include "kernels/runtime/allocator.h"
#include "kernels/runtime/device.h"

namespace strata {

class Storage {
 public:
  // `bytes` from allocator_for(device); uninitialised.
  explicit Storage(size_t bytes, Device device = Device::cpu);
  // `bytes` from `allocator`, which must outlive the storage.
  Storage(size_t bytes, Allocator& allocator);
  // Views `bytes` at `data` on `device`; `release` (may be empty) runs on destruction.
  static std::shared_ptr<Storage> wrap(void* data, size_t bytes, Device device,
                                       std::function<void()> release = {});
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }
  // The allocator the bytes came from; null for wrapped storage.
  Allocator* allocator() const { return allocator_; }

 private:
  Storage() = default;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Device device_ = Device::cpu;
  Allocator* allocator_ = nullptr;
  std::function<void()> release_;
};

}  // namespace strata
