// Tensor: a dtype, a shape and strides over shared Storage, plus what autograd
// needs (requires_grad, the accumulated gradient, the node that produced it).
// Tensors are cheap handles: copies share the same data. A tensor lives on its
// storage's device; every data method runs through the device ops
// (kernels/device_ops.h), so the same code serves host and device tensors, and
// host pointers (data<T>(), raw_data()) exist only for host tensors.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/storage.h"
#include "kernels/runtime/dtype.h"
#include "kernels/runtime/tensor_view.h"

namespace strata {

class Node;
class Generator;
struct TensorImpl;

class Tensor {
 public:
  Tensor() = default;

  // ---- construction (on `device`, the host by default)
  static Tensor empty(const Shape& shape, DType dtype = DType::f32,
                      Device device = Device::cpu);  // uninitialised
  static Tensor zeros(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu) {
    return full(shape, 0.0, dtype, device);
  }
  static Tensor full(const Shape& shape, double value, DType dtype = DType::f32, Device device = Device::cpu);
  static Tensor ones(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu) {
    return full(shape, 1.0, dtype, device);
  }
  static Tensor scalar(double value, DType dtype = DType::f32, Device device = Device::cpu) {
    return full({}, value, dtype, device);
  }
  // Copies `values` (converted to dtype); values.size() must equal the shape's numel.
  static Tensor from_vector(const std::vector<float>& values, const Shape& shape, DType dtype = DType::f32,
                            Device device = Device::cpu);
  static Tensor from_vector_i64(const std::vector<int64_t>& values, const Shape& shape,
                                Device device = Device::cpu);
  // A contiguous tensor over existing storage (no copy), starting `offset` elements in.
  static Tensor from_storage(std::shared_ptr<Storage> storage, const Shape& shape, DType dtype,
                             int64_t offset = 0);
  // Random tensors are drawn on the host (the generator's stream is the same
  // whatever the device) and copied to `device`.
  static Tensor uniform(const Shape& shape, double lo, double hi, Generator& gen, DType dtype = DType::f32,
                        Device device = Device::cpu);
  static Tensor normal(const Shape& shape, double mean, double stddev, Generator& gen,
                       DType dtype = DType::f32, Device device = Device::cpu);

  // ---- metadata
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  const std::vector<int64_t>& strides() const;
  int64_t size(int64_t dim) const;
  int64_t dim() const;
  int64_t numel() const;
  DType dtype() const;
  Device device() const;  // the storage's
  bool is_contiguous() const;
  std::string str() const;  // "Tensor[f32, [2, 3]]"

  // ---- data
  // The first element (offset applied) of a host tensor; on a device tensor
  // these throw strata::Error (use view(), or to(Device::cpu) first).
  void* raw_data();
  const void* raw_data() const;
  template <typename T>
  T* data() {
    return static_cast<T*>(raw_data());
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(raw_data());
  }
  // Values converted to float / int64 (a contiguous host copy), and a single
  // element (one small read from a device tensor).
  std::vector<float> to_float_vector() const;
  std::vector<int64_t> to_i64_vector() const;
  double item() const;
  TensorView view() const;  // requires contiguous; carries the device
  std::shared_ptr<Storage> storage() const;

  // ---- copies and conversion (not recorded by autograd; see ops.h cast())
  Tensor contiguous() const;
  Tensor clone() const;
  Tensor to(DType dtype) const;
  // A copy on `device` (this tensor itself when it is there already).
  Tensor to(Device device) const;
  // Moves this tensor's data (and its gradient) to `device` in place: every
  // handle sharing this TensorImpl sees the move; other views of the old
  // storage keep the old bytes. No-op when already there.
  void to_(Device device);
  void copy_(const Tensor& src);  // same numel; converts dtype; across devices too
  void fill_(double value);       // contiguous tensors
  void zero_() { fill_(0.0); }

  // ---- views sharing storage
  Tensor view_as_shape(const Shape& shape) const;  // contiguous only; same numel

  // ---- autograd
  bool requires_grad() const;
  Tensor& set_requires_grad(bool r = true);
  Tensor grad() const;  // undefined until backward() produced one
  void set_grad(const Tensor& g);
  void zero_grad();  // drops the gradient
  const std::shared_ptr<Node>& grad_fn() const;
  void set_grad_fn(std::shared_ptr<Node> fn);
  Tensor detach() const;  // same data, no history
  // Reverse-mode autodiff from this tensor (a scalar unless `grad` is given).
  void backward(const Tensor& grad = Tensor()) const;

  // Called once per backward pass when this leaf's gradient is complete (every
  // contribution accumulated) -- data-parallel training starts a bucket's
  // allreduce from here while backward goes on.
  void add_grad_ready_hook(std::function<void(Tensor&)> hook);
  void clear_grad_ready_hooks();

  const std::string& name() const;
  void set_name(const std::string& n);

  TensorImpl* impl() const { return impl_.get(); }
  // The first element's address on the tensor's device (never dereference a
  // device address on the host).
  void* device_data() const;
  bool same(const Tensor& o) const { return impl_ == o.impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;  // in elements
  DType dtype = DType::f32;
  Shape shape;
  std::vector<int64_t> strides;
  bool requires_grad = false;
  Tensor grad;
  std::shared_ptr<Node> grad_fn;
  std::string name;
  std::vector<std::function<void(Tensor&)>> grad_ready_hooks;
};

std::vector<int64_t> contiguous_strides(const Shape& shape);

}  // namespace strata
