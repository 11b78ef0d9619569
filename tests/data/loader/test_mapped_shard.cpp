// MappedShard reads the same bytes as ShardData::read: in place for contiguous
// shards, by falling back to ShardData for deflated (chunked) ones; and it names
// the file when a shard does not match the schema.
#include <gtest/gtest.h>

#include <cstring>

#include "base/error.h"
#include "data/format/mapped_shard.h"
#include "loader_test_util.h"

using namespace strata::data;
using namespace strata::data::testing;

namespace {
void write_shard(const fs::path& p, const std::vector<FieldSpec>& schema, int n, int deflate) {
  ShardWriter w(p.string(), schema, deflate);
  for (int i = 0; i < n; ++i) {
    uint8_t x[48];
    for (int b = 0; b < 48; ++b) x[b] = static_cast<uint8_t>(i * 13 + b);
    int64_t y = 1000 + i;
    w.add({{x, sizeof x}, {&y, sizeof y}});
  }
  w.finish();
}
const std::vector<FieldSpec> kSchema = {{"x", "u8", {3, 16}, false}, {"y", "i64", {}, false}};
}  // namespace

TEST(MappedShard, SameBytesAsShardDataMappedOrNot) {
  auto root = scratch_dir("mapped");
  for (int deflate : {0, 1}) {
    auto p = root / ("s" + std::to_string(deflate) + ".h5");
    write_shard(p, kSchema, 37, deflate);
    auto m = MappedShard::open(p.string(), kSchema);
    EXPECT_EQ(m->mapped(), deflate == 0) << "contiguous shards are mapped, deflated ones read";
    ShardData d = ShardData::read(p.string(), kSchema);
    ASSERT_EQ(m->samples(), 37);
    for (int64_t i = 0; i < 37; ++i)
      for (size_t f = 0; f < 2; ++f) {
        size_t size = 0;
        const uint8_t* want = d.sample(f, i, &size);
        EXPECT_EQ(0, std::memcmp(m->sample(f, i), want, size)) << "field " << f << " sample " << i;
      }
  }
}

TEST(MappedShard, SchemaMismatchNamesTheFile) {
  auto root = scratch_dir("mapped-bad");
  auto p = root / "s.h5";
  write_shard(p, kSchema, 5, 0);
  auto other = kSchema;
  other[0].shape = {4, 16};
  try {
    MappedShard::open(p.string(), other);
    FAIL() << "a shard with other shapes was accepted";
  } catch (const strata::IoError& e) {
    EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
  }
}
