// Shard write/read round trips (fixed, variable, deflate), layout readable by
// h5dump, and damaged files failing with errors that name the shard.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "base/error.h"
#include "data/format/shard.h"
#include "test_util.h"

namespace strata::data {
namespace {

std::vector<FieldSpec> schema() {
  return {{"image", "u8", {4, 3}, false},
          {"label", "i64", {}, false},
          {"text", "u8", {}, true},
          {"emb", "f32", {2}, false}};
}

std::string text_of(int i) {
  return std::string(static_cast<size_t>(i % 5), static_cast<char>('a' + i % 26));
}

void write_shard(const std::string& path, int n, int deflate) {
  ShardWriter w(path, schema(), deflate);
  for (int i = 0; i < n; ++i) {
    uint8_t img[12];
    for (int k = 0; k < 12; ++k) img[k] = static_cast<uint8_t>(i + k);
    int64_t label = i * 7 - 3;
    std::string t = text_of(i);
    float emb[2] = {i * 0.5f, -1.0f * i};
    w.add({{img, 12}, {&label, 8}, {t.data(), t.size()}, {emb, 8}});
  }
  EXPECT_EQ(w.samples(), n);
  w.finish();
}

void check_shard(const ShardData& s, int n) {
  ASSERT_EQ(s.samples(), n);
  for (int i = 0; i < n; ++i) {
    size_t size = 0;
    const uint8_t* img = s.sample(0, i, &size);
    ASSERT_EQ(size, 12u);
    for (int k = 0; k < 12; ++k) ASSERT_EQ(img[k], static_cast<uint8_t>(i + k));
    int64_t label;
    std::memcpy(&label, s.sample(1, i, &size), 8);
    ASSERT_EQ(label, i * 7 - 3);
    const uint8_t* t = s.sample(2, i, &size);
    ASSERT_EQ(std::string(reinterpret_cast<const char*>(t), size), text_of(i));
    float emb[2];
    std::memcpy(emb, s.sample(3, i, &size), 8);
    ASSERT_EQ(emb[0], i * 0.5f);
    ASSERT_EQ(emb[1], -1.0f * i);
  }
  size_t size;
  EXPECT_THROW(s.sample(0, n, &size), ShapeError);
}

TEST(Shard, RoundTripUncompressed) {
  auto p = (testing::scratch_dir("shard-plain") / "s.h5").string();
  write_shard(p, 257, 0);
  check_shard(ShardData::read(p, schema()), 257);
}

TEST(Shard, RoundTripDeflate) {
  auto dir = testing::scratch_dir("shard-deflate");
  write_shard((dir / "d.h5").string(), 5000, 6);
  write_shard((dir / "p.h5").string(), 5000, 0);
  check_shard(ShardData::read((dir / "d.h5").string(), schema()), 5000);
  EXPECT_LT(std::filesystem::file_size(dir / "d.h5"), std::filesystem::file_size(dir / "p.h5"));
}

TEST(Shard, EmptyShard) {
  auto p = (testing::scratch_dir("shard-empty") / "e.h5").string();
  write_shard(p, 0, 0);
  EXPECT_EQ(ShardData::read(p, schema()).samples(), 0);
  write_shard(p, 0, 3);
  EXPECT_EQ(ShardData::read(p, schema()).samples(), 0);
}

TEST(Shard, WrongFieldSizeRejected) {
  auto p = (testing::scratch_dir("shard-bad-add") / "s.h5").string();
  ShardWriter w(p, schema());
  uint8_t img[11] = {};
  int64_t label = 0;
  float emb[2] = {};
  EXPECT_THROW(w.add({{img, 11}, {&label, 8}, {"", 0}, {emb, 8}}), ShapeError);
  EXPECT_THROW(w.add({{img, 11}}), ShapeError);
}

void expect_io_error_naming(const std::string& path, const std::vector<FieldSpec>& sch) {
  try {
    ShardData::read(path, sch);
    FAIL() << "read of " << path << " succeeded";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(Shard, TruncatedOrGarbageFileNamesThePath) {
  auto dir = testing::scratch_dir("shard-damaged");
  const std::string good = (dir / "good.h5").string();
  write_shard(good, 3000, 0);
  const std::string bytes = testing::read_file(good);
  for (size_t keep : {bytes.size() / 2, bytes.size() - 100, size_t{100}}) {
    const std::string p = (dir / ("trunc-" + std::to_string(keep) + ".h5")).string();
    testing::write_file(p, bytes.substr(0, keep));
    expect_io_error_naming(p, schema());
  }
  const std::string garbage = (dir / "garbage.h5").string();
  testing::write_file(garbage, std::string(5000, 'z'));
  expect_io_error_naming(garbage, schema());
  expect_io_error_naming((dir / "missing.h5").string(), schema());
}

TEST(Shard, SchemaMismatchNamesDatasetAndPath) {
  auto p = (testing::scratch_dir("shard-mismatch") / "s.h5").string();
  write_shard(p, 10, 0);
  auto other = schema();
  other[0].shape = {3, 4, 1};
  expect_io_error_naming(p, other);
  other = schema();
  other[1].name = "labels";
  expect_io_error_naming(p, other);
  other = schema();
  other[3].dtype = "i64";
  other[3].shape = {1};
  expect_io_error_naming(p, other);
}

// The layout h5py users see: datasets with the sample axis first and the
// attributes on the root group.
TEST(Shard, H5dumpShowsTheDocumentedLayout) {
  if (std::system("command -v h5dump >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "h5dump (hdf5-tools) not installed";
  auto dir = testing::scratch_dir("shard-h5dump");
  const std::string p = (dir / "s.h5").string();
  write_shard(p, 6, 0);
  const std::string out = (dir / "dump.txt").string();
  ASSERT_EQ(std::system(("h5dump -H " + p + " > " + out).c_str()), 0);
  const std::string d = testing::read_file(out);
  for (const char* want : {"ATTRIBUTE \"samples\"", "ATTRIBUTE \"strata_format\"", "DATASET \"image\"",
                           "DATASPACE  SIMPLE { ( 6, 4, 3 ) / ( 6, 4, 3 ) }", "DATASET \"text_offsets\"",
                           "DATASPACE  SIMPLE { ( 7 ) / ( 7 ) }", "H5T_IEEE_F32LE", "H5T_STD_I64LE"})
    EXPECT_NE(d.find(want), std::string::npos) << want << "\n" << d;
}

}  // namespace
}  // namespace strata::data
