#include "train/trainer/batch_tensors.h"

#include <cstring>

#include "base/error.h"
#include "kernels/device_ops.h"

namespace strata {
namespace {

void normalize(const TensorView& src, const Tensor& dst, const InputNormalization& norm,
               const std::string& field) {
  if (norm.mean.size() != norm.std.size())
    throw ConfigError("input normalisation of field '" + field + "': " + std::to_string(norm.mean.size()) +
                      " means and " + std::to_string(norm.std.size()) + " stds");
  dev::normalize_u8(src, dst.view(), norm.mean.data(), norm.std.data(), norm.mean.size());
}

// Labels of a fed batch, on its device: i64 as they are, other integers converted there.
Tensor device_labels(const Tensor& y, int64_t n, const std::string& field) {
  if (y.dtype() == DType::i64) return y.view_as_shape({n});
  if (y.dtype() != DType::i32 && y.dtype() != DType::u8)
    throw Error("batch field '" + field + "': dtype " + dtype_name(y.dtype()) +
                " is not an integer label type");
  Tensor l = Tensor::empty({n}, DType::i64, y.device());
  dev::convert(y.view(), l.view());
  return l;
}

}  // namespace

Tensor host_field_tensor(const FedBatch& fb, const HostArray& a, const Shape& shape, DType dtype) {
  const size_t bytes = static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype);
  if (a.dtype != dtype || bytes > a.bytes.size())
    throw Error("batch field '" + a.name + "': " + std::to_string(a.bytes.size()) + " bytes of " +
                dtype_name(a.dtype) + " read as " + shape_str(shape) + " of " + dtype_name(dtype));
  if (fb.owner) {
    // The bytes are the owner's; nothing writes them while the owner lives (device_feeder.h).
    auto storage = Storage::wrap(const_cast<std::byte*>(a.bytes.data()), bytes, Device::cpu,
                                 [owner = fb.owner] { (void)owner; });
    return Tensor::from_storage(std::move(storage), shape, dtype);
  }
  Tensor t = Tensor::empty(shape, dtype);
  if (bytes) std::memcpy(t.raw_data(), a.bytes.data(), bytes);
  return t;
}

BatchTensors batch_to_tensors(const FedBatch& fb, const std::string& input_field,
                              const std::string& label_field, const std::vector<int64_t>& sample_shape,
                              const InputNormalization& norm, DType u8_input_dtype) {
  const HostBatch& b = *fb.host;
  const HostArray& x = b.field(input_field);
  const HostArray& y = b.field(label_field);
  int64_t n = x.shape.empty() ? 0 : x.shape[0];
  Shape shape{n};
  shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
  if (shape_numel(shape) != x.numel())
    throw ShapeError("batch field '" + input_field + "' has shape " + shape_str(x.shape) +
                     ", which does not fit the model's sample shape " + shape_str(sample_shape));
  if (x.dtype != DType::f32 && x.dtype != DType::u8)
    throw Error("batch field '" + input_field + "': dtype " + dtype_name(x.dtype) +
                " is not supported as model input (f32, u8)");
  if (y.numel() != n)
    throw ShapeError("batch field '" + label_field + "' has " + std::to_string(y.numel()) + " labels for " +
                     std::to_string(n) + " samples");
  BatchTensors t;
  if (const Tensor* dx = fb.device_field(input_field)) {
    const Tensor in = dx->view_as_shape(shape);
    if (x.dtype == DType::f32) {
      t.input = in;
    } else {
      t.input = Tensor::empty(shape, u8_input_dtype, in.device());
      normalize(in.view(), t.input, norm, input_field);
    }
    t.labels = device_labels(*fb.device_field(label_field), n, label_field);
    return t;
  }
  if (x.dtype == DType::f32) {
    t.input = host_field_tensor(fb, x, shape, DType::f32);
  } else {
    t.input = Tensor::empty(shape, u8_input_dtype);
    normalize(TensorView{const_cast<std::byte*>(x.bytes.data()), DType::u8, shape, Device::cpu}, t.input,
              norm, input_field);
  }
  if (y.dtype == DType::i64) {
    t.labels = host_field_tensor(fb, y, {n}, DType::i64);
    return t;
  }
  t.labels = Tensor::empty({n}, DType::i64);
  int64_t* l = t.labels.data<int64_t>();
  if (y.dtype == DType::i32)
    for (int64_t i = 0; i < n; ++i) l[i] = y.as<int32_t>()[i];
  else if (y.dtype == DType::u8)
    for (int64_t i = 0; i < n; ++i) l[i] = y.as<uint8_t>()[i];
  else
    throw Error("batch field '" + label_field + "': dtype " + dtype_name(y.dtype) +
                " is not an integer label type");
  return t;
}

}  // namespace strata
