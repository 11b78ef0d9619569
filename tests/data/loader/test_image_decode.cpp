// Image decoding in the loader (data/loader/image_decode.h, data/format/image_codec.h):
// JPEG and PNG round trips, DCT-scaled JPEG decoding, corrupt and truncated files
// as errors, the RandomResizedCrop box sampler's bounds and statistics, the
// determinism of a sample's draw, and the loader end to end on a packed
// ImageFolder: batch shape, the error naming shard, sample and file, and
// data.skip_bad_images' stand-in and count. The comparison with Pillow is
// check_resize_pillow.py, which runs the PillowReference test here.
#include <gtest/gtest.h>
#include <spng.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "data/format/image_codec.h"
#include "data/format/packer.h"
#include "data/loader/image_decode.h"
#include "data/loader/loader.h"
#include "loader_test_util.h"

namespace strata::data {
namespace {
using testing::scratch_dir;
using testing::scratch_root;
namespace fs = std::filesystem;

// A smooth test pattern, h x w x c interleaved.
std::vector<uint8_t> pattern(int h, int w, int c, int seed = 0) {
  std::vector<uint8_t> p(static_cast<size_t>(h * w * c));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k)
        p[static_cast<size_t>((y * w + x) * c + k)] =
            static_cast<uint8_t>((x * 255 / std::max(1, w - 1) * (k + 1) + y * 3 + seed * 40) % 256);
  return p;
}

std::string jpeg(const std::vector<uint8_t>& px, int h, int w, int c, int quality = 95) {
  tjhandle tj = tjInitCompress();
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  EXPECT_EQ(tjCompress2(tj, px.data(), w, 0, h, c == 1 ? TJPF_GRAY : TJPF_RGB, &buf, &size,
                        c == 1 ? TJSAMP_GRAY : TJSAMP_444, quality, 0),
            0);
  std::string out(reinterpret_cast<char*>(buf), size);
  tjFree(buf);
  tjDestroy(tj);
  return out;
}

std::string png(const std::vector<uint8_t>& px, int h, int w, int c) {
  spng_ctx* ctx = spng_ctx_new(SPNG_CTX_ENCODER);
  spng_set_option(ctx, SPNG_ENCODE_TO_BUFFER, 1);
  spng_ihdr ihdr{};
  ihdr.width = static_cast<uint32_t>(w);
  ihdr.height = static_cast<uint32_t>(h);
  ihdr.bit_depth = 8;
  ihdr.color_type = c == 1 ? SPNG_COLOR_TYPE_GRAYSCALE : SPNG_COLOR_TYPE_TRUECOLOR;
  spng_set_ihdr(ctx, &ihdr);
  EXPECT_EQ(spng_encode_image(ctx, px.data(), px.size(), SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE), 0);
  size_t size = 0;
  int err = 0;
  void* buf = spng_get_png_buffer(ctx, &size, &err);
  std::string out(static_cast<char*>(buf), size);
  free(buf);
  spng_ctx_free(ctx);
  return out;
}

void write_file(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

const uint8_t* u8(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

TEST(ImageCodec, PngDecodesExactlyInRgbAndGrey) {
  const auto px = pattern(20, 30, 3);
  const std::string file = png(px, 20, 30, 3);
  DecodedImage img = decode_image(u8(file), file.size(), 3);
  EXPECT_EQ(img.height, 20);
  EXPECT_EQ(img.width, 30);
  EXPECT_EQ(img.pixels, px);
  DecodedImage grey = decode_image(u8(file), file.size(), 1);
  ASSERT_EQ(grey.pixels.size(), 600u);
  const uint8_t* p = px.data() + 3 * 37;  // Pillow's "L": (19595 R + 38470 G + 7471 B + 0x8000) >> 16
  EXPECT_EQ(grey.pixels[37], (p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16);
  const auto g = pattern(9, 7, 1);
  const std::string gfile = png(g, 9, 7, 1);
  EXPECT_EQ(decode_image(u8(gfile), gfile.size(), 1).pixels, g);
}

TEST(ImageCodec, JpegDecodesCloseToTheSourceAndAtADctScale) {
  const auto px = pattern(64, 48, 3);
  const std::string file = jpeg(px, 64, 48, 3);
  int64_t h = 0, w = 0;
  image_dimensions(u8(file), file.size(), &h, &w);
  EXPECT_EQ(h, 64);
  EXPECT_EQ(w, 48);
  DecodedImage img = decode_image(u8(file), file.size(), 3);
  ASSERT_EQ(img.pixels.size(), px.size());
  double err = 0;
  for (size_t i = 0; i < px.size(); ++i) err += std::abs(img.pixels[i] - px[i]);
  EXPECT_LT(err / static_cast<double>(px.size()), 4.0) << "mean absolute error of a quality-95 JPEG";
  // the smallest DCT scale that keeps at least 30 x 20: 1/2 (32 x 24); 3/8 gives 24 x 18
  DecodedImage half = decode_image(u8(file), file.size(), 3, 30, 20);
  EXPECT_EQ(half.height, 32);
  EXPECT_EQ(half.width, 24);
  DecodedImage eighth = decode_image(u8(file), file.size(), 1, 1, 1);
  EXPECT_EQ(eighth.height, 8);
  EXPECT_EQ(eighth.channels, 1);
}

TEST(ImageCodec, CorruptTruncatedAndForeignFilesAreErrors) {
  const auto px = pattern(32, 32, 3);
  const std::string j = jpeg(px, 32, 32, 3), p = png(px, 32, 32, 3);
  auto fails = [](const std::string& f, const std::string& what) {
    try {
      decode_image(u8(f), f.size(), 3);
      ADD_FAILURE() << what << " decoded";
    } catch (const IoError& e) {
      std::printf("%s: %s\n", what.c_str(), e.what());
    }
  };
  fails(j.substr(0, j.size() / 2), "a JPEG cut in half");
  fails(p.substr(0, p.size() / 2), "a PNG cut in half");
  std::string flipped = p;
  flipped[p.size() / 2] = static_cast<char>(flipped[p.size() / 2] ^ 0x5A);
  fails(flipped, "a PNG with a flipped byte");
  fails("GIF89a....", "a GIF");
  fails(std::string(), "an empty file");
  // A JPEG whose header stops short (no SOS marker), then good ones on the same
  // thread: the failed decompressor must not spoil the next header it reads.
  fails(j.substr(0, 300), "a JPEG cut inside its header");
  for (int k = 0; k < 3; ++k) {
    int64_t h = 0, w = 0;
    image_dimensions(u8(j), j.size(), &h, &w);
    EXPECT_EQ(h, 32) << "header read " << k << " after a failed one";
    EXPECT_EQ(decode_image(u8(j), j.size(), 3).pixels.size(), 32u * 32 * 3);
  }
}

// The box sampler as torchvision's RandomResizedCrop.get_params: inside the
// image, area fraction in scale, aspect ratio in ratio (up to rounding), a
// log-ratio centred on 0, positions spread over the image, and 10 failed
// attempts falling back to the centre crop.
TEST(RandomResizedCrop, BoxesLieInTheImageWithTheirAreaAndRatioInRange) {
  const int64_t H = 128, W = 128;  // square: the aspect ratio's statistics are symmetric
  PlanRng rng(42);
  double log_ratio_sum = 0, area_sum = 0, left_sum = 0;
  const int n = 20000;
  int full = 0;
  for (int i = 0; i < n; ++i) {
    const CropBox b = random_resized_crop_box(H, W, {0.08, 1.0}, {3.0 / 4.0, 4.0 / 3.0}, rng);
    ASSERT_GE(b.y, 0);
    ASSERT_GE(b.x, 0);
    ASSERT_GE(b.h, 1);
    ASSERT_GE(b.w, 1);
    ASSERT_LE(b.y + b.h, H);
    ASSERT_LE(b.x + b.w, W);
    const double area = b.h * b.w / static_cast<double>(H * W), ratio = b.w / b.h;
    if (b.h == H && b.w == W) ++full;
    EXPECT_GE(area, 0.08 * 0.9) << b.h << "x" << b.w;
    EXPECT_GE(ratio, 0.75 * 0.95);
    EXPECT_LE(ratio, 4.0 / 3.0 * 1.05);
    log_ratio_sum += std::log(ratio);
    area_sum += area;
    left_sum += (b.x + b.w / 2) / W;
  }
  std::printf("%d boxes: mean area fraction %.4f, mean log aspect %.4f, mean centre x %.4f, whole image %d\n",
              n, area_sum / n, log_ratio_sum / n, left_sum / n, full);
  // uniform area in [0.08, 1] has mean 0.54; boxes too large for the image are redrawn, lowering it
  EXPECT_GT(area_sum / n, 0.40);
  EXPECT_LT(area_sum / n, 0.56);
  EXPECT_NEAR(log_ratio_sum / n, 0.0, 0.01);
  EXPECT_NEAR(left_sum / n, 0.5, 0.02);
  // An impossible request: every attempt fails, the centre crop clamped to the ratio.
  PlanRng r2(1);
  const CropBox c = random_resized_crop_box(100, 100, {0.95, 1.0}, {2.0, 3.0}, r2);
  EXPECT_EQ(c.w, 100);
  EXPECT_EQ(c.h, 50);
  EXPECT_EQ(c.y, 25);
  EXPECT_EQ(c.x, 0);
}

TEST(ImageDecoder, TheDrawIsAFunctionOfTheKeyAlone) {
  const auto px = pattern(48, 40, 3);
  const std::string file = jpeg(px, 48, 40, 3);
  ImageDecodeOptions o;
  o.size = 24;
  o.random_crop = true;
  o.hflip = 0.5;
  o.color_jitter = {0.4, 0.4, 0.4};
  ImageDecoder d(o);
  std::vector<uint8_t> a(static_cast<size_t>(d.out_bytes())), b(a.size());
  int differ = 0;
  for (uint64_t k = 0; k < 20; ++k) {
    d.decode(u8(file), file.size(), augment_key(7, 1, static_cast<int64_t>(k)), a.data());
    d.decode(u8(file), file.size(), augment_key(7, 1, static_cast<int64_t>(k)), b.data());
    ASSERT_EQ(a, b) << "key " << k;
    std::vector<uint8_t> c(a.size());
    d.decode(u8(file), file.size(), augment_key(7, 2, static_cast<int64_t>(k)), c.data());
    differ += c != a;
  }
  EXPECT_GE(differ, 18) << "another epoch draws another crop";
  // evaluation: no randomness at all
  o.random_crop = false;
  o.hflip = 0;
  ImageDecoder e(o);
  e.decode(u8(file), file.size(), 1, a.data());
  e.decode(u8(file), file.size(), 2, b.data());
  EXPECT_EQ(a, b);
}

// A large JPEG decoded at a DCT scale (1/4 here) gives nearly the image a full
// decode resized gives; greyscale output has one channel.
TEST(ImageDecoder, ADctScaledDecodeIsCloseToAFullOneAndGreyHasOneChannel) {
  const int H = 192, W = 256;
  const auto px = pattern(H, W, 3);
  const std::string file = jpeg(px, H, W, 3);
  ImageDecodeOptions o;
  o.size = 32;  // evaluation: shorter side to 37, longer 49, then the centre 32
  ImageDecoder d(o);
  std::vector<uint8_t> got(static_cast<size_t>(d.out_bytes()));
  d.decode(u8(file), file.size(), 0, got.data());
  const DecodedImage quarter = decode_image(u8(file), file.size(), 3, 37, 49);
  EXPECT_EQ(quarter.height, 48) << "the smallest scale keeping 37 x 49: 1/4";
  EXPECT_EQ(quarter.width, 64);
  const DecodedImage full = decode_image(u8(file), file.size(), 3);
  std::vector<uint8_t> resized(37 * 49 * 3);
  resample_bilinear(full.pixels.data(), H, W, 3, CropBox{0, 0, H, W}, resized.data(), 37, 49);
  double err = 0;
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 32; ++y)
      for (int x = 0; x < 32; ++x) {
        const int want =
            resized[static_cast<size_t>(((y + 2) * 49 + x + 8) * 3 + c)];  // top 2 (2.5 to even), left 8
        err += std::abs(want - got[static_cast<size_t>((c * 32 + y) * 32 + x)]);
      }
  err /= 3 * 32 * 32;
  std::printf("1/4-scale JPEG decode vs full decode, resized and cropped: mean absolute difference %.3f\n",
              err);
  EXPECT_LT(err, 3.0);
  o.channels = 1;
  o.random_crop = true;
  ImageDecoder g(o);
  EXPECT_EQ(g.out_bytes(), 32 * 32);
  std::vector<uint8_t> grey(32 * 32);
  g.decode(u8(file), file.size(), 5, grey.data());
  const std::string p = png(pattern(40, 50, 1), 40, 50, 1);
  g.decode(u8(p), p.size(), 5, grey.data());
}

// The plain form of resample_bilinear (Pillow's Resample.c written out: 64-bit
// sums, one channel at a time, the vertical pass one output byte at a time),
// which the vectorised one must match byte for byte.
void reference_resample(const uint8_t* src, int64_t h, int64_t w, int64_t c, const CropBox& box, uint8_t* dst,
                        int64_t out_h, int64_t out_w) {
  constexpr int kBits = 22;
  struct Axis {
    int64_t ksize = 0;
    std::vector<int64_t> bounds;
    std::vector<int32_t> k;
  };
  auto coeffs = [](int64_t in_size, double in0, double in1, int64_t out_size) {
    Axis a;
    const double scale = (in1 - in0) / static_cast<double>(out_size);
    const double filterscale = std::max(scale, 1.0), support = filterscale;
    a.ksize = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
    a.bounds.resize(static_cast<size_t>(out_size) * 2);
    a.k.assign(static_cast<size_t>(out_size * a.ksize), 0);
    for (int64_t xx = 0; xx < out_size; ++xx) {
      const double center = in0 + (static_cast<double>(xx) + 0.5) * scale;
      const int64_t xmin = std::max<int64_t>(0, static_cast<int64_t>(center - support + 0.5));
      const int64_t xmax =
          std::min(std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in_size) - xmin, a.ksize);
      std::vector<double> wt(static_cast<size_t>(a.ksize));
      double ww = 0;
      for (int64_t x = 0; x < xmax; ++x) {
        const double t = std::fabs((static_cast<double>(x + xmin) - center + 0.5) / filterscale);
        wt[static_cast<size_t>(x)] = t < 1.0 ? 1.0 - t : 0.0;
        ww += wt[static_cast<size_t>(x)];
      }
      for (int64_t x = 0; x < xmax; ++x) {
        const double v = ww != 0.0 ? wt[static_cast<size_t>(x)] / ww : 0.0;
        a.k[static_cast<size_t>(xx * a.ksize + x)] =
            static_cast<int32_t>(v < 0 ? -0.5 + v * (1 << kBits) : 0.5 + v * (1 << kBits));
      }
      a.bounds[static_cast<size_t>(xx) * 2] = xmin;
      a.bounds[static_cast<size_t>(xx) * 2 + 1] = std::max<int64_t>(xmax, 0);
    }
    return a;
  };
  auto clip = [](int64_t ss) { return static_cast<uint8_t>(std::clamp<int64_t>(ss >> kBits, 0, 255)); };
  const Axis kx = coeffs(w, box.x, box.x + box.w, out_w), ky = coeffs(h, box.y, box.y + box.h, out_h);
  std::vector<uint8_t> tmp(static_cast<size_t>(h * out_w * c));  // every source row
  for (int64_t y = 0; y < h; ++y)
    for (int64_t xx = 0; xx < out_w; ++xx)
      for (int64_t ch = 0; ch < c; ++ch) {
        int64_t ss = int64_t{1} << (kBits - 1);
        for (int64_t x = 0; x < kx.bounds[static_cast<size_t>(xx) * 2 + 1]; ++x)
          ss += static_cast<int64_t>(src[(y * w + kx.bounds[static_cast<size_t>(xx) * 2] + x) * c + ch]) *
                kx.k[static_cast<size_t>(xx * kx.ksize + x)];
        tmp[static_cast<size_t>((y * out_w + xx) * c + ch)] = clip(ss);
      }
  for (int64_t yy = 0; yy < out_h; ++yy)
    for (int64_t i = 0; i < out_w * c; ++i) {
      int64_t ss = int64_t{1} << (kBits - 1);
      for (int64_t y = 0; y < ky.bounds[static_cast<size_t>(yy) * 2 + 1]; ++y)
        ss += static_cast<int64_t>(
                  tmp[static_cast<size_t>((ky.bounds[static_cast<size_t>(yy) * 2] + y) * out_w * c + i)]) *
              ky.k[static_cast<size_t>(yy * ky.ksize + y)];
      dst[yy * out_w * c + i] = clip(ss);
    }
}

// resample_bilinear against its plain form: noise images of 1, 3 and 4
// channels, boxes down (up to 8x), up (to 4x) and fractional, byte for byte.
TEST(ResampleBilinear, MatchesThePlainLoopExactly) {
  PlanRng rng(11);
  auto uni = [&](double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(rng.next() >> 11) * (1.0 / 9007199254740992.0);
  };
  int cases = 0;
  for (int64_t c : {1, 3, 4})
    for (int i = 0; i < 40; ++i) {
      const auto h = static_cast<int64_t>(uni(8, 300)), w = static_cast<int64_t>(uni(8, 300));
      std::vector<uint8_t> src(static_cast<size_t>(h * w * c));
      for (auto& v : src) v = static_cast<uint8_t>(rng.next() >> 56);
      const double bh = uni(1, static_cast<double>(h)), bw = uni(1, static_cast<double>(w));
      CropBox box{uni(0, static_cast<double>(h) - bh), uni(0, static_cast<double>(w) - bw), bh, bw};
      if (i % 4 == 0) box = {std::floor(box.y), std::floor(box.x), std::floor(bh), std::floor(bw)};
      const auto oh = static_cast<int64_t>(uni(std::max(1.0, bh / 8), std::min(224.0, bh * 4)));
      const auto ow = static_cast<int64_t>(uni(std::max(1.0, bw / 8), std::min(224.0, bw * 4)));
      std::vector<uint8_t> got(static_cast<size_t>(oh * ow * c)), want(got.size());
      resample_bilinear(src.data(), h, w, c, box, got.data(), oh, ow);
      reference_resample(src.data(), h, w, c, box, want.data(), oh, ow);
      ASSERT_EQ(got, want) << "c " << c << " " << h << "x" << w << " box (" << box.y << ", " << box.x << ", "
                           << box.h << ", " << box.w << ") -> " << oh << "x" << ow;
      ++cases;
    }
  EXPECT_EQ(cases, 120);
}

// Compares resample_bilinear and the evaluation transform with Pillow's output,
// which check_resize_pillow.py writes to STRATA_PILLOW_DIR; skipped without it.
TEST(PillowReference, ResizeAndCentreCropMatchPillow) {
  const char* dir = std::getenv("STRATA_PILLOW_DIR");
  if (!dir) {  // not a skip: the ctest loader_image_pillow runs this with the files
    std::printf("STRATA_PILLOW_DIR not set: ctest -R loader_image_pillow runs this test\n");
    return;
  }
  auto read = [&](const std::string& name) {
    std::ifstream in(std::string(dir) + "/" + name, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string src = read("source.png");
  ASSERT_FALSE(src.empty());
  const DecodedImage img = decode_image(u8(src), src.size(), 3);
  std::ifstream cases(std::string(dir) + "/cases.txt");
  std::string name;
  double y, x, h, w;
  int64_t oh, ow;
  int n = 0;
  while (cases >> name >> x >> y >> w >> h >> ow >> oh) {
    // "resize" cases: Image.resize((ow, oh), BILINEAR, box=(x, y, x+w, y+h)), raw RGB
    const std::string want = read(name);
    ASSERT_EQ(static_cast<int64_t>(want.size()), oh * ow * 3) << name;
    std::vector<uint8_t> got(want.size());
    resample_bilinear(img.pixels.data(), img.height, img.width, 3, CropBox{y, x, h, w}, got.data(), oh, ow);
    int worst = 0;
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - u8(want)[i]));
    std::printf("%s: box (%g, %g, %g, %g) -> %lldx%lld, largest difference from Pillow %d\n", name.c_str(), x,
                y, w, h, static_cast<long long>(ow), static_cast<long long>(oh), worst);
    EXPECT_LE(worst, 1) << name;
    ++n;
  }
  EXPECT_GE(n, 3);
  // evaluation: torchvision Resize(round(S / 0.875)) + CenterCrop(S), with PIL
  const std::string want = read("eval.raw");  // channels-first, as the batch
  ImageDecodeOptions o;
  o.size = 32;
  ImageDecoder d(o);
  std::vector<uint8_t> got(static_cast<size_t>(d.out_bytes()));
  d.decode(u8(src), src.size(), 0, got.data());
  ASSERT_EQ(want.size(), got.size());
  int worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - u8(want)[i]));
  std::printf("evaluation transform (resize 37, centre crop 32): largest difference from Pillow %d\n", worst);
  EXPECT_LE(worst, 1);
}

