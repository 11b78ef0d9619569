#include "data/transforms.h"

#include <cstring>

#include "core/error.h"

namespace strata::data {

FieldTransform::FieldTransform(const FieldSpec& spec, const NormalizeU8* normalize) {
  if (spec.variable)
    throw ConfigError("loader: field '" + spec.name + "' is variable-size; batches need fixed-size fields");
  in_bytes_ = spec.bytes_per_sample();
  out_dtype_ = spec.dtype;
  out_bytes_ = in_bytes_;
  if (!normalize) return;
  if (spec.dtype != "u8")
    throw ConfigError("loader: normalise of field '" + spec.name + "' needs dtype u8, it is " + spec.dtype);
  const size_t channels = normalize->mean.size();
  if (channels == 0 || normalize->std.size() != channels)
    throw ConfigError("loader: normalise of field '" + spec.name + "': mean and std must have the same, non-zero length");
  if (channels > 1 && (spec.shape.empty() || spec.shape[0] != static_cast<int64_t>(channels)))
    throw ConfigError("loader: normalise of field '" + spec.name + "' has " + std::to_string(channels) +
                      " channels but the field's first dimension is not that");
  per_channel_ = in_bytes_ / static_cast<int64_t>(channels);
  out_dtype_ = "f32";
  out_bytes_ = in_bytes_ * 4;
  // A table per channel: one load per element instead of a divide and a subtract.
  lut_.resize(256 * channels);
  for (size_t c = 0; c < channels; ++c) {
    if (normalize->std[c] == 0.0f) throw ConfigError("loader: normalise of field '" + spec.name + "': std is 0");
    for (int v = 0; v < 256; ++v)
      lut_[c * 256 + v] = (static_cast<float>(v) / 255.0f - normalize->mean[c]) / normalize->std[c];
  }
}

void FieldTransform::normalize(const uint8_t* src, uint8_t* dst) const {
  float* out = reinterpret_cast<float*>(dst);
  const int64_t channels = static_cast<int64_t>(lut_.size() / 256);
  for (int64_t c = 0; c < channels; ++c) {
    const float* lut = lut_.data() + c * 256;
    for (int64_t i = c * per_channel_, e = i + per_channel_; i < e; ++i) out[i] = lut[src[i]];
  }
}

}  // namespace strata::data
