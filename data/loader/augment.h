// Random crop with zero padding and random horizontal flip of u8 image fields,
// applied by the decode threads before a field's copy / normalise (transforms.h).
//
// Every draw is a pure function of (seed, epoch, the sample's global index in the
// dataset): no generator state is carried from sample to sample, so the augmented
// bytes of a sample do not depend on which thread decodes it, on the world size,
// or on where in the epoch a resumed run starts. Fields of one sample share the
// draw (an image and a mask stay aligned).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/format/manifest.h"

namespace strata::data {

// Options for one field; a field not named in LoaderOptions::augment is left alone.
struct AugmentU8 {
  std::string field;
  int64_t crop_padding = 0;  // P: pad by P zero pixels each side, crop back at a random offset; 0 = off
  bool hflip = false;        // mirror left-right with probability 1/2
};

// One sample's draw: crop offsets into the padded image, in [0, 2P], and the flip.
struct AugmentDraw {
  int64_t dy = 0, dx = 0;
  bool flip = false;
};

// The per-sample key that seeds the draw.
uint64_t augment_key(uint64_t seed, int64_t epoch, int64_t global_index);

// The compiled augmentation of one field of shape (H, W) or (C, H, W).
class ImageAugment {
 public:
  ImageAugment() = default;  // disabled
  ImageAugment(const FieldSpec& spec, const AugmentU8& options);
  bool enabled() const { return padding_ > 0 || hflip_; }
  int64_t bytes() const { return channels_ * height_ * width_; }
  AugmentDraw draw(uint64_t key) const;
  // out[c][y][x] = in[c][y + dy - P][x' + dx - P] (0 outside the image), where
  // x' = W-1-x when flipped, else x. `src` and `dst` hold bytes() and do not overlap.
  void apply(const uint8_t* src, uint8_t* dst, const AugmentDraw& d) const;

 private:
  int64_t channels_ = 1, height_ = 0, width_ = 0;
  int64_t padding_ = 0;
  bool hflip_ = false;
};

}  // namespace strata::data
