// Storage: a 64-byte aligned host buffer shared by the tensors that view it.
#pragma once
#include <cstddef>
#include <memory>

#include "kernels/device.h"

namespace strata {

class Storage {
 public:
  explicit Storage(size_t bytes);  // zero-filled
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return Device::cpu; }

  static constexpr size_t kAlignment = 64;

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace strata
