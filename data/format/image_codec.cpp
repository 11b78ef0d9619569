#include "data/format/image_codec.h"

#include <spng.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "base/error.h"

namespace strata::data {
namespace {

constexpr int64_t kMaxPixels = int64_t{1} << 28;  // a header claiming more is refused, not allocated

bool is_jpeg(const uint8_t* d, size_t n) { return n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF; }
bool is_png(const uint8_t* d, size_t n) {
  static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  return n >= 8 && std::memcmp(d, sig, 8) == 0;
}

// One TurboJPEG handle per decode thread, made on first use. After a failed
// call the handle is replaced: libjpeg-turbo 2.1 leaves a decompressor that
// failed inside tjDecompressHeader3 in a state where the next header it reads
// comes back as 0 x 0 pixels (seen packing a truncated JPEG among good ones).
struct TjHandle {
  tjhandle h = tjInitDecompress();
  ~TjHandle() {
    if (h) tjDestroy(h);
  }
};
thread_local TjHandle tj_thread_handle;

tjhandle tj_handle() {
  if (!tj_thread_handle.h) tj_thread_handle.h = tjInitDecompress();
  if (!tj_thread_handle.h) throw IoError("image: cannot create a TurboJPEG decompressor");
  return tj_thread_handle.h;
}

// The error of the thread's handle, which is then replaced by a fresh one.
[[noreturn]] void tj_fail(const char* what) {
  std::string msg = std::string(what) + tjGetErrorStr2(tj_thread_handle.h);
  tjDestroy(tj_thread_handle.h);
  tj_thread_handle.h = nullptr;
  throw IoError(msg);
}

struct SpngCtx {
  spng_ctx* ctx = spng_ctx_new(0);
  ~SpngCtx() {
    if (ctx) spng_ctx_free(ctx);
  }
};

void png_check(int rc, const char* what) {
  if (rc != 0) throw IoError(std::string("PNG ") + what + ": " + spng_strerror(rc));
}

void check_pixels(int64_t h, int64_t w) {
  if (h <= 0 || w <= 0 || h * w > kMaxPixels)
    throw IoError("image of " + std::to_string(w) + "x" + std::to_string(h) +
                  " pixels is empty or larger than the decoder accepts");
}

void to_grey(std::vector<uint8_t>& rgb, int64_t pixels) {
  // Pillow's "L" conversion (ITU-R 601-2 luma in 16-bit fixed point)
  for (int64_t i = 0; i < pixels; ++i) {
    const uint8_t* p = rgb.data() + i * 3;
    rgb[static_cast<size_t>(i)] =
        static_cast<uint8_t>((p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16);
  }
  rgb.resize(static_cast<size_t>(pixels));
}

DecodedImage decode_png(const uint8_t* data, size_t size, int64_t channels) {
  SpngCtx c;
  if (!c.ctx) throw IoError("image: cannot create a libspng context");
  png_check(spng_set_png_buffer(c.ctx, data, size), "buffer");
  spng_ihdr ihdr{};
  png_check(spng_get_ihdr(c.ctx, &ihdr), "header");
  DecodedImage img;
  img.height = ihdr.height;
  img.width = ihdr.width;
  check_pixels(img.height, img.width);
  size_t len = 0;
  png_check(spng_decoded_image_size(c.ctx, SPNG_FMT_RGB8, &len), "size");
  img.pixels.resize(len);
  png_check(spng_decode_image(c.ctx, img.pixels.data(), len, SPNG_FMT_RGB8, 0), "decode");
  img.channels = 3;
  if (channels == 1) {
    to_grey(img.pixels, img.height * img.width);
    img.channels = 1;
  }
  return img;
}

DecodedImage decode_jpeg(const uint8_t* data, size_t size, int64_t channels, int64_t min_h, int64_t min_w) {
  tjhandle tj = tj_handle();
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(tj, data, static_cast<unsigned long>(size), &w, &h, &subsamp, &colorspace) != 0)
    tj_fail("JPEG header: ");
  check_pixels(h, w);
  // The smallest DCT scaling factor (at most 1) that keeps the image at least min_h x min_w.
  int n = 0;
  tjscalingfactor* factors = tjGetScalingFactors(&n);
  tjscalingfactor best{1, 1};
  for (int i = 0; min_h > 0 && min_w > 0 && i < n; ++i) {
    const tjscalingfactor f = factors[i];
    if (f.num > f.denom) continue;
    if (TJSCALED(h, f) < min_h || TJSCALED(w, f) < min_w) continue;
    if (static_cast<int64_t>(f.num) * best.denom < static_cast<int64_t>(best.num) * f.denom) best = f;
  }
  DecodedImage img;
  img.height = TJSCALED(h, best);
  img.width = TJSCALED(w, best);
  img.channels = channels;
  img.pixels.resize(static_cast<size_t>(img.height * img.width * channels));
  // STOPONWARNING: a truncated file is an error, not an image padded with grey
  if (tjDecompress2(tj, data, static_cast<unsigned long>(size), img.pixels.data(),
                    static_cast<int>(img.width), 0, static_cast<int>(img.height),
                    channels == 1 ? TJPF_GRAY : TJPF_RGB, TJFLAG_STOPONWARNING | TJFLAG_ACCURATEDCT) != 0)
    tj_fail("JPEG: ");
  return img;
}

}  // namespace

void image_dimensions(const uint8_t* data, size_t size, int64_t* height, int64_t* width) {
  if (is_jpeg(data, size)) {
    int w = 0, h = 0, subsamp = 0, colorspace = 0;
    tjhandle tj = tj_handle();
    if (tjDecompressHeader3(tj, data, static_cast<unsigned long>(size), &w, &h, &subsamp, &colorspace) != 0)
      tj_fail("JPEG header: ");
    *height = h;
    *width = w;
  } else if (is_png(data, size)) {
    SpngCtx c;
    if (!c.ctx) throw IoError("image: cannot create a libspng context");
    png_check(spng_set_png_buffer(c.ctx, data, size), "buffer");
    spng_ihdr ihdr{};
    png_check(spng_get_ihdr(c.ctx, &ihdr), "header");
    *height = ihdr.height;
    *width = ihdr.width;
  } else {
    throw IoError("not a JPEG or PNG file (" + std::to_string(size) + " bytes)");
  }
  check_pixels(*height, *width);
}

DecodedImage decode_image(const uint8_t* data, size_t size, int64_t channels, int64_t min_h, int64_t min_w) {
  if (channels != 1 && channels != 3)
    throw ConfigError("image: channels must be 1 or 3, got " + std::to_string(channels));
  if (is_jpeg(data, size)) return decode_jpeg(data, size, channels, min_h, min_w);
  if (is_png(data, size)) return decode_png(data, size, channels);
  throw IoError("not a JPEG or PNG file (" + std::to_string(size) + " bytes)");
}

}  // namespace strata::data
