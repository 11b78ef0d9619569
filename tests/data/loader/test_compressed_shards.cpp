// Compressed shard objects (strata-pack --compress zstd|lz4): the codec's own
// round trip and its errors, then token and record datasets packed with each
// codec read through the loaders: batches identical to the uncompressed pack,
// bytes from the store equal to the objects' total, the cache counting the
// decompressed shard files, and a corrupt or truncated object refused by name
// with nothing committed to the cache.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <random>

#include "base/error.h"
#include "data/format/shard_codec.h"
#include "data/loader/loader.h"
#include "data/loader/shard_cache.h"
#include "token_loader_test_util.h"

using namespace strata::data;
using namespace strata::data::testing;

namespace {

const std::vector<std::string> kCodecs = {"zstd", "lz4"};

// Text of words drawn from a small vocabulary: compressible, like a corpus.
std::string wordy_text(size_t bytes, uint32_t seed) {
  static const char* words[] = {"and",  "the", "of",  "unto", "he", "said", "lord", "in",  "that", "shall",
                                "thou", "his", "for", "they", "be", "is",   "him",  "not", "them", "with"};
  std::mt19937 rng(seed);
  std::string s;
  while (s.size() < bytes) {
    s += words[rng() % 20];
    s += rng() % 9 == 0 ? ".\n" : " ";
  }
  s.resize(bytes);
  return s;
}

void write_text(const fs::path& p, const std::string& s) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << s;
}

std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

// Runs decompress_stream over an in-memory frame.
std::vector<uint8_t> decode(const std::string& codec, const std::vector<uint8_t>& frame, int64_t max_bytes) {
  size_t at = 0;
  std::vector<uint8_t> out;
  decompress_stream(
      codec,
      [&](uint8_t* buf, size_t cap) {
        const size_t n = std::min(cap, frame.size() - at);
        std::memcpy(buf, frame.data() + at, n);
        at += n;
        return n;
      },
      [&](const uint8_t* p, size_t n) { out.insert(out.end(), p, p + n); }, max_bytes, "test frame");
  return out;
}

std::vector<uint8_t> read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// `codec` frame of `plain` written through compress_shard_file.
std::vector<uint8_t> frame_of(const fs::path& dir, const std::string& codec, const std::string& plain) {
  write_text(dir / "plain", plain);
  const CompressedSizes c = compress_shard_file(dir / "plain", dir / "frame", codec, 0);
  EXPECT_EQ(c.plain_bytes, static_cast<int64_t>(plain.size()));
  EXPECT_EQ(c.plain_checksum, checksum_file((dir / "plain").string()));
  EXPECT_EQ(c.checksum, checksum_file((dir / "frame").string()));
  EXPECT_EQ(object_codec_of_file(dir / "frame"), codec);
  return read_all(dir / "frame");
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const strata::IoError& e) {
    return e.what();
  }
  return "(no IoError)";
}

// 3 MB of text (larger than the codecs' pieces) as token datasets, each codec.
std::string pack_text_tokens(const fs::path& dir, const std::string& codec) {
  const fs::path text = dir / "corpus.txt";
  if (!fs::exists(text)) write_text(text, wordy_text(3'000'000, 11));
  TokenPackOptions o;
  o.pack.out_url = (dir / codec).string();
  o.pack.shard_bytes = 400'000 * 2;  // 400k u16 tokens per shard: 8 shards
  o.pack.compress = codec;
  o.val_fraction = 0;
  pack_tokens({{text.string(), TokenFormat::text}}, o);
  return (dir / codec / "train").string();
}

Manifest manifest_at(const std::string& dir) {
  std::ifstream in(fs::path(dir) / "manifest.json");
  return Manifest::from_json(std::string(std::istreambuf_iterator<char>(in), {}), dir);
}

struct TokenRun {
  std::vector<Rows> rows;
  strata::DataMetrics metrics;
  int64_t usage = 0, max_usage = 0;
};

TokenRun read_tokens(const std::string& url, const fs::path& cache, int64_t cache_bytes) {
  TokenLoaderOptions o = token_options(url, cache, 128, 16);
  o.cache_bytes = cache_bytes;
  TokenLoader l(o);
  TokenRun r;
  strata::HostBatch b;
  while (l.next(b)) {
    r.rows.push_back(rows_of(b));
    r.max_usage = std::max(r.max_usage, l.cache().usage_bytes());
  }
  r.metrics = l.metrics();
  r.usage = l.cache().usage_bytes();
  return r;
}

}  // namespace

