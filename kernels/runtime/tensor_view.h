// TensorView: a contiguous, row-major buffer with dtype, shape and device. The op
// table's kernels see only these; strides and autograd live in core. A view on
// Device::cuda points at device memory: host code must never dereference it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/runtime/device.h"
#include "kernels/runtime/dtype.h"

namespace strata {

using Shape = std::vector<int64_t>;

inline int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s);

struct TensorView {
  void* data = nullptr;
  DType dtype = DType::f32;
  Shape shape;
  Device device = Device::cpu;

  bool defined() const { return data != nullptr; }
  int64_t numel() const { return shape_numel(shape); }
  int64_t dim() const { return static_cast<int64_t>(shape.size()); }
  int64_t size(int64_t i) const { return shape[static_cast<size_t>(i < 0 ? i + dim() : i)]; }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

}  // namespace strata