// An ImageFolder of `per_class` JPEGs and PNGs in each of 3 classes, 40 x 36 pixels.
void image_folder(const fs::path& root, int per_class) {
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < per_class; ++i) {
      const auto px = pattern(40, 36, 3, c * 7 + i);
      const std::string name = "img" + std::to_string(i) + (i % 2 ? ".png" : ".jpg");
      write_file(root / ("c" + std::to_string(c)) / name, i % 2 ? png(px, 40, 36, 3) : jpeg(px, 40, 36, 3));
    }
}

LoaderOptions image_loader(const fs::path& data, const std::string& cache, bool skip_bad) {
  LoaderOptions o;
  o.url = data.string();
  o.cache_dir = scratch_root() / cache;
  o.cache_bytes = 1 << 30;
  o.batch_size = 4;
  o.shuffle = true;
  o.seed = 3;
  ImageDecodeOptions im;
  im.size = 16;
  im.random_crop = true;
  im.hflip = 0.5;
  im.skip_bad = skip_bad;
  o.image = im;
  o.normalize.push_back(NormalizeU8{"image", {0.5f, 0.5f, 0.5f}, {0.25f, 0.25f, 0.25f}});
  return o;
}

TEST(ImageLoader, BatchesHoldDecodedImagesAndABadImageIsNamedOrCounted) {
  auto dir = scratch_dir("image-loader");
  image_folder(dir / "in", 6);
  PackOptions p;
  p.out_url = (dir / "ok").string();
  p.shard_bytes = 8 << 10;  // a few shards
  p.shuffle_seed = 0;
  p.check_images = ImageCheck::kRefuse;
  const Manifest m = pack_files(dir / "in", p);
  ASSERT_GE(m.shards.size(), 2u);
  {
    Loader l(image_loader(dir / "ok", "cache-ok", false));
    HostBatch b;
    ASSERT_TRUE(l.next(b));
    ASSERT_EQ(b.fields.size(), 2u) << "image and label; the name stays out of batches";
    EXPECT_EQ(b.fields[0].name, "image");
    EXPECT_EQ(b.fields[0].shape, (std::vector<int64_t>{4, 3, 16, 16}));
    EXPECT_EQ(b.fields[0].dtype, DType::f32);
    EXPECT_EQ(b.fields[1].name, "label");
    int64_t batches = 1;
    while (l.next(b)) ++batches;
    EXPECT_EQ(batches, 18 / 4);
    EXPECT_EQ(l.metrics().bad_images, 0);
  }
  // Without image options the encoded field is not a batch field: the error says what to set.
  LoaderOptions plain = image_loader(dir / "ok", "cache-plain", false);
  plain.image.reset();
  try {
    Loader l(plain);
    ADD_FAILURE() << "a loader without image options normalised a field 'image'";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("data.image_size"), std::string::npos) << e.what();
  }
  // A truncated JPEG packed without the check: the loader names shard, sample and file.
  const std::string good = read_file(dir / "in" / "c1" / "img2.jpg");
  write_file(dir / "in" / "c1" / "img2.jpg", good.substr(0, good.size() / 3));
  p.out_url = (dir / "bad").string();
  p.check_images = ImageCheck::kNone;
  pack_files(dir / "in", p);
  try {
    Loader l(image_loader(dir / "bad", "cache-bad", false));
    HostBatch b;
    while (l.next(b)) {
    }
    ADD_FAILURE() << "a truncated JPEG decoded";
  } catch (const IoError& e) {
    const std::string what = e.what();
    std::printf("error: %s\n", what.c_str());
    EXPECT_NE(what.find("file c1/img2.jpg"), std::string::npos) << what;
    EXPECT_NE(what.find("shard shard-0000"), std::string::npos) << what;
    EXPECT_NE(what.find(" sample "), std::string::npos) << what;
  }
  // skipped: every batch whole, the same stand-in in two runs, and counted
  std::vector<std::vector<uint8_t>> first;
  for (int run = 0; run < 2; ++run) {
    Loader l(image_loader(dir / "bad", "cache-skip" + std::to_string(run), true));
    HostBatch b;
    std::vector<uint8_t> all;
    while (l.next(b)) {
      EXPECT_EQ(b.fields[0].shape, (std::vector<int64_t>{4, 3, 16, 16}));
      const auto* bytes = reinterpret_cast<const uint8_t*>(b.fields[0].bytes.data());
      all.insert(all.end(), bytes, bytes + b.fields[0].bytes.size());
    }
    std::printf("run %d: bad_images %lld\n", run, static_cast<long long>(l.metrics().bad_images));
    EXPECT_LE(l.metrics().bad_images, 1);  // 1 unless it fell in the dropped remainder
    first.push_back(all);
  }
  EXPECT_EQ(first[0], first[1]);
}

