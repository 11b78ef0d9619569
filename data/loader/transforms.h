// Per-sample field transforms applied while collating a batch. Each transform
// writes one sample's field straight into its slot of the batch buffer, so a
// batch costs one copy of its bytes and no per-sample allocation. An augmented
// field (augment.h) is first cropped / flipped, then copied or normalised. A
// variable-size field is either decoded as an image (image_decode.h) into a
// fixed u8 [C, S, S] batch field, then normalised like any u8 image, or left
// out of the batch (dropped(): a file name kept for messages).
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "data/format/manifest.h"
#include "data/loader/augment.h"
#include "data/loader/image_decode.h"
#include "kernels/runtime/dtype.h"

namespace strata::data {

// Normalise a u8 field to f32: out = (x / 255 - mean[c]) / std[c], where c is the
// channel (first dimension of the per-sample shape) when mean/std have more
// than one entry. A field without a transform is copied as it is.
struct NormalizeU8 {
  std::string field;
  std::vector<float> mean{0.0f};
  std::vector<float> std{1.0f};
};

// The DType a batch field of `spec` carries: the manifest keeps its string
// notation ("u8", "u16", ...), converted here once per field. Throws ConfigError
// naming the field and its dtype when that has no DType.
DType batch_dtype(const FieldSpec& spec);

// The compiled form for one field: output dtype, bytes per sample, and the copy.
class FieldTransform {
 public:
  // `decode`: the field is variable-size and holds encoded images (else a
  // variable-size field is dropped).
  FieldTransform(const FieldSpec& spec, const NormalizeU8* normalize, const AugmentU8* augment = nullptr,
                 const ImageDecodeOptions* decode = nullptr);
  // The batch field this makes: its name and per-sample shape.
  const std::string& out_name() const { return out_spec_.name; }
  const std::vector<int64_t>& out_shape() const { return out_spec_.shape; }
  // A variable-size field that is not decoded: no batch field.
  bool dropped() const { return dropped_; }
  bool decodes() const { return decoder_ != nullptr; }
  bool skip_bad() const { return decoder_ && decoder_->options().skip_bad; }
  // The variable-size field holding each image's original file name ("" when not decoding).
  std::string name_field() const { return decoder_ ? decoder_->options().name_field : std::string(); }
  // The decoded form: `src` holds `size` encoded bytes; `scratch` holds in_bytes().
  // Throws strata::IoError when the image cannot be decoded.
  void decode(const uint8_t* src, size_t size, uint8_t* dst, uint64_t key, uint8_t* scratch) const;
  DType out_dtype() const { return out_dtype_; }
  int64_t out_bytes() const { return out_bytes_; }
  int64_t in_bytes() const { return in_bytes_; }
  // `src` holds in_bytes(), `dst` receives out_bytes().
  void apply(const uint8_t* src, uint8_t* dst) const {
    if (scale_.empty())
      std::memcpy(dst, src, static_cast<size_t>(in_bytes_));  // inline: runs per sample
    else
      normalize(src, dst);
  }
  // Whether apply() or decode() needs a sample key (the field is augmented or decoded).
  bool augments() const { return augment_.enabled() || decoder_ != nullptr; }
  // The augmented form: `key` (augment_key) seeds the draw; `scratch` holds
  // in_bytes() for the augmented image before it is normalised.
  void apply(const uint8_t* src, uint8_t* dst, uint64_t key, uint8_t* scratch) const;

 private:
  void normalize(const uint8_t* src, uint8_t* dst) const;
  DType out_dtype_ = DType::u8;
  int64_t in_bytes_ = 0;
  int64_t out_bytes_ = 0;
  int64_t per_channel_ = 0;          // elements per channel (normalise only)
  std::vector<float> scale_, bias_;  // per channel; empty = plain copy
  ImageAugment augment_;             // disabled unless the field is augmented
  FieldSpec out_spec_;
  bool dropped_ = false;
  std::shared_ptr<const ImageDecoder> decoder_;  // set for an image field
};

}  // namespace strata::data
