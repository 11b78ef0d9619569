#include "core/tensor.h"

#include <cstring>
#include <sstream>

#include "core/autograd.h"
#include "base/error.h"
#include "core/random.h"
#include "kernels/half.h"

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

double load(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::f32:
      return static_cast<const float*>(p)[i];
    case DType::f16:
      return f16_bits_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::bf16:
      return bf16_bits_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::i32:
      return static_cast<const int32_t*>(p)[i];
    case DType::i64:
      return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::u8:
      return static_cast<const uint8_t*>(p)[i];
    case DType::f64:
      return static_cast<const double*>(p)[i];
  }
  return 0;
}

void store(void* p, DType t, int64_t i, double v) {
  switch (t) {
    case DType::f32:
      static_cast<float*>(p)[i] = static_cast<float>(v);
      break;
    case DType::f16:
      static_cast<uint16_t*>(p)[i] = float_to_f16_bits(static_cast<float>(v));
      break;
    case DType::bf16:
      static_cast<uint16_t*>(p)[i] = float_to_bf16_bits(static_cast<float>(v));
      break;
    case DType::i32:
      static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v);
      break;
    case DType::i64:
      static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v);
      break;
    case DType::u8:
      static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v);
      break;
    case DType::f64:
      static_cast<double*>(p)[i] = v;
      break;
  }
}

// Converts n contiguous elements between dtypes (fast paths for the float types).
void convert(const void* src, DType st, void* dst, DType dt, int64_t n) {
  size_t un = static_cast<size_t>(n);
  if (st == dt) {
    std::memcpy(dst, src, un * dtype_size(st));
    return;
  }
  auto* s16 = static_cast<const uint16_t*>(src);
  auto* d16 = static_cast<uint16_t*>(dst);
  if (st == DType::f16 && dt == DType::f32) return f16_to_f32(s16, static_cast<float*>(dst), un);
  if (st == DType::bf16 && dt == DType::f32) return bf16_to_f32(s16, static_cast<float*>(dst), un);
  if (st == DType::f32 && dt == DType::f16) return f32_to_f16(static_cast<const float*>(src), d16, un);
  if (st == DType::f32 && dt == DType::bf16) return f32_to_bf16(static_cast<const float*>(src), d16, un);
  for (int64_t i = 0; i < n; ++i) store(dst, dt, i, load(src, st, i));
}

}  // namespace

Tensor Tensor::empty(const Shape& shape, DType dtype) {
  check_shape(shape);
  Tensor t;
  t.impl_ = std::make_shared<TensorImpl>();
  t.impl_->storage = std::make_shared<Storage>(static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype));
  t.impl_->dtype = dtype;
  t.impl_->shape = shape;
  t.impl_->strides = contiguous_strides(shape);
  return t;
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype) {
  Tensor t = empty(shape, dtype);
  t.fill_(value);
  return t;
}

Tensor Tensor::from_vector(const std::vector<float>& values, const Shape& shape, DType dtype) {
  if (static_cast<int64_t>(values.size()) != shape_numel(shape))
    throw ShapeError("from_vector: " + std::to_string(values.size()) + " values for shape " +
                     shape_str(shape));
  Tensor t = empty(shape, dtype);
  convert(values.data(), DType::f32, t.raw_data(), dtype, t.numel());
  return t;
}

Tensor Tensor::from_vector_i64(const std::vector<int64_t>& values, const Shape& shape) {
  if (static_cast<int64_t>(values.size()) != shape_numel(shape))
    throw ShapeError("from_vector_i64: " + std::to_string(values.size()) + " values for shape " +
                     shape_str(shape));
  Tensor t = empty(shape, DType::i64);
  std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

Tensor Tensor::uniform(const Shape& shape, double lo, double hi, Generator& gen, DType dtype) {
  Tensor t = empty(shape, dtype);
  for (int64_t i = 0; i < t.numel(); ++i) store(t.raw_data(), dtype, i, gen.uniform(lo, hi));
  return t;
}

Tensor Tensor::normal(const Shape& shape, double mean, double stddev, Generator& gen, DType dtype) {
  Tensor t = empty(shape, dtype);
  for (int64_t i = 0; i < t.numel(); ++i) store(t.raw_data(), dtype, i, gen.normal(mean, stddev));
  return t;
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

void* Tensor::raw_data() {
  return static_cast<char*>(impl_->storage->data()) +
         impl_->offset * static_cast<int64_t>(dtype_size(impl_->dtype));
}
const void* Tensor::raw_data() const {
  return static_cast<const char*>(impl_->storage->data()) +
         impl_->offset * static_cast<int64_t>(dtype_size(impl_->dtype));
}

std::shared_ptr<Storage> Tensor::storage() const { return impl_->storage; }

TensorView Tensor::view() const {
  if (!is_contiguous()) throw Error("Tensor::view: " + str() + " is not contiguous");
  return TensorView{const_cast<void*>(raw_data()), dtype(), shape()};
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  Tensor out = empty(shape(), dtype());
  int64_t n = numel();
  size_t es = dtype_size(dtype());
  auto* src = static_cast<const char*>(raw_data());
  auto* dst = static_cast<char*>(out.raw_data());
  const auto& sh = shape();
  const auto& st = strides();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, off = 0;
    for (size_t d = sh.size(); d-- > 0;) {
      off += (rem % sh[d]) * st[d];
      rem /= sh[d];
    }
    std::memcpy(dst + i * static_cast<int64_t>(es), src + off * static_cast<int64_t>(es), es);
  }
  return out;
}

Tensor Tensor::clone() const {
  Tensor c = contiguous();
  if (c.same(*this)) {
    Tensor out = empty(shape(), dtype());
    std::memcpy(out.raw_data(), raw_data(), static_cast<size_t>(numel()) * dtype_size(dtype()));
    return out;
  }
  return c;
}

Tensor Tensor::to(DType dt) const {
  Tensor src = contiguous();
  if (dt == dtype()) return src.clone();
  Tensor out = empty(shape(), dt);
  convert(src.raw_data(), dtype(), out.raw_data(), dt, numel());
  return out;
}

void Tensor::copy_(const Tensor& src) {
  if (src.numel() != numel())
    throw ShapeError("copy_: source " + src.str() + " into " + str() + ": element counts differ");
  if (!is_contiguous()) throw Error("copy_: destination " + str() + " is not contiguous");
  Tensor s = src.contiguous();
  convert(s.raw_data(), s.dtype(), raw_data(), dtype(), numel());
}

void Tensor::fill_(double value) {
  int64_t n = numel();
  if (dtype() == DType::f32) {
    float v = static_cast<float>(value);
    float* p = data<float>();
    for (int64_t i = 0; i < n; ++i) p[i] = v;
    return;
  }
  for (int64_t i = 0; i < n; ++i) store(raw_data(), dtype(), i, value);
}

std::vector<float> Tensor::to_float_vector() const {
  Tensor c = contiguous();
  std::vector<float> v(static_cast<size_t>(numel()));
  convert(c.raw_data(), dtype(), v.data(), DType::f32, numel());
  return v;
}

std::vector<int64_t> Tensor::to_i64_vector() const {
  Tensor c = contiguous();
  std::vector<int64_t> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i)
    v[static_cast<size_t>(i)] = static_cast<int64_t>(load(c.raw_data(), dtype(), i));
  return v;
}

double Tensor::item() const {
  if (numel() != 1) throw ShapeError("item() of " + str() + ": needs exactly one element");
  return load(raw_data(), dtype(), 0);
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
