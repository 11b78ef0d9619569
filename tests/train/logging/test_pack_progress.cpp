// strata-pack's progress (PackOptions::progress): what the reader reports adds
// up to the input and to the shards the manifest lists.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "data/format/packer.h"

namespace {
namespace fs = std::filesystem;
using strata::data::PackProgress;

fs::path scratch(const std::string& name) {
  auto p = fs::temp_directory_path() / ("strata-pack-progress-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

TEST(PackProgress, FilesReportEveryFileAndItsBytesAndTheShardsSealed) {
  const fs::path root = scratch("files");
  int64_t bytes = 0;
  for (int c = 0; c < 3; ++c) {
    fs::create_directories(root / "in" / ("class" + std::to_string(c)));
    for (int i = 0; i < 20; ++i) {
      std::ofstream f(root / "in" / ("class" + std::to_string(c)) / (std::to_string(i) + ".bin"));
      const std::string body(100 + 37 * i, static_cast<char>('a' + c));
      f << body;
      bytes += static_cast<int64_t>(body.size());
    }
  }
  std::vector<PackProgress> seen;
  strata::data::PackOptions o;
  o.out_url = (root / "out").string();
  o.shard_bytes = 2000;
  o.progress = [&](const PackProgress& p) { seen.push_back(p); };
  const strata::data::Manifest m = strata::data::pack_files(root / "in", o);
  ASSERT_EQ(seen.size(), 61u) << "one report per file and one once the last shard is sealed";
  for (size_t i = 0; i < seen.size(); ++i) {
    const PackProgress& p = seen[i];
    EXPECT_EQ(p.unit, "files");
    EXPECT_EQ(p.inputs_total, 60);
    EXPECT_EQ(p.bytes_total, bytes);
    EXPECT_LE(p.inputs_done, p.inputs_total);
    EXPECT_LE(p.bytes_done, p.bytes_total);
    if (i > 0) {
      EXPECT_GE(p.inputs_done, seen[i - 1].inputs_done);
      EXPECT_GE(p.shards_sealed, seen[i - 1].shards_sealed);
    }
  }
  EXPECT_EQ(seen.back().inputs_done, 60);
  EXPECT_EQ(seen.back().bytes_done, bytes);
  EXPECT_EQ(seen.back().shards_sealed, static_cast<int64_t>(m.shards.size()));
  EXPECT_GT(m.shards.size(), 2u);
  EXPECT_LT(seen[seen.size() - 2].shards_sealed, seen.back().shards_sealed)
      << "the last shard is sealed by finish(), after the last file";
  fs::remove_all(root);
}

TEST(PackProgress, RawRecordsCountTheWholeRecordsOfTheFile) {
  const fs::path root = scratch("raw");
  {
    std::ofstream f(root / "in.bin", std::ios::binary);
    f << std::string(10 * 64 + 5, 'x');  // ten records of 64 bytes and a partial one
  }
  PackProgress last;
  int reports = 0;
  strata::data::PackOptions o;
  o.out_url = (root / "out").string();
  o.progress = [&](const PackProgress& p) {
    last = p;
    ++reports;
  };
  strata::data::pack_raw((root / "in.bin").string(), "u8", 64, o);
  EXPECT_EQ(reports, 11);
  EXPECT_EQ(last.unit, "records");
  EXPECT_EQ(last.inputs_done, 10);
  EXPECT_EQ(last.inputs_total, 10);
  EXPECT_EQ(last.bytes_done, 640);
  EXPECT_EQ(last.bytes_total, 640) << "the partial record is not counted";
  EXPECT_EQ(last.shards_sealed, 1);
  fs::remove_all(root);
}

}  // namespace
