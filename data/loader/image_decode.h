// Decoding encoded images (JPEG, PNG) of a variable-size field into a fixed
// u8 [C, S, S] image, in the loader's decode threads, with the augmentation
// torchvision users know:
//   training:   RandomResizedCrop(S, scale, ratio) + horizontal flip + optional
//               ColorJitter(brightness, contrast, saturation);
//   evaluation: resize the shorter side to round(S / resize_ratio), centre crop S.
// JPEG goes through libjpeg-turbo's TurboJPEG API, decoded at the smallest of its
// DCT scaling factors (tjGetScalingFactors) that still leaves the crop at least S
// pixels on each side; PNG through libspng. Resampling is bilinear with Pillow's
// antialias (a triangle filter widened by the downscale factor; Pillow's
// Image.resize(..., BILINEAR, box=...)), the same as torchvision's antialias=True.
// EXIF orientation is ignored: pixels are used as stored.
//
// Every random draw is a pure function of the sample key (augment_key(seed,
// epoch, sample)), so a sample's image does not depend on the thread, the world
// size or a resume.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "data/format/image_codec.h"
#include "data/format/plan_rng.h"

namespace strata::data {

struct ImageDecodeOptions {
  std::string field = "bytes";      // the variable-size field holding the encoded file
  std::string out_field = "image";  // the batch field: u8 [channels, size, size]
  std::string name_field = "name";  // variable-size field with the original file name (errors); optional
  int64_t size = 224;               // output height and width
  int64_t channels = 3;             // 3: RGB, 1: greyscale
  bool random_crop = false;         // RandomResizedCrop (training) instead of resize + centre crop
  std::array<double, 2> crop_scale{0.08, 1.0};
  std::array<double, 2> crop_ratio{3.0 / 4.0, 4.0 / 3.0};
  double hflip = 0.0;                           // probability of a horizontal flip
  std::array<double, 3> color_jitter{0, 0, 0};  // brightness, contrast, saturation; 0 = off
  double resize_ratio = 0.875;                  // evaluation: crop S of the shorter side resized to S/ratio
  bool skip_bad = false;  // a corrupt image becomes an all-zero image (counted) instead of an error
};

// A box in source pixels: rows [y, y + h), columns [x, x + w).
struct CropBox {
  double y = 0, x = 0, h = 0, w = 0;
};

// torchvision's RandomResizedCrop.get_params on an H x W image: up to 10 attempts
// at an area fraction in `scale` and a log-uniform aspect ratio in `ratio`; then
// the centre crop of the whole image clamped to `ratio`. Integer boxes.
CropBox random_resized_crop_box(int64_t H, int64_t W, const std::array<double, 2>& scale,
                                const std::array<double, 2>& ratio, PlanRng& rng);

// Bilinear resampling with Pillow's antialias of the box `box` of `src` (h x w x
// c, interleaved) to `out_h` x `out_w` (interleaved), two passes (horizontal,
// then vertical) with the intermediate rounded to u8, as Pillow does.
void resample_bilinear(const uint8_t* src, int64_t h, int64_t w, int64_t c, const CropBox& box, uint8_t* dst,
                       int64_t out_h, int64_t out_w);

class ImageDecoder {
 public:
  explicit ImageDecoder(ImageDecodeOptions options);
  const ImageDecodeOptions& options() const { return opts_; }
  int64_t out_bytes() const { return opts_.channels * opts_.size * opts_.size; }
  // Decodes the encoded image `data` into `dst` (u8 [C, S, S]), with the draw
  // seeded by `key`. Throws strata::IoError when the image cannot be decoded.
  void decode(const uint8_t* data, size_t size, uint64_t key, uint8_t* dst) const;

 private:
  ImageDecodeOptions opts_;
};

}  // namespace strata::data
