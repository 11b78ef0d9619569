// Loader-side augmentation (data/loader/augment.h): the crop and flip against a naive
// pad-crop-mirror reference, the draws' ranges, and through the real loader: each
// sample keyed by (seed, epoch, its dataset index), the same bytes from two
// loaders, different bytes in another epoch, and a resumed epoch equal to an
// uninterrupted one byte for byte (with several decode threads racing).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <set>

#include "base/error.h"
#include "data/format/shard.h"
#include "data/loader/augment.h"
#include "data/loader/loader.h"
#include "loader_test_util.h"

using namespace strata::data;
using namespace strata::data::testing;

namespace {

constexpr int64_t kC = 2, kH = 5, kW = 7;  // not square, two channels: catches swapped axes

std::vector<uint8_t> test_image(int64_t seed) {
  std::vector<uint8_t> img(kC * kH * kW);
  for (size_t i = 0; i < img.size(); ++i) img[i] = static_cast<uint8_t>(1 + (i * 37 + seed * 11) % 250);
  return img;  // no zero pixel, so padding is told apart from the image
}

// The definition, spelled out: build the zero-padded image, cut the HxW window
// at (dy, dx), then mirror it.
std::vector<uint8_t> reference(const std::vector<uint8_t>& img, int64_t p, const AugmentDraw& d) {
  const int64_t ph = kH + 2 * p, pw = kW + 2 * p;
  std::vector<uint8_t> padded(kC * ph * pw, 0), out(kC * kH * kW);
  for (int64_t c = 0; c < kC; ++c)
    for (int64_t y = 0; y < kH; ++y)
      for (int64_t x = 0; x < kW; ++x) padded[(c * ph + y + p) * pw + x + p] = img[(c * kH + y) * kW + x];
  for (int64_t c = 0; c < kC; ++c)
    for (int64_t y = 0; y < kH; ++y)
      for (int64_t x = 0; x < kW; ++x) {
        int64_t cx = d.flip ? kW - 1 - x : x;
        out[(c * kH + y) * kW + x] = padded[(c * ph + y + d.dy) * pw + cx + d.dx];
      }
  return out;
}

FieldSpec image_spec() { return {"image", "u8", {kC, kH, kW}, false}; }

}  // namespace

