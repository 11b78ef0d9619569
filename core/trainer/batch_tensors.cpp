#include "core/trainer/batch_tensors.h"

#include <cstring>

#include "base/error.h"

namespace strata {

BatchTensors batch_to_tensors(const HostBatch& b, const std::string& input_field,
                              const std::string& label_field, const std::vector<int64_t>& sample_shape) {
  const HostArray& x = b.field(input_field);
  const HostArray& y = b.field(label_field);
  int64_t n = x.shape.empty() ? 0 : x.shape[0];
  Shape shape{n};
  shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
  if (shape_numel(shape) != x.numel())
    throw ShapeError("batch field '" + input_field + "' has shape " + shape_str(x.shape) +
                     ", which does not fit the model's sample shape " + shape_str(sample_shape));
  BatchTensors t;
  t.input = Tensor::empty(shape, DType::f32);
  float* dst = t.input.data<float>();
  if (x.dtype == "f32") {
    std::memcpy(dst, x.bytes.data(), static_cast<size_t>(x.numel()) * 4);
  } else if (x.dtype == "u8") {
    const uint8_t* src = x.as<uint8_t>();
    for (int64_t i = 0; i < x.numel(); ++i) dst[i] = static_cast<float>(src[i]) * (1.0f / 255.0f);
  } else {
    throw Error("batch field '" + input_field + "': dtype " + x.dtype +
                " is not supported as model input (f32, u8)");
  }
  if (y.numel() != n)
    throw ShapeError("batch field '" + label_field + "' has " + std::to_string(y.numel()) + " labels for " +
                     std::to_string(n) + " samples");
  t.labels = Tensor::empty({n}, DType::i64);
  int64_t* l = t.labels.data<int64_t>();
  if (y.dtype == "i64")
    std::memcpy(l, y.bytes.data(), static_cast<size_t>(n) * 8);
  else if (y.dtype == "i32")
    for (int64_t i = 0; i < n; ++i) l[i] = y.as<int32_t>()[i];
  else if (y.dtype == "u8")
    for (int64_t i = 0; i < n; ++i) l[i] = y.as<uint8_t>()[i];
  else
    throw Error("batch field '" + label_field + "': dtype " + y.dtype + " is not an integer label type");
  return t;
}

}  // namespace strata