TEST(ShardCodec, RoundTripsAndRefusesDamage) {
  const auto dir = scratch_dir("codec");
  const std::string plain = wordy_text(5'000'000, 3);  // several of either codec's pieces
  for (const auto& codec : kCodecs) {
    SCOPED_TRACE(codec);
    const auto frame = frame_of(dir, codec, plain);
    EXPECT_LT(frame.size(), plain.size() / 2) << "text compresses";
    EXPECT_EQ(decode(codec, frame, static_cast<int64_t>(plain.size())), bytes_of(plain));

    auto corrupt = frame;
    corrupt[corrupt.size() / 2] ^= 0x5A;
    EXPECT_NE(error_of([&] { decode(codec, corrupt, 1 << 30); }), "(no IoError)");
    auto cut = frame;
    cut.resize(frame.size() / 2);
    EXPECT_NE(error_of([&] { decode(codec, cut, 1 << 30); }).find("truncated"), std::string::npos);
    auto trailing = frame;
    trailing.push_back(0);
    EXPECT_NE(error_of([&] { decode(codec, trailing, 1 << 30); }).find("follow the end"), std::string::npos);
    EXPECT_NE(error_of([&] { decode(codec, frame, 1000); }).find("more than the 1000 bytes"),
              std::string::npos);
  }
  EXPECT_THROW(compress_shard_file(dir / "plain", dir / "x", "gzip", 0), strata::ConfigError);
  EXPECT_THROW(compress_shard_file(dir / "plain", dir / "x", "zstd", 99), strata::ConfigError);
}

TEST(CompressedShards, TokenBatchesMatchTheUncompressedPack) {
  const auto dir = scratch_dir("tokens");
  const std::string none_url = pack_text_tokens(dir, "none");
  const Manifest none = manifest_at(none_url);
  ASSERT_GE(none.shards.size(), 4u);
  const TokenRun want = read_tokens(none_url, dir / "cache-none", 64 << 20);
  EXPECT_EQ(want.metrics.remote_bytes, none.total_bytes());
  for (const auto& codec : kCodecs) {
    SCOPED_TRACE(codec);
    const std::string url = pack_text_tokens(dir, codec);
    const Manifest m = manifest_at(url);
    EXPECT_EQ(m.object_compression, codec);
    EXPECT_EQ(m.compression, "none");
    EXPECT_EQ(m.total_staged_bytes(), none.total_bytes()) << "the same shard files, compressed";
    EXPECT_LT(m.total_bytes(), none.total_bytes() / 2);
    const TokenRun got = read_tokens(url, dir / ("cache-" + codec), 64 << 20);
    EXPECT_TRUE(got.rows == want.rows) << "batches differ from the uncompressed pack";
    EXPECT_EQ(got.rows.size(), want.rows.size());
    // From the store: the objects as stored, once each.
    EXPECT_EQ(got.metrics.remote_bytes, m.total_bytes());
    // In the cache: the decompressed shard files.
    EXPECT_EQ(got.usage, m.total_staged_bytes());
  }
}

TEST(CompressedShards, CacheSmallerThanTheDatasetCountsDecompressedBytes) {
  const auto dir = scratch_dir("tokens-window");
  const std::string none_url = pack_text_tokens(dir, "none");
  const Manifest none = manifest_at(none_url);
  // Room for 3 of the 8 shard files: the loader streams in windows. The objects
  // would all fit (zstd and lz4 both fit under half), so a cache that counted
  // object sizes would keep them all and overrun the cap.
  const int64_t cap = 3 * none.shards[0].bytes + 1000;
  ASSERT_LT(cap, none.total_bytes());
  const TokenRun want = read_tokens(none_url, dir / "cache-none", cap);
  for (const auto& codec : kCodecs) {
    SCOPED_TRACE(codec);
    const std::string url = pack_text_tokens(dir, codec);
    ASSERT_GT(cap, manifest_at(url).total_bytes());
    const TokenRun got = read_tokens(url, dir / ("cache-" + codec), cap);
    EXPECT_TRUE(got.rows == want.rows);
    EXPECT_LE(got.max_usage, cap);
    EXPECT_GT(got.max_usage, 0);
  }
}

