#include "data/loader/augment.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "data/loader/order_planner.h"

namespace strata::data {

uint64_t augment_key(uint64_t seed, int64_t epoch, int64_t global_index) {
  // Chained splitmix64 rounds: each input passes through a full avalanche before
  // the next is mixed in, so neighbouring indices (or epochs) give unrelated keys.
  // The salt keeps this stream apart from the order planner's, which also starts
  // from `seed`.
  PlanRng a(seed ^ 0x6A09E667F3BCC909ull);
  PlanRng b(a.next() ^ static_cast<uint64_t>(epoch));
  PlanRng c(b.next() ^ static_cast<uint64_t>(global_index));
  return c.next();
}

ImageAugment::ImageAugment(const FieldSpec& spec, const AugmentU8& options)
    : padding_(options.crop_padding), hflip_(options.hflip) {
  const std::string where = "loader: augmentation of field '" + spec.name + "'";
  if (spec.variable) throw ConfigError(where + ": the field is variable-size");
  if (spec.dtype != "u8") throw ConfigError(where + " needs dtype u8, it is " + spec.dtype);
  if (spec.shape.size() == 2) {
    height_ = spec.shape[0];
    width_ = spec.shape[1];
  } else if (spec.shape.size() == 3) {
    channels_ = spec.shape[0];
    height_ = spec.shape[1];
    width_ = spec.shape[2];
  } else {
    throw ConfigError(where + " needs an (H, W) or (C, H, W) image, the field has rank " +
                      std::to_string(spec.shape.size()));
  }
  if (padding_ < 0) throw ConfigError(where + ": crop padding must be >= 0, got " + std::to_string(padding_));
}

AugmentDraw ImageAugment::draw(uint64_t key) const {
  PlanRng rng(key);
  AugmentDraw d;
  const auto span = static_cast<uint64_t>(2 * padding_ + 1);
  d.dy = static_cast<int64_t>(rng.below(span));
  d.dx = static_cast<int64_t>(rng.below(span));
  d.flip = hflip_ && (rng.next() >> 63) != 0;
  return d;
}

void ImageAugment::apply(const uint8_t* src, uint8_t* dst, const AugmentDraw& d) const {
  const int64_t H = height_, W = width_;
  const int64_t oy = d.dy - padding_, ox = d.dx - padding_;  // source = output + offset
  for (int64_t c = 0; c < channels_; ++c) {
    const uint8_t* in = src + c * H * W;
    uint8_t* out = dst + c * H * W;
    for (int64_t y = 0; y < H; ++y) {
      uint8_t* row = out + y * W;
      const int64_t sy = y + oy;
      std::memset(row, 0, static_cast<size_t>(W));
      if (sy < 0 || sy >= H) continue;
      const uint8_t* srow = in + sy * W;
      if (!d.flip) {  // row[x] = srow[x + ox]
        const int64_t x0 = std::max<int64_t>(0, -ox), x1 = std::min<int64_t>(W, W - ox);
        if (x1 > x0) std::memcpy(row + x0, srow + x0 + ox, static_cast<size_t>(x1 - x0));
      } else {  // row[x] = srow[W - 1 - x + ox]
        const int64_t x0 = std::max<int64_t>(0, ox), x1 = std::min<int64_t>(W, W + ox);
        for (int64_t x = x0; x < x1; ++x) row[x] = srow[W - 1 - x + ox];
      }
    }
  }
}

}  // namespace strata::data
