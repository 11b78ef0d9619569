#include "core/tensor.h"

#include <string>

#include "base/error.h"
#include "core/autograd.h"
#include "core/random.h"
#include "kernels/device_ops.h"

namespace strata {

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t st = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = st;
    st *= shape[i];
  }
  return s;
}

namespace {

void check_shape(const Shape& shape) {
  for (auto d : shape)
    if (d < 0) throw ShapeError("tensor shape " + shape_str(shape) + " has a negative dimension");
}

// A host view over a std::vector's bytes (destination of reads to the host).
template <typename T>
TensorView host_view(std::vector<T>& v, DType dt) {
  return TensorView{v.data(), dt, Shape{static_cast<int64_t>(v.size())}};
}

}  // namespace

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  check_shape(shape);
  Tensor t;
  t.impl_ = std::make_shared<TensorImpl>();
  t.impl_->storage =
      std::make_shared<Storage>(static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype), device);
  t.impl_->dtype = dtype;
  t.impl_->shape = shape;
  t.impl_->strides = contiguous_strides(shape);
  return t;
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill_(value);
  return t;
}

Tensor Tensor::from_vector(const std::vector<float>& values, const Shape& shape, DType dtype, Device device) {
  if (static_cast<int64_t>(values.size()) != shape_numel(shape))
    throw ShapeError("from_vector: " + std::to_string(values.size()) + " values for shape " +
                     shape_str(shape));
  Tensor t = empty(shape, dtype);
  dev::convert(TensorView{const_cast<float*>(values.data()), DType::f32, shape}, t.view());
  return t.to(device);
}

Tensor Tensor::from_vector_i64(const std::vector<int64_t>& values, const Shape& shape, Device device) {
  if (static_cast<int64_t>(values.size()) != shape_numel(shape))
    throw ShapeError("from_vector_i64: " + std::to_string(values.size()) + " values for shape " +
                     shape_str(shape));
  Tensor t = empty(shape, DType::i64, device);
  dev::copy(TensorView{const_cast<int64_t*>(values.data()), DType::i64, shape}, t.view());
  return t;
}

Tensor Tensor::from_storage(std::shared_ptr<Storage> storage, const Shape& shape, DType dtype,
                            int64_t offset) {
  check_shape(shape);
  if (!storage) throw Error("from_storage: null storage");
  const size_t need = static_cast<size_t>(offset + shape_numel(shape)) * dtype_size(dtype);
  if (offset < 0 || need > storage->bytes())
    throw ShapeError("from_storage: " + std::string(dtype_name(dtype)) + " " + shape_str(shape) +
                     " at offset " + std::to_string(offset) + " needs " + std::to_string(need) +
                     " bytes, the storage holds " + std::to_string(storage->bytes()));
  Tensor t;
  t.impl_ = std::make_shared<TensorImpl>();
  t.impl_->storage = std::move(storage);
  t.impl_->offset = offset;
  t.impl_->dtype = dtype;
  t.impl_->shape = shape;
  t.impl_->strides = contiguous_strides(shape);
  return t;
}

Tensor Tensor::uniform(const Shape& shape, double lo, double hi, Generator& gen, DType dtype, Device device) {
  check_shape(shape);
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (double& x : v) x = gen.uniform(lo, hi);
  Tensor t = empty(shape, dtype);
  dev::convert(host_view(v, DType::f64), t.view());
  return t.to(device);
}

Tensor Tensor::normal(const Shape& shape, double mean, double stddev, Generator& gen, DType dtype,
                      Device device) {
  check_shape(shape);
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (double& x : v) x = gen.normal(mean, stddev);
  Tensor t = empty(shape, dtype);
  dev::convert(host_view(v, DType::f64), t.view());
  return t.to(device);
}

const Shape& Tensor::shape() const { return impl_->shape; }
const std::vector<int64_t>& Tensor::strides() const { return impl_->strides; }
int64_t Tensor::dim() const { return static_cast<int64_t>(impl_->shape.size()); }
int64_t Tensor::size(int64_t d) const {
  int64_t n = dim();
  int64_t a = d < 0 ? d + n : d;
  if (a < 0 || a >= n)
    throw ShapeError("size(" + std::to_string(d) + ") of a tensor of rank " + std::to_string(n));
  return impl_->shape[static_cast<size_t>(a)];
}
int64_t Tensor::numel() const { return shape_numel(impl_->shape); }
DType Tensor::dtype() const { return impl_->dtype; }

bool Tensor::is_contiguous() const { return impl_->strides == contiguous_strides(impl_->shape); }

std::string Tensor::str() const {
  if (!impl_) return "Tensor[undefined]";
  return std::string("Tensor[") + dtype_name(dtype()) + ", " + shape_str(shape()) + "]";
}

Device Tensor::device() const { return impl_->storage->device(); }

void* Tensor::device_data() const {
  return static_cast<char*>(impl_->storage->data()) +
         impl_->offset * static_cast<int64_t>(dtype_size(impl_->dtype));
}

namespace {
[[noreturn]] void host_access_on_device(const Tensor& t, const char* what) {
  std::string n = t.name().empty() ? std::string() : " '" + t.name() + "'";
  throw Error(std::string(what) + " on " + t.str() + n + ", which lives on " + device_name(t.device()) +
              ": host code cannot read device memory; use view() or .to(Device::cpu)");
}
}  // namespace

void* Tensor::raw_data() {
  if (device() != Device::cpu) host_access_on_device(*this, "raw_data()/data<T>()");
  return device_data();
}
const void* Tensor::raw_data() const {
  if (device() != Device::cpu) host_access_on_device(*this, "raw_data()/data<T>()");
  return device_data();
}

