// Manifest JSON round trip, validation errors that name origin and field, and checksums.
#include <gtest/gtest.h>

#include "base/error.h"
#include "data/format/manifest.h"
#include "test_util.h"

namespace strata::data {
namespace {

Manifest sample_manifest() {
  Manifest m;
  m.compression = "deflate";
  m.schema = {{"image", "u8", {28, 28}, false}, {"label", "i64", {}, false}, {"text", "u8", {}, true}};
  m.shards = {{"shard-00000.h5", 100, 12345, "xxh3:0123456789abcdef"},
              {"shard-00001.h5", 7, 999, "xxh3:fedcba9876543210"}};
  m.class_names = {"cat", "dog"};
  return m;
}

TEST(Manifest, RoundTrip) {
  Manifest m = sample_manifest();
  Manifest r = Manifest::from_json(m.to_json(), "test");
  EXPECT_EQ(r.format_version, 1);
  EXPECT_EQ(r.compression, "deflate");
  ASSERT_EQ(r.schema.size(), 3u);
  EXPECT_EQ(r.schema[0].shape, (std::vector<int64_t>{28, 28}));
  EXPECT_EQ(r.schema[0].bytes_per_sample(), 784);
  EXPECT_EQ(r.schema[1].bytes_per_sample(), 8);
  EXPECT_TRUE(r.schema[2].variable);
  EXPECT_THROW(r.schema[2].bytes_per_sample(), ConfigError);
  ASSERT_EQ(r.shards.size(), 2u);
  EXPECT_EQ(r.shards[1].name, "shard-00001.h5");
  EXPECT_EQ(r.shards[1].checksum, "xxh3:fedcba9876543210");
  EXPECT_EQ(r.total_samples(), 107);
  EXPECT_EQ(r.total_bytes(), 13344);
  EXPECT_EQ(r.field("label").dtype, "i64");
  EXPECT_EQ(r.class_names, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_THROW(r.field("nope"), ConfigError);
}

// Replaces `from` in the manifest text and expects an IoError whose message names
// the origin and contains `expect`.
void expect_bad(const std::string& from, const std::string& to, const std::string& expect) {
  std::string text = sample_manifest().to_json();
  auto pos = text.find(from);
  ASSERT_NE(pos, std::string::npos) << from;
  text.replace(pos, from.size(), to);
  try {
    Manifest::from_json(text, "s3://b/ds/manifest.json");
    FAIL() << "accepted: " << text;
  } catch (const IoError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("s3://b/ds/manifest.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find(expect), std::string::npos) << msg;
  }
}

TEST(Manifest, ValidationErrorsNameTheField) {
  expect_bad("\"format_version\": 1", "\"format_version\": 3", "format_version");
  expect_bad("\"compression\": \"deflate\"", "\"compression\": \"zstd\"", "compression");
  expect_bad("\"dtype\": \"i64\"", "\"dtype\": \"i65\"", "schema[1].dtype");
  expect_bad("\"samples\": 7", "\"samples\": -7", "shards[1].samples");
  expect_bad("\"samples\": 7", "\"samples\": \"7\"", "shards[1].samples");
  expect_bad("\"checksum\": \"xxh3:fedcba9876543210\"", "\"checksum\": \"md5:x\"", "shards[1].checksum");
  expect_bad("\"name\": \"shard-00000.h5\"", "\"name\": \"../etc/passwd\"", "shards[0].name");
  expect_bad("\"name\": \"label\"", "\"name\": \"image\"", "schema[1].name");
  expect_bad("\"bytes\": 999,", "", "shards[1].bytes");
  expect_bad("\"shards\"", "\"shardz\"", "'shards' is missing");
  expect_bad("{", "[", "not valid JSON");
}

// Manifests that lie about their shards (issue 11): each refused at load time,
// naming the origin and the field, instead of a silent double read, a shard that
// does not fit the cache's accounting, or a wrapped size / std::bad_alloc later.
TEST(Manifest, RefusesDuplicateShardsAndImpossibleCounts) {
  expect_bad("\"name\": \"shard-00001.h5\"", "\"name\": \"shard-00000.h5\"", "shards[1].name");
  expect_bad("\"name\": \"shard-00001.h5\"", "\"name\": \"shard-00000.h5\"",
             "repeats shard 'shard-00000.h5'");
  expect_bad("\"bytes\": 999", "\"bytes\": 0", "shards[1].bytes");
  expect_bad("\"bytes\": 999", "\"bytes\": -999", "shards[1].bytes");
  expect_bad("\"bytes\": 999", "\"bytes\": 9223372036854775808", "shards[1].bytes");  // 2^63 wraps negative
  expect_bad("\"samples\": 7", "\"samples\": -1", "shards[1].samples");
  // Two shards whose totals overflow int64.
  expect_bad("\"bytes\": 999", "\"bytes\": 9223372036854775000", "shards[1].bytes");
}

TEST(Manifest, RefusesShapesWhoseBytesOverflow) {
  // 2^32 x 2^32 u8 wraps to 0 in int64 arithmetic.
  expect_bad("28,\n    28\n", "4294967296,\n    4294967296\n", "schema[0].shape");
  // Fits in int64 as a count, not once multiplied by the 8-byte dtype.
  expect_bad("\"shape\": [],\n   \"variable\": false",
             "\"shape\": [2305843009213693952],\n   \"variable\": false", "schema[1].shape");
  // Bytes per sample fit, a shard's samples times them do not.
  expect_bad("\"samples\": 100", "\"samples\": 4611686018427387904", "shards[0].samples");
  FieldSpec f{"huge", "f32", {int64_t{1} << 31, int64_t{1} << 31}, false};
  EXPECT_THROW(f.bytes_per_sample(), strata::ConfigError);
}

TEST(Checksum, BytesAndFileAgree) {
  std::string data(3 << 20, 'x');  // several 1 MiB pieces of the streaming hash
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 31 + (i >> 9));
  auto dir = testing::scratch_dir("checksum");
  testing::write_file(dir / "f", data);
  const std::string c = checksum_bytes(data.data(), data.size());
  EXPECT_EQ(c, checksum_file((dir / "f").string()));
  EXPECT_EQ(c.size(), 21u);
  EXPECT_EQ(c.rfind("xxh3:", 0), 0u);
  // XXH3-64 of the empty input is a published constant.
  EXPECT_EQ(checksum_bytes("", 0), "xxh3:2d06800538d394c2");
  data[12345] ^= 1;
  EXPECT_NE(c, checksum_bytes(data.data(), data.size()));
  EXPECT_THROW(checksum_file((dir / "missing").string()), IoError);
}

}  // namespace
}  // namespace strata::data