TEST(Augment, ACropOfOnePixelOnA3x3Image) {
  // 1 2 3        shifted down-left by one (dy 0, dx 2, P 1):  0 0 0
  // 4 5 6                                                   2 3 0
  // 7 8 9                                                   5 6 0
  ImageAugment a({"g", "u8", {3, 3}, false}, AugmentU8{"g", 1, true});
  const uint8_t in[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  uint8_t out[9];
  a.apply(in, out, AugmentDraw{0, 2, false});
  EXPECT_EQ(std::vector<uint8_t>(out, out + 9), (std::vector<uint8_t>{0, 0, 0, 2, 3, 0, 5, 6, 0}));
  a.apply(in, out, AugmentDraw{1, 1, true});  // centred, mirrored
  EXPECT_EQ(std::vector<uint8_t>(out, out + 9), (std::vector<uint8_t>{3, 2, 1, 6, 5, 4, 9, 8, 7}));
}

TEST(Augment, EveryDrawMatchesPadCropMirror) {
  for (int64_t p : {0, 1, 3, 9}) {  // 9 > H, W: windows entirely in the padding
    ImageAugment a(image_spec(), AugmentU8{"image", p, true});
    auto img = test_image(p);
    std::vector<uint8_t> out(img.size());
    for (int64_t dy = 0; dy <= 2 * p; ++dy)
      for (int64_t dx = 0; dx <= 2 * p; ++dx)
        for (bool flip : {false, true}) {
          AugmentDraw d{dy, dx, flip};
          std::memset(out.data(), 0xAB, out.size());  // stale bytes must all be overwritten
          a.apply(img.data(), out.data(), d);
          ASSERT_EQ(out, reference(img, p, d))
              << "P " << p << " dy " << dy << " dx " << dx << " flip " << flip;
        }
  }
}

TEST(Augment, DrawsCoverTheirRangesAndRespectTheSwitches) {
  ImageAugment both(image_spec(), AugmentU8{"image", 2, true});
  std::set<int64_t> dys, dxs;
  int flips = 0;
  const int n = 2000;
  for (int i = 0; i < n; ++i) {
    AugmentDraw d = both.draw(augment_key(5, 0, i));
    dys.insert(d.dy);
    dxs.insert(d.dx);
    flips += d.flip;
  }
  EXPECT_EQ(dys, (std::set<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(dxs, (std::set<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_GT(flips, n * 4 / 10);  // about half; a binomial(2000, 0.5) is within 40..60% with certainty
  EXPECT_LT(flips, n * 6 / 10);

  ImageAugment crop_only(image_spec(), AugmentU8{"image", 2, false});
  ImageAugment flip_only(image_spec(), AugmentU8{"image", 0, true});
  for (int i = 0; i < 200; ++i) {
    EXPECT_FALSE(crop_only.draw(augment_key(5, 0, i)).flip);
    AugmentDraw d = flip_only.draw(augment_key(5, 0, i));
    EXPECT_EQ(d.dy, 0);
    EXPECT_EQ(d.dx, 0);
  }
  EXPECT_FALSE(ImageAugment(image_spec(), AugmentU8{"image", 0, false}).enabled());
}

TEST(Augment, KeyIsAPureFunctionOfSeedEpochAndIndex) {
  EXPECT_EQ(augment_key(1, 2, 3), augment_key(1, 2, 3));
  std::set<uint64_t> keys;
  for (uint64_t s : {0, 1})
    for (int64_t e : {0, 1, 2})
      for (int64_t i : {0, 1, 2, 1000}) keys.insert(augment_key(s, e, i));
  EXPECT_EQ(keys.size(), 2u * 3 * 4);
}

TEST(Augment, RefusesFieldsThatAreNotU8Images) {
  EXPECT_THROW(ImageAugment({"f", "f32", {3, 8, 8}, false}, AugmentU8{"f", 2, true}), strata::ConfigError);
  EXPECT_THROW(ImageAugment({"v", "u8", {64}, false}, AugmentU8{"v", 2, true}), strata::ConfigError);
  EXPECT_THROW(ImageAugment(image_spec(), AugmentU8{"image", -1, true}), strata::ConfigError);
}

// ---- through the loader -----------------------------------------------------------

namespace {

// 3 shards of 40 samples: "image" u8 (C, H, W) from test_image(global index), "label" i64 = the global index.
fs::path image_dataset() {
  static fs::path dir = [] {
    auto d = scratch_dir("augment-ds");
    Manifest m;
    m.schema = {image_spec(), {"label", "i64", {}, false}};
    int64_t g = 0;
    for (int s = 0; s < 3; ++s) {
      std::string name = "shard-" + std::to_string(s) + ".h5";
      ShardWriter w((d / name).string(), m.schema);
      for (int i = 0; i < 40; ++i, ++g) {
        auto img = test_image(g);
        w.add({{img.data(), img.size()}, {&g, sizeof g}});
      }
      w.finish();
      m.shards.push_back(
          {name, 40, static_cast<int64_t>(fs::file_size(d / name)), checksum_file((d / name).string())});
    }
    std::ofstream(d / "manifest.json") << m.to_json();
    return d;
  }();
  return dir;
}

LoaderOptions augmenting(const std::string& cache, bool normalize) {
  LoaderOptions o;
  o.url = image_dataset().string();
  o.cache_dir = scratch_root() / cache;
  o.cache_bytes = 1 << 30;
  o.seed = 11;
  o.batch_size = 8;
  o.shuffle_window = 2;
  o.decode_threads = 3;
  o.ring_batches = 4;
  o.augment = {AugmentU8{"image", 2, true}};
  if (normalize) o.normalize = {NormalizeU8{"image", {0.5f, 0.25f}, {0.2f, 0.3f}}};
  return o;
}

std::vector<std::vector<std::byte>> read_images(Loader& l) {
  std::vector<std::vector<std::byte>> out;
  strata::HostBatch b;
  while (l.next(b)) out.emplace_back(b.field("image").bytes.begin(), b.field("image").bytes.end());
  return out;
}

}  // namespace

TEST(AugmentLoader, EachSampleIsAugmentedByItsOwnKey) {
  auto o = augmenting("aug-key", false);
  Loader l(o);
  ImageAugment a(image_spec(), o.augment[0]);
  const int64_t bytes = kC * kH * kW;
  int changed = 0;
  for (int64_t epoch : {0, 3}) {
    l.start_epoch(epoch);
    strata::HostBatch b;
    while (l.next(b)) {
      for (int64_t i = 0; i < b.size; ++i) {
        int64_t g = b.field("label").as<int64_t>()[i];
        auto img = test_image(g);
        std::vector<uint8_t> want(bytes);
        a.apply(img.data(), want.data(), a.draw(augment_key(o.seed, epoch, g)));
        const auto* got = b.field("image").as<uint8_t>() + i * bytes;
        ASSERT_EQ(0, std::memcmp(got, want.data(), want.size())) << "epoch " << epoch << " sample " << g;
        changed += std::memcmp(got, img.data(), img.size()) != 0;
      }
    }
  }
  EXPECT_GT(changed, 0);
}

TEST(AugmentLoader, TwoLoadersAgreeAndEpochsDiffer) {
  for (bool normalize : {false, true}) {
    Loader a(augmenting("aug-two-a", normalize)), b(augmenting("aug-two-b", normalize));
    a.start_epoch(1);
    b.start_epoch(1);
    auto ea = read_images(a);
    EXPECT_EQ(ea, read_images(b)) << "normalize " << normalize;
    // The same sample in another epoch: compare by label, since the order changes too.
    auto by_label = [](Loader& l, int64_t epoch) {
      std::map<int64_t, std::vector<std::byte>> m;
      l.start_epoch(epoch);
      strata::HostBatch hb;
      while (l.next(hb)) {
        auto& img = hb.field("image");
        const size_t n = img.bytes.size() / static_cast<size_t>(hb.size);
        for (int64_t i = 0; i < hb.size; ++i)
          m[hb.field("label").as<int64_t>()[i]].assign(img.bytes.begin() + i * n,
                                                       img.bytes.begin() + (i + 1) * n);
      }
      return m;
    };
    auto e1 = by_label(a, 1), e2 = by_label(a, 2);
    int differ = 0, common = 0;
    for (auto& [g, bytes] : e1)
      if (e2.count(g)) ++common, differ += e2[g] != bytes;
    ASSERT_GT(common, 50);
    // 25 crops x 2 flips: a sample keeps its augmentation with probability 1/50.
    EXPECT_GT(differ, common * 8 / 10) << "normalize " << normalize;
  }
}

TEST(AugmentLoader, AResumedEpochEqualsAnUninterruptedOneByteForByte) {
  for (bool normalize : {false, true}) {
    auto o = augmenting("aug-resume", normalize);
    Loader whole(o);
    whole.start_epoch(2);
    auto all = read_images(whole);
    ASSERT_EQ(static_cast<int64_t>(all.size()), whole.batches_per_epoch());

    Loader cut(o);
    cut.start_epoch(2);
    strata::HostBatch b;
    const int64_t k = 5;
    for (int64_t i = 0; i < k; ++i) ASSERT_TRUE(cut.next(b));
    auto pos = cut.position();

    Loader resumed(o);  // a fresh process restarting from the checkpoint
    resumed.restore(pos);
    auto rest = read_images(resumed);
    ASSERT_EQ(rest.size(), all.size() - k);
    for (size_t i = 0; i < rest.size(); ++i)
      EXPECT_EQ(rest[i], all[k + i]) << "batch " << k + i << ", normalize " << normalize;

    // And on 2 ranks of half the batch: the global batches are the same bytes.
    auto o2 = o;
    o2.batch_size = 4;
    o2.world_size = 2;
    o2.local_ranks = 2;
    std::vector<std::unique_ptr<Loader>> ranks;
    for (int r = 0; r < 2; ++r) {
      o2.rank = r;
      ranks.push_back(std::make_unique<Loader>(o2));
      ranks.back()->restore(pos);
    }
    auto r0 = read_images(*ranks[0]), r1 = read_images(*ranks[1]);
    ASSERT_EQ(r0.size(), rest.size());
    for (size_t i = 0; i < r0.size(); ++i) {
      auto joined = r0[i];
      joined.insert(joined.end(), r1[i].begin(), r1[i].end());
      EXPECT_EQ(joined, all[k + i]) << "batch " << k + i << " on 2 ranks, normalize " << normalize;
    }
  }
}

TEST(AugmentLoader, UnknownOrUnsuitableFieldIsAConfigError) {
  auto o = augmenting("aug-bad", false);
  o.augment = {AugmentU8{"imgae", 2, true}};
  EXPECT_THROW(Loader{o}, strata::ConfigError);
  o.augment = {AugmentU8{"label", 2, true}};
  EXPECT_THROW(Loader{o}, strata::ConfigError);
}