TEST(ImagePack, FilesThatDoNotDecodeAreListedAndRefusedOrLeftOut) {
  auto dir = scratch_dir("image-pack");
  image_folder(dir / "in", 2);
  write_file(dir / "in" / "c0" / "notes.txt", "not an image");
  const std::string j = read_file(dir / "in" / "c2" / "img0.jpg");
  write_file(dir / "in" / "c2" / "cut.jpg", j.substr(0, j.size() / 2));
  PackOptions p;
  p.out_url = (dir / "out").string();
  p.check_images = ImageCheck::kRefuse;
  p.file_threads = 3;
  try {
    pack_files(dir / "in", p);
    ADD_FAILURE() << "bad files packed";
  } catch (const IoError& e) {
    const std::string what = e.what();
    std::printf("refused: %s\n", what.c_str());
    EXPECT_NE(what.find("2 of 8 files"), std::string::npos) << what;
    EXPECT_NE(what.find("c0/notes.txt"), std::string::npos) << what;
    EXPECT_NE(what.find("c2/cut.jpg"), std::string::npos) << what;
  }
  EXPECT_FALSE(fs::exists(dir / "out" / "manifest.json")) << "nothing published";
  p.check_images = ImageCheck::kSkip;
  std::vector<std::string> log;
  p.log = [&](const std::string& line) { log.push_back(line); };
  const Manifest m = pack_files(dir / "in", p);
  EXPECT_EQ(m.total_samples(), 6);
  bool listed = false;
  for (auto& l : log)
    listed = listed || (l.find("left out") != std::string::npos && l.find("cut.jpg") != std::string::npos);
  EXPECT_TRUE(listed);
  // the name and the bytes of each file are in the shard
  ShardData d = ShardData::read((dir / "out" / m.shards[0].name).string(), m.schema);
  ASSERT_EQ(m.schema.size(), 3u);
  EXPECT_EQ(m.schema[2].name, "name");
  size_t n = 0, nb = 0;
  const auto* name_bytes = reinterpret_cast<const char*>(d.sample(2, 0, &n));
  const std::string name(name_bytes, n);
  ASSERT_FALSE(name.empty());
  const uint8_t* bytes = d.sample(0, 0, &nb);
  EXPECT_EQ(read_file(dir / "in" / name), std::string(reinterpret_cast<const char*>(bytes), nb)) << name;
}

}  // namespace
}  // namespace strata::data
