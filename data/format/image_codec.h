// Decoding JPEG (libjpeg-turbo's TurboJPEG API) and PNG (libspng) files to
// 8-bit greyscale or RGB pixels: what the loader's image decoding
// (data/loader/image_decode.h) and strata-pack files' check of every file use.
// EXIF orientation is ignored: pixels are used as stored.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata::data {

// A decoded image, interleaved (height x width x channels).
struct DecodedImage {
  int64_t height = 0, width = 0, channels = 0;
  std::vector<uint8_t> pixels;
};

// The dimensions of an encoded JPEG or PNG without decoding it; throws
// strata::IoError on anything else or a damaged header.
void image_dimensions(const uint8_t* data, size_t size, int64_t* height, int64_t* width);

// Decodes a JPEG or PNG to `channels` (1 or 3) 8-bit channels. For a JPEG,
// `min_h` x `min_w` asks for the smallest of TurboJPEG's DCT scaling factors
// (tjGetScalingFactors, at most 1) that keeps the image at least that large (0
// for either: full size); a PNG is always decoded whole. A file that is corrupt, truncated
// (TJFLAG_STOPONWARNING: libjpeg's "premature end" warning is an error here) or
// neither format throws strata::IoError with the library's message.
DecodedImage decode_image(const uint8_t* data, size_t size, int64_t channels, int64_t min_h = 0,
                          int64_t min_w = 0);

}  // namespace strata::data
