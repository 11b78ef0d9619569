#include "core/storage.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace strata {

Storage::Storage(size_t bytes) : bytes_(bytes) {
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  data_ = std::aligned_alloc(kAlignment, rounded);
  if (!data_) throw std::bad_alloc();
  std::memset(data_, 0, rounded);
}

Storage::~Storage() { std::free(data_); }

}  // namespace strata
