#include "data/loader/image_decode.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "base/error.h"

namespace strata::data {
namespace {

double uniform(PlanRng& rng, double lo, double hi) {
  const double u = static_cast<double>(rng.next() >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
  return lo + (hi - lo) * u;
}

// Pillow's Resample.c: coefficients of one axis, in its 22-bit fixed point.
constexpr int kPrecisionBits = 32 - 8 - 2;

struct Coeffs {
  int64_t ksize = 0;
  std::vector<int64_t> bounds;  // per output: first input, count
  std::vector<int32_t> k;       // per output: ksize weights
};

Coeffs precompute(int64_t in_size, double in0, double in1, int64_t out_size) {
  Coeffs c;
  const double scale = (in1 - in0) / static_cast<double>(out_size);
  const double filterscale = std::max(scale, 1.0);
  const double support = 1.0 * filterscale;  // bilinear: support 1
  c.ksize = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  c.bounds.resize(static_cast<size_t>(out_size) * 2);
  c.k.assign(static_cast<size_t>(out_size * c.ksize), 0);
  std::vector<double> w(static_cast<size_t>(c.ksize));
  for (int64_t xx = 0; xx < out_size; ++xx) {
    const double center = in0 + (static_cast<double>(xx) + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    auto xmin = static_cast<int64_t>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    auto xmax = static_cast<int64_t>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    xmax = std::min(xmax, c.ksize);
    double ww = 0;
    for (int64_t x = 0; x < xmax; ++x) {
      const double t = std::fabs((static_cast<double>(x + xmin) - center + 0.5) * ss);
      w[static_cast<size_t>(x)] = t < 1.0 ? 1.0 - t : 0.0;
      ww += w[static_cast<size_t>(x)];
    }
    for (int64_t x = 0; x < xmax; ++x) {
      const double v = ww != 0.0 ? w[static_cast<size_t>(x)] / ww : 0.0;
      c.k[static_cast<size_t>(xx * c.ksize + x)] =
          static_cast<int32_t>(v < 0 ? -0.5 + v * (1 << kPrecisionBits) : 0.5 + v * (1 << kPrecisionBits));
    }
    c.bounds[static_cast<size_t>(xx) * 2] = xmin;
    c.bounds[static_cast<size_t>(xx) * 2 + 1] = std::max<int64_t>(xmax, 0);
  }
  return c;
}

uint8_t clip8(int32_t ss) {
  const int32_t v = ss >> kPrecisionBits;
  return static_cast<uint8_t>(std::clamp<int32_t>(v, 0, 255));
}

}  // namespace

CropBox random_resized_crop_box(int64_t H, int64_t W, const std::array<double, 2>& scale,
                                const std::array<double, 2>& ratio, PlanRng& rng) {
  const double area = static_cast<double>(H) * static_cast<double>(W);
  const double log_lo = std::log(ratio[0]), log_hi = std::log(ratio[1]);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * uniform(rng, scale[0], scale[1]);
    const double aspect = std::exp(uniform(rng, log_lo, log_hi));
    const auto w = static_cast<int64_t>(std::nearbyint(std::sqrt(target * aspect)));
    const auto h = static_cast<int64_t>(std::nearbyint(std::sqrt(target / aspect)));
    if (0 < w && w <= W && 0 < h && h <= H) {
      const auto i = static_cast<int64_t>(rng.below(static_cast<uint64_t>(H - h + 1)));
      const auto j = static_cast<int64_t>(rng.below(static_cast<uint64_t>(W - w + 1)));
      return {static_cast<double>(i), static_cast<double>(j), static_cast<double>(h), static_cast<double>(w)};
    }
  }
  // fallback: the whole image's centre, its aspect clamped into `ratio`
  const double in_ratio = static_cast<double>(W) / static_cast<double>(H);
  int64_t w = W, h = H;
  if (in_ratio < std::min(ratio[0], ratio[1])) {
    h = static_cast<int64_t>(std::nearbyint(static_cast<double>(w) / std::min(ratio[0], ratio[1])));
  } else if (in_ratio > std::max(ratio[0], ratio[1])) {
    w = static_cast<int64_t>(std::nearbyint(static_cast<double>(h) * std::max(ratio[0], ratio[1])));
  }
  return {static_cast<double>((H - h) / 2), static_cast<double>((W - w) / 2), static_cast<double>(h),
          static_cast<double>(w)};
}

namespace {

// The two passes of resample_bilinear, with kC channels known at compile time
// (1 or 3) or, for kC = 0, `c` of them. The sums are 32-bit as in Pillow's
// Resample.c: the weights of a bilinear kernel are non-negative and add up to
// about 2^22, so a sum of u8 values times them stays below
// 2^21 + 255 * (2^22 + ksize) < 2^31. The
// vertical pass walks each output row's taps outermost, adding one source row at
// a time into a row of sums, which the compiler vectorises; integer sums do not
// depend on their order, so the bytes are those of the plain loop
// (test_image_decode.cpp compares them with it).
template <int64_t kC>
void resample_passes(const uint8_t* src, int64_t w, int64_t c, const Coeffs& kx, const Coeffs& ky, int64_t y0,
                     int64_t y1, uint8_t* dst, int64_t out_h, int64_t out_w) {
  const int64_t C = kC > 0 ? kC : c;
  const int64_t row_elems = out_w * C;
  std::vector<uint8_t> tmp(static_cast<size_t>((y1 - y0) * row_elems));
  constexpr int32_t kHalf = int32_t{1} << (kPrecisionBits - 1);
  for (int64_t y = y0; y < y1; ++y) {
    const uint8_t* row = src + y * w * C;
    uint8_t* trow = tmp.data() + (y - y0) * row_elems;
    for (int64_t xx = 0; xx < out_w; ++xx) {
      const int64_t xmin = kx.bounds[static_cast<size_t>(xx) * 2],
                    xn = kx.bounds[static_cast<size_t>(xx) * 2 + 1];
      const int32_t* k = kx.k.data() + xx * kx.ksize;
      const uint8_t* in = row + xmin * C;
      if constexpr (kC > 0) {  // the channels of a pixel together, each weight loaded once
        int32_t ss[kC];
        for (int64_t ch = 0; ch < kC; ++ch) ss[ch] = kHalf;
        for (int64_t x = 0; x < xn; ++x)
          for (int64_t ch = 0; ch < kC; ++ch) ss[ch] += static_cast<int32_t>(in[x * kC + ch]) * k[x];
        for (int64_t ch = 0; ch < kC; ++ch) trow[xx * kC + ch] = clip8(ss[ch]);
      } else {
        for (int64_t ch = 0; ch < C; ++ch) {
          int32_t ss = kHalf;
          for (int64_t x = 0; x < xn; ++x) ss += static_cast<int32_t>(in[x * C + ch]) * k[x];
          trow[xx * C + ch] = clip8(ss);
        }
      }
    }
  }
  std::vector<int32_t> acc(static_cast<size_t>(row_elems));
  for (int64_t yy = 0; yy < out_h; ++yy) {
    const int64_t ymin = ky.bounds[static_cast<size_t>(yy) * 2],
                  yn = ky.bounds[static_cast<size_t>(yy) * 2 + 1];
    const int32_t* k = ky.k.data() + yy * ky.ksize;
    int32_t* __restrict a = acc.data();
    for (int64_t i = 0; i < row_elems; ++i) a[i] = kHalf;
    for (int64_t y = 0; y < yn; ++y) {
      const uint8_t* __restrict trow = tmp.data() + (ymin + y - y0) * row_elems;
      const int32_t ky_y = k[y];
      for (int64_t i = 0; i < row_elems; ++i) a[i] += static_cast<int32_t>(trow[i]) * ky_y;
    }
    uint8_t* __restrict orow = dst + yy * row_elems;
    for (int64_t i = 0; i < row_elems; ++i) orow[i] = clip8(a[i]);
  }
}

}  // namespace

void resample_bilinear(const uint8_t* src, int64_t h, int64_t w, int64_t c, const CropBox& box, uint8_t* dst,
                       int64_t out_h, int64_t out_w) {
  const Coeffs kx = precompute(w, box.x, box.x + box.w, out_w);
  const Coeffs ky = precompute(h, box.y, box.y + box.h, out_h);
  // rows of the source the vertical pass reads
  int64_t y0 = h, y1 = 0;
  for (int64_t yy = 0; yy < out_h; ++yy) {
    y0 = std::min(y0, ky.bounds[static_cast<size_t>(yy) * 2]);
    y1 = std::max(y1, ky.bounds[static_cast<size_t>(yy) * 2] + ky.bounds[static_cast<size_t>(yy) * 2 + 1]);
  }
  if (y1 < y0) y1 = y0;
  if (c == 3) return resample_passes<3>(src, w, c, kx, ky, y0, y1, dst, out_h, out_w);
  if (c == 1) return resample_passes<1>(src, w, c, kx, ky, y0, y1, dst, out_h, out_w);
  resample_passes<0>(src, w, c, kx, ky, y0, y1, dst, out_h, out_w);
}

ImageDecoder::ImageDecoder(ImageDecodeOptions options) : opts_(std::move(options)) {
  const std::string where = "loader: image decoding of field '" + opts_.field + "'";
  if (opts_.size < 1)
    throw ConfigError(where + ": image size must be >= 1, got " + std::to_string(opts_.size));
  if (opts_.channels != 1 && opts_.channels != 3)
    throw ConfigError(where + ": channels must be 1 or 3, got " + std::to_string(opts_.channels));
  if (!(opts_.crop_scale[0] > 0 && opts_.crop_scale[0] <= opts_.crop_scale[1] && opts_.crop_scale[1] <= 1))
    throw ConfigError(where + ": crop scale must satisfy 0 < lo <= hi <= 1");
  if (!(opts_.crop_ratio[0] > 0 && opts_.crop_ratio[0] <= opts_.crop_ratio[1]))
    throw ConfigError(where + ": crop ratio must satisfy 0 < lo <= hi");
  if (!(opts_.hflip >= 0 && opts_.hflip <= 1))
    throw ConfigError(where + ": flip probability must be in [0, 1]");
  for (double j : opts_.color_jitter)
    if (!(j >= 0 && j <= 1)) throw ConfigError(where + ": colour jitter values must be in [0, 1]");
  if (!(opts_.resize_ratio > 0 && opts_.resize_ratio <= 1))
    throw ConfigError(where + ": resize ratio must be in (0, 1]");
}

void ImageDecoder::decode(const uint8_t* data, size_t size, uint64_t key, uint8_t* dst) const {
  const int64_t S = opts_.size, C = opts_.channels;
  int64_t H = 0, W = 0;
  image_dimensions(data, size, &H, &W);
  PlanRng rng(key);
  std::vector<uint8_t> out(static_cast<size_t>(S * S * C));  // interleaved S x S x C
  if (opts_.random_crop) {
    const CropBox box = random_resized_crop_box(H, W, opts_.crop_scale, opts_.crop_ratio, rng);
    // decode at the smallest DCT scale that keeps the crop at least S x S
    const auto min_h =
        static_cast<int64_t>(std::ceil(static_cast<double>(S) * static_cast<double>(H) / box.h));
    const auto min_w =
        static_cast<int64_t>(std::ceil(static_cast<double>(S) * static_cast<double>(W) / box.w));
    DecodedImage img = decode_image(data, size, C, std::min(min_h, H), std::min(min_w, W));
    const double sy = static_cast<double>(img.height) / static_cast<double>(H);
    const double sx = static_cast<double>(img.width) / static_cast<double>(W);
    resample_bilinear(img.pixels.data(), img.height, img.width, C,
                      CropBox{box.y * sy, box.x * sx, box.h * sy, box.w * sx}, out.data(), S, S);
  } else {
    // torchvision Resize(R) (shorter side to R) then CenterCrop(S)
    const auto R = static_cast<int64_t>(std::nearbyint(static_cast<double>(S) / opts_.resize_ratio));
    const int64_t shorter = std::min(H, W), longer = std::max(H, W);
    const int64_t rl = R * longer / shorter;
    const int64_t rh = H <= W ? R : rl, rw = H <= W ? rl : R;
    DecodedImage img = decode_image(data, size, C, std::min(rh, H), std::min(rw, W));
    std::vector<uint8_t> resized(static_cast<size_t>(rh * rw * C));
    resample_bilinear(img.pixels.data(), img.height, img.width, C,
                      CropBox{0, 0, static_cast<double>(img.height), static_cast<double>(img.width)},
                      resized.data(), rh, rw);
    // torchvision pads an image smaller than the crop with zeros; so does this
    const auto top = static_cast<int64_t>(std::nearbyint(static_cast<double>(rh - S) / 2.0));
    const auto left = static_cast<int64_t>(std::nearbyint(static_cast<double>(rw - S) / 2.0));
    for (int64_t y = 0; y < S; ++y)
      for (int64_t x = 0; x < S; ++x) {
        const int64_t iy = y + top, ix = x + left;
        for (int64_t ch = 0; ch < C; ++ch)
          out[static_cast<size_t>((y * S + x) * C + ch)] =
              iy >= 0 && iy < rh && ix >= 0 && ix < rw ? resized[static_cast<size_t>((iy * rw + ix) * C + ch)]
                                                       : 0;
      }
  }
  const bool flip = opts_.hflip > 0 && uniform(rng, 0, 1) < opts_.hflip;
  // ColorJitter: brightness, contrast, saturation in this order, each factor uniform in [max(0, 1-v), 1+v]
  const auto& cj = opts_.color_jitter;
  const bool jitter = opts_.random_crop && (cj[0] > 0 || cj[1] > 0 || cj[2] > 0);
  if (jitter) {
    std::vector<float> f(out.begin(), out.end());
    auto grey = [&](size_t p) {
      return C == 3 ? 0.299f * f[p * 3] + 0.587f * f[p * 3 + 1] + 0.114f * f[p * 3 + 2] : f[p];
    };
    const size_t npix = static_cast<size_t>(S * S);
    if (cj[0] > 0) {
      const auto b = static_cast<float>(uniform(rng, std::max(0.0, 1 - cj[0]), 1 + cj[0]));
      for (auto& v : f) v = std::clamp(v * b, 0.0f, 255.0f);
    }
    if (cj[1] > 0) {
      const auto k = static_cast<float>(uniform(rng, std::max(0.0, 1 - cj[1]), 1 + cj[1]));
      double mean = 0;
      for (size_t p = 0; p < npix; ++p) mean += grey(p);
      const auto m = static_cast<float>(mean / static_cast<double>(npix));
      for (auto& v : f) v = std::clamp(k * v + (1 - k) * m, 0.0f, 255.0f);
    }
    if (cj[2] > 0 && C == 3) {
      const auto k = static_cast<float>(uniform(rng, std::max(0.0, 1 - cj[2]), 1 + cj[2]));
      for (size_t p = 0; p < npix; ++p) {
        const float g = grey(p);
        for (size_t ch = 0; ch < 3; ++ch)
          f[p * 3 + ch] = std::clamp(k * f[p * 3 + ch] + (1 - k) * g, 0.0f, 255.0f);
      }
    }
    for (size_t i = 0; i < f.size(); ++i) out[i] = static_cast<uint8_t>(std::nearbyint(f[i]));
  }
  // interleaved S x S x C -> channels-first C x S x S, mirrored when flipped
  for (int64_t ch = 0; ch < C; ++ch)
    for (int64_t y = 0; y < S; ++y) {
      uint8_t* row = dst + (ch * S + y) * S;
      const uint8_t* in = out.data() + y * S * C + ch;
      for (int64_t x = 0; x < S; ++x) row[x] = in[(flip ? S - 1 - x : x) * C];
    }
}

}  // namespace strata::data