std::shared_ptr<Storage> Tensor::storage() const { return impl_->storage; }

TensorView Tensor::view() const {
  if (!is_contiguous()) throw Error("Tensor::view: " + str() + " is not contiguous");
  return TensorView{device_data(), dtype(), shape(), device()};
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  Tensor out = empty(shape(), dtype(), device());
  dev::strided_copy(TensorView{device_data(), dtype(), shape(), device()}, strides(), out.view());
  return out;
}

Tensor Tensor::clone() const {
  Tensor c = contiguous();
  if (!c.same(*this)) return c;
  Tensor out = empty(shape(), dtype(), device());
  dev::copy(view(), out.view());
  return out;
}

Tensor Tensor::to(DType dt) const {
  if (dt == dtype()) return clone();
  Tensor src = contiguous();
  Tensor out = empty(shape(), dt, device());
  dev::convert(src.view(), out.view());
  return out;
}

Tensor Tensor::to(Device d) const {
  if (d == device()) return *this;
  Tensor src = contiguous();
  Tensor out = empty(shape(), dtype(), d);
  dev::copy(src.view(), out.view());
  out.impl_->name = impl_->name;
  return out;
}

void Tensor::to_(Device d) {
  if (d == device()) return;
  Tensor moved = to(d);
  impl_->storage = moved.impl_->storage;
  impl_->offset = 0;
  impl_->strides = contiguous_strides(impl_->shape);
  if (impl_->grad.defined()) impl_->grad = impl_->grad.to(d);
}

void Tensor::copy_(const Tensor& src) {
  if (src.numel() != numel())
    throw ShapeError("copy_: source " + src.str() + " into " + str() + ": element counts differ");
  if (!is_contiguous()) throw Error("copy_: destination " + str() + " is not contiguous");
  Tensor s = src.contiguous();
  TensorView to = view();
  if (s.device() == device()) return dev::convert(s.view(), to);
  // across devices: convert where the source is, then move the bytes
  if (s.dtype() != dtype()) s = s.to(dtype());
  dev::copy(s.view(), to);
}

void Tensor::fill_(double value) { dev::fill(view(), value); }

std::vector<float> Tensor::to_float_vector() const {
  Tensor c = contiguous().to(Device::cpu);
  std::vector<float> v(static_cast<size_t>(numel()));
  dev::convert(c.view(), host_view(v, DType::f32));
  return v;
}

std::vector<int64_t> Tensor::to_i64_vector() const {
  Tensor c = contiguous().to(Device::cpu);
  std::vector<int64_t> v(static_cast<size_t>(numel()));
  dev::convert(c.view(), host_view(v, DType::i64));
  return v;
}

double Tensor::item() const {
  if (numel() != 1) throw ShapeError("item() of " + str() + ": needs exactly one element");
  TensorView one{device_data(), dtype(), Shape{}, device()};
  double v = 0.0;
  TensorView out{&v, DType::f64, Shape{}};
  if (device() == Device::cpu) {
    dev::convert(one, out);
  } else {
    alignas(8) unsigned char raw[8];
    TensorView staged{raw, dtype(), Shape{}};
    dev::copy(one, staged);
    dev::convert(staged, out);
  }
  return v;
}

Tensor Tensor::view_as_shape(const Shape& s) const {
  if (!is_contiguous()) throw Error("view_as_shape: " + str() + " is not contiguous");
  if (shape_numel(s) != numel())
    throw ShapeError("view " + str() + " as " + shape_str(s) + ": element counts differ");
  Tensor t;
  t.impl_ = std::make_shared<TensorImpl>();
  t.impl_->storage = impl_->storage;
  t.impl_->offset = impl_->offset;
  t.impl_->dtype = impl_->dtype;
  t.impl_->shape = s;
  t.impl_->strides = contiguous_strides(s);
  return t;
}

bool Tensor::requires_grad() const { return impl_ && impl_->requires_grad; }
Tensor& Tensor::set_requires_grad(bool r) {
  if (r && !is_floating(dtype()))
    throw Error("requires_grad on " + str() + ": only floating tensors take gradients");
  impl_->requires_grad = r;
  return *this;
}
Tensor Tensor::grad() const { return impl_->grad; }
void Tensor::set_grad(const Tensor& g) { impl_->grad = g; }
void Tensor::zero_grad() { impl_->grad = Tensor(); }
const std::shared_ptr<Node>& Tensor::grad_fn() const { return impl_->grad_fn; }
void Tensor::set_grad_fn(std::shared_ptr<Node> fn) { impl_->grad_fn = std::move(fn); }

Tensor Tensor::detach() const {
  Tensor t;
  t.impl_ = std::make_shared<TensorImpl>();
  t.impl_->storage = impl_->storage;
  t.impl_->offset = impl_->offset;
  t.impl_->dtype = impl_->dtype;
  t.impl_->shape = impl_->shape;
  t.impl_->strides = impl_->strides;
  return t;
}

void Tensor::backward(const Tensor& grad) const { run_backward(*this, grad); }

void Tensor::add_grad_ready_hook(std::function<void(Tensor&)> hook) {
  impl_->grad_ready_hooks.push_back(std::move(hook));
}
void Tensor::clear_grad_ready_hooks() { impl_->grad_ready_hooks.clear(); }

const std::string& Tensor::name() const { return impl_->name; }
void Tensor::set_name(const std::string& n) { impl_->name = n; }

}  // namespace strata
