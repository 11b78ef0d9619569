#include "data/loader/transforms.h"

#include <cstring>
#include <utility>

#include "base/error.h"
#include "kernels/pixel_math.h"

namespace strata::data {

DType batch_dtype(const FieldSpec& spec) {
  // dtype_from_name() lives in the kernels library, which data/ does not link
  static constexpr std::pair<const char*, DType> kDTypes[] = {
      {"u8", DType::u8},   {"u16", DType::u16},   {"i32", DType::i32}, {"i64", DType::i64},
      {"f16", DType::f16}, {"bf16", DType::bf16}, {"f32", DType::f32}};
  for (const auto& [name, dtype] : kDTypes)
    if (spec.dtype == name) return dtype;
  throw ConfigError("loader: field '" + spec.name + "' has dtype '" + spec.dtype +
                    "', which a batch field cannot hold (u8, u16, i32, i64, f16, bf16, f32)");
}

FieldTransform::FieldTransform(const FieldSpec& in_spec, const NormalizeU8* normalize,
                               const AugmentU8* augment, const ImageDecodeOptions* decode) {
  out_spec_ = in_spec;
  if (in_spec.variable && !decode) {  // left out of batches
    dropped_ = true;
    if (normalize || augment)
      throw ConfigError(
          "loader: field '" + in_spec.name +
          "' is variable-size (encoded images need data.image_size); it cannot be normalised or "
          "augmented as it is");
    return;
  }
  if (decode) {
    if (!in_spec.variable || in_spec.dtype != "u8")
      throw ConfigError("loader: field '" + in_spec.name +
                        "' is not a variable-size u8 field of encoded images");
    if (augment)
      throw ConfigError(
          "loader: field '" + in_spec.name +
          "' holds encoded images; their augmentation is the decoder's (crop scale and ratio, flip)");
    decoder_ = std::make_shared<const ImageDecoder>(*decode);
    out_spec_ = FieldSpec{decode->out_field, "u8", {decode->channels, decode->size, decode->size}, false};
  }
  const FieldSpec& spec = out_spec_;
  out_dtype_ = batch_dtype(spec);
  in_bytes_ = spec.bytes_per_sample();
  out_bytes_ = in_bytes_;
  if (augment) augment_ = ImageAugment(spec, *augment);
  if (!normalize) return;
  if (spec.dtype != "u8")
    throw ConfigError("loader: normalise of field '" + spec.name + "' needs dtype u8, it is " + spec.dtype);
  const size_t channels = normalize->mean.size();
  if (channels == 0 || normalize->std.size() != channels)
    throw ConfigError("loader: normalise of field '" + spec.name +
                      "': mean and std must have the same, non-zero length");
  if (channels > 1 && (spec.shape.empty() || spec.shape[0] != static_cast<int64_t>(channels)))
    throw ConfigError("loader: normalise of field '" + spec.name + "' has " + std::to_string(channels) +
                      " channels but the field's first dimension is not that");
  per_channel_ = in_bytes_ / static_cast<int64_t>(channels);
  out_dtype_ = DType::f32;
  out_bytes_ = in_bytes_ * 4;
  // (x/255 - mean)/std = x*scale + bias: a multiply-add per element, which the
  // compiler vectorises (a lookup table would be a gather); the same math as the
  // device op normalize_u8 (kernels/pixel_math.h), which does this on a GPU.
  for (size_t c = 0; c < channels; ++c) {
    if (normalize->std[c] == 0.0f)
      throw ConfigError("loader: normalise of field '" + spec.name + "': std is 0");
    scale_.push_back(math::u8_scale(normalize->mean[c], normalize->std[c]));
    bias_.push_back(math::u8_bias(normalize->mean[c], normalize->std[c]));
  }
}

void FieldTransform::apply(const uint8_t* src, uint8_t* dst, uint64_t key, uint8_t* scratch) const {
  if (!augment_.enabled()) return apply(src, dst);
  const AugmentDraw d = augment_.draw(key);
  if (scale_.empty()) return augment_.apply(src, dst, d);  // u8 out: crop straight into the batch
  augment_.apply(src, scratch, d);
  normalize(scratch, dst);
}

void FieldTransform::decode(const uint8_t* src, size_t size, uint8_t* dst, uint64_t key,
                            uint8_t* scratch) const {
  if (scale_.empty()) return decoder_->decode(src, size, key, dst);  // u8 out: straight into the batch
  decoder_->decode(src, size, key, scratch);
  normalize(scratch, dst);
}

void FieldTransform::normalize(const uint8_t* src, uint8_t* dst) const {
  float* __restrict out = reinterpret_cast<float*>(dst);
  for (size_t c = 0; c < scale_.size(); ++c) {
    const float a = scale_[c], b = bias_[c];
    const uint8_t* __restrict in = src + static_cast<int64_t>(c) * per_channel_;
    float* __restrict o = out + static_cast<int64_t>(c) * per_channel_;
    for (int64_t i = 0; i < per_channel_; ++i) o[i] = math::normalize_u8(in[i], a, b);
  }
}

}  // namespace strata::data