TEST(CompressedShards, RecordBatchesMatchTheUncompressedPack) {
  const auto dir = scratch_dir("records");
  write_text(dir / "records.bin", wordy_text(2'000'000, 5));
  auto run = [&](const std::string& codec, strata::DataMetrics* metrics) {
    PackOptions p;
    p.out_url = (dir / codec).string();
    p.shard_bytes = 300'000;
    p.compress = codec;
    const Manifest m = pack_raw((dir / "records.bin").string(), "u8", 200, p);
    LoaderOptions o;
    o.url = p.out_url;
    o.cache_dir = dir / ("cache-" + codec);
    o.cache_bytes = 64 << 20;
    o.seed = 3;
    o.batch_size = 32;
    o.staging_threads = 2;
    Loader l(o);
    std::vector<std::string> batches;
    strata::HostBatch b;
    while (l.next(b))
      for (auto& f : b.fields)
        batches.emplace_back(reinterpret_cast<const char*>(f.bytes.data()), f.bytes.size());
    *metrics = l.metrics();
    EXPECT_EQ(metrics->remote_bytes, m.total_bytes());
    EXPECT_EQ(l.cache().usage_bytes(), m.total_staged_bytes());
    return std::make_pair(batches, m);
  };
  strata::DataMetrics none_metrics;
  const auto [want, none] = run("none", &none_metrics);
  ASSERT_GE(none.shards.size(), 4u);
  ASSERT_FALSE(want.empty());
  for (const auto& codec : kCodecs) {
    SCOPED_TRACE(codec);
    strata::DataMetrics metrics;
    const auto [got, m] = run(codec, &metrics);
    EXPECT_TRUE(got == want) << "batches differ from the uncompressed pack";
    EXPECT_LT(metrics.remote_bytes, none_metrics.remote_bytes / 2);
    EXPECT_EQ(m.total_staged_bytes(), none.total_bytes());
  }
}

// A damaged object whose manifest entry matches it (as if packed that way): the
// object's checksum passes, its decoding must not. Nothing reaches shards/.
TEST(CompressedShards, CorruptOrTruncatedObjectIsAnErrorNamingTheShard) {
  for (const auto& codec : kCodecs)
    for (const std::string damage : {"corrupt", "truncated"}) {
      SCOPED_TRACE(codec + " " + damage);
      const auto dir = scratch_dir("damaged-" + codec + "-" + damage);
      const std::string url = pack_text_tokens(dir, codec);
      Manifest m = manifest_at(url);
      ShardInfo& s = m.shards[1];
      const fs::path object = fs::path(url) / s.name;
      if (damage == "corrupt")
        flip_byte(object, static_cast<uint64_t>(s.bytes / 2));
      else
        fs::resize_file(object, static_cast<uint64_t>(s.bytes / 2));
      s.bytes = static_cast<int64_t>(fs::file_size(object));
      s.checksum = checksum_file(object.string());
      std::ofstream(fs::path(url) / "manifest.json", std::ios::trunc) << m.to_json();

      HookedSource src(url);
      ShardCacheOptions o;
      o.dir = dir / "cache";
      o.capacity_bytes = 64 << 20;
      ShardCache cache(src, o);
      EXPECT_NO_THROW(cache.acquire(m.shards[0]));
      const std::string err = error_of([&] { cache.acquire(m.shards[1]); });
      EXPECT_NE(err.find("shard " + s.name), std::string::npos) << err;
      EXPECT_NE(err.find(src.url()), std::string::npos) << err;
      if (damage == "truncated") {
        EXPECT_NE(err.find("truncated"), std::string::npos) << err;
      }
      EXPECT_FALSE(fs::exists(o.dir / "shards" / s.name)) << "a damaged shard was committed";
      EXPECT_TRUE(fs::is_empty(o.dir / ".tmp")) << "a temporary was left behind";
      EXPECT_EQ(cache.usage_bytes(), m.shards[0].plain_bytes);
    }
}

TEST(CompressedShards, CompressionWithEncryptionIsRefused) {
  const auto dir = scratch_dir("with-key");
  std::array<uint8_t, DataKey::kBytes> raw{};
  raw[0] = 1;
  PackOptions p;
  p.out_url = (dir / "out").string();
  p.compress = "zstd";
  p.key = std::make_shared<DataKey>(DataKey::from_bytes(raw, "test key"));
  try {
    DatasetPacker packer({{"x", "u8", {4}, false}}, p);
    FAIL() << "packed compressed and encrypted";
  } catch (const strata::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("compressed or encrypted, not both"), std::string::npos) << e.what();
  }
  p.key = nullptr;
  p.compress = "bogus";
  try {
    DatasetPacker packer({{"x", "u8", {4}, false}}, p);
    FAIL() << "packed with codec 'bogus'";
  } catch (const strata::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--compress 'bogus': expected one of none, zstd, lz4"),
              std::string::npos)
        << e.what();
  }
  // A manifest saying both is refused when read.
  Manifest m;
  m.schema = {{"x", "u8", {4}, false}};
  m.object_compression = "zstd";
  m.encryption = {"aes-256-gcm", "sha256:0123456789abcdef", std::string(32, 'a'),
                  "hmac-sha256:" + std::string(64, 'b')};
  EXPECT_THROW(Manifest::from_json(m.to_json(), "test"), strata::IoError);
  // An old manifest (no object_compression) reads as "none".
  m.encryption = {};
  m.object_compression = "none";
  EXPECT_EQ(m.to_json().find("object_compression"), std::string::npos);
  EXPECT_EQ(Manifest::from_json(m.to_json(), "test").object_compression, "none");
}
