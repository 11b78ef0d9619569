// strata-pack logic (data/packer) on synthetic IDX, real Fashion-MNIST, file
// trees and raw token files; shards are reopened and checked sample by sample.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "base/error.h"
#include "data/format/packer.h"
#include "data/format/shard.h"
#include "test_util.h"

namespace strata::data {
namespace {

namespace fs = std::filesystem;

std::string idx_header(uint8_t type, std::vector<uint32_t> dims) {
  std::string h = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) h += static_cast<char>((d >> s) & 0xff);
  return h;
}

// Reads every sample of a packed dataset back: (field -> per-sample bytes).
std::vector<std::vector<std::string>> read_back(const fs::path& dir, const Manifest& m) {
  auto src = open_source(dir.string());
  const Manifest again = Manifest::from_json(
      [&] {
        auto b = src->get("manifest.json");
        return std::string(b.begin(), b.end());
      }(),
      dir.string());
  EXPECT_EQ(again.shards.size(), m.shards.size());
  std::vector<std::vector<std::string>> out(m.schema.size());
  for (const auto& s : again.shards) {
    EXPECT_EQ(checksum_file((dir / s.name).string()), s.checksum) << s.name;
    EXPECT_EQ(static_cast<int64_t>(fs::file_size(dir / s.name)), s.bytes) << s.name;
    ShardData d = ShardData::read((dir / s.name).string(), again.schema);
    EXPECT_EQ(d.samples(), s.samples);
    for (size_t f = 0; f < m.schema.size(); ++f)
      for (int64_t i = 0; i < d.samples(); ++i) {
        size_t n;
        const uint8_t* p = d.sample(f, i, &n);
        out[f].emplace_back(reinterpret_cast<const char*>(p), n);
      }
  }
  return out;
}

int64_t as_i64(const std::string& b) {
  int64_t v;
  std::memcpy(&v, b.data(), 8);
  return v;
}

TEST(Pack, SyntheticIdxSplitsIntoShards) {
  auto dir = testing::scratch_dir("pack-idx");
  std::string images = idx_header(0x08, {50, 2, 3}), labels = idx_header(0x08, {50});
  for (int i = 0; i < 50; ++i) {
    for (int k = 0; k < 6; ++k) images += static_cast<char>(i * 6 + k);
    labels += static_cast<char>(i % 10);
  }
  testing::write_file(dir / "img.idx", images);
  testing::write_file(dir / "lab.idx", labels);
  PackOptions o;
  o.out_url = (dir / "out").string();
  o.shard_bytes = 14 * 10;  // 10 samples of 6 + 8 bytes per shard
  o.prefix = "part";
  Manifest m = pack_idx((dir / "img.idx").string(), (dir / "lab.idx").string(), o);
  ASSERT_EQ(m.shards.size(), 5u);
  EXPECT_EQ(m.shards[4].name, "part-00004.h5");
  EXPECT_EQ(m.schema[0].shape, (std::vector<int64_t>{2, 3}));
  auto back = read_back(dir / "out", m);
  ASSERT_EQ(back[0].size(), 50u);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(back[0][i], images.substr(16 + i * 6, 6));
    EXPECT_EQ(as_i64(back[1][i]), i % 10);
  }
}

TEST(Pack, IdxErrorsNameTheFile) {
  auto dir = testing::scratch_dir("pack-idx-err");
  testing::write_file(dir / "img.idx", idx_header(0x08, {3, 2, 2}) + std::string(12, 'x'));
  testing::write_file(dir / "lab.idx", idx_header(0x08, {4}) + std::string(4, 'x'));
  testing::write_file(dir / "bad.idx", "\x12\x34\x08\x01" + std::string(8, 'x'));
  testing::write_file(dir / "short.idx", idx_header(0x08, {3, 2, 2}) + std::string(5, 'x'));
  PackOptions o;
  o.out_url = (dir / "out").string();
  auto expect = [&](const char* img, const char* lab, std::vector<std::string> words) {
    try {
      pack_idx((dir / img).string(), (dir / lab).string(), o);
      FAIL() << img << " " << lab;
    } catch (const IoError& e) {
      for (const auto& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
    }
  };
  expect("img.idx", "lab.idx", {"count mismatch", "img.idx", "lab.idx", "3 images", "4 labels"});
  expect("bad.idx", "lab.idx", {"bad.idx", "bad magic"});
  expect("short.idx", "lab.idx", {"short.idx", "truncated"});
  expect("nope.idx", "lab.idx", {"nope.idx"});
  EXPECT_FALSE(fs::exists(dir / "out" / "manifest.json"));
}

TEST(Pack, FashionMnistTestSet) {
  const std::string base = "/usr/share/datasets/fashion-mnist/";
  if (!fs::exists(base + "t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  auto dir = testing::scratch_dir("pack-fmnist");
  PackOptions o;
  o.out_url = "file://" + (dir / "out").string();
  o.shard_bytes = parse_size("2MiB");
  Manifest m = pack_idx(base + "t10k-images-idx3-ubyte.gz", base + "t10k-labels-idx1-ubyte.gz", o);
  EXPECT_EQ(m.total_samples(), 10000);
  EXPECT_EQ(m.shards.size(), 4u);  // 2 MiB / (784 + 8) bytes = 2648 samples per shard
  auto back = read_back(dir / "out", m);
  ASSERT_EQ(back[0].size(), 10000u);
  std::map<int64_t, int> per_class;
  for (const auto& l : back[1]) ++per_class[as_i64(l)];
  ASSERT_EQ(per_class.size(), 10u);  // the test set has 1000 images of each of 10 classes
  for (auto [c, n] : per_class) EXPECT_EQ(n, 1000) << "class " << c;
  // Label of the first test image is 9 (ankle boot), a known fact of the data set.
  EXPECT_EQ(as_i64(back[1][0]), 9);
  EXPECT_EQ(back[0][0].size(), 784u);
}

TEST(Pack, FilesOneSamplePerFileWithClassNames) {
  auto dir = testing::scratch_dir("pack-files");
  testing::write_file(dir / "in" / "dog" / "b.txt", "dog b");
  testing::write_file(dir / "in" / "cat" / "a.txt", "cat a");
  testing::write_file(dir / "in" / "cat" / "sub" / "c.txt", "");
  testing::write_file(dir / "in" / "cat" / "z.txt", std::string(1000, 'z'));
  PackOptions o;
  o.out_url = (dir / "out").string();
  o.deflate_level = 4;
  Manifest m = pack_files(dir / "in", o);
  EXPECT_EQ(m.class_names, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(m.compression, "deflate");
  auto back = read_back(dir / "out", m);
  ASSERT_EQ(back[0].size(), 4u);
  EXPECT_EQ(back[0][0], "cat a");
  EXPECT_EQ(back[0][1], "");
  EXPECT_EQ(back[0][2], std::string(1000, 'z'));
  EXPECT_EQ(back[0][3], "dog b");
  EXPECT_EQ(as_i64(back[1][2]), 0);
  EXPECT_EQ(as_i64(back[1][3]), 1);
}

// An ImageFolder-like tree sorted by class: `classes` folders of `per_class`
// files whose contents say "<class>:<i>".
void class_tree(const fs::path& root, int classes, int per_class) {
  for (int c = 0; c < classes; ++c)
    for (int i = 0; i < per_class; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "f%03d.txt", i);
      testing::write_file(root / ("class" + std::to_string(c)) / name,
                          std::to_string(c) + ":" + std::to_string(i));
    }
}

// Per shard, the labels it holds, in the order written.
std::vector<std::vector<int64_t>> labels_per_shard(const fs::path& dir, const Manifest& m) {
  std::vector<std::vector<int64_t>> out;
  for (const auto& s : m.shards) {
    ShardData d = ShardData::read((dir / s.name).string(), m.schema);
    out.emplace_back();
    for (int64_t i = 0; i < d.samples(); ++i) {
      size_t n;
      out.back().push_back(as_i64(std::string(reinterpret_cast<const char*>(d.sample(1, i, &n)), 8)));
    }
  }
  return out;
}

// pack_files with a seed writes a permutation: every file once, with its own
// label, the classes spread over the shards (no shard of one class, while the
// sorted order makes the first shards one class each); the same seed gives the
// same order, another seed another.
TEST(Pack, FilesWithASeedSpreadEveryClassOverTheShards) {
  auto dir = testing::scratch_dir("pack-files-seed");
  class_tree(dir / "in", 4, 30);
  auto pack = [&](const std::string& out, std::optional<uint64_t> seed) {
    PackOptions o;
    o.out_url = (dir / out).string();
    // about 24 samples of 6 content bytes, 8 label bytes, a 15-byte name and two 8-byte offsets
    o.shard_bytes = 24 * 45;
    o.shuffle_seed = seed;
    Manifest m = pack_files(dir / "in", o);
    return std::make_pair(m, read_back(dir / out, m));
  };
  const auto [sorted_m, sorted] = pack("sorted", std::nullopt);
  const auto [m, back] = pack("seed0", 0);
  ASSERT_EQ(back[0].size(), 120u);
  std::set<std::string> seen;
  for (size_t i = 0; i < back[0].size(); ++i) {
    seen.insert(back[0][i]);
    EXPECT_EQ(std::to_string(as_i64(back[1][i])), back[0][i].substr(0, back[0][i].find(':')))
        << "file " << back[0][i] << " lost its label";
  }
  EXPECT_EQ(seen.size(), 120u) << "every file exactly once";
  ASSERT_GE(m.shards.size(), 4u);
  int full = 0;
  for (const auto& shard : labels_per_shard(dir / "seed0", m)) {
    std::set<int64_t> classes(shard.begin(), shard.end());
    if (shard.size() < 12) continue;  // the last one
    EXPECT_GE(classes.size(), 3u) << "a shard of " << shard.size() << " samples";
    ++full;
  }
  EXPECT_GE(full, 3) << "shards of at least 12 samples checked";
  const auto sorted_shards = labels_per_shard(dir / "sorted", sorted_m);
  EXPECT_EQ(std::set<int64_t>(sorted_shards[0].begin(), sorted_shards[0].end()).size(), 1u)
      << "without a seed the first shard is one class: what the seed is for";
  EXPECT_EQ(pack("seed0-again", 0).second, back) << "the same seed, the same order";
  EXPECT_NE(pack("seed1", 1).second, back) << "another seed, another order";
}

TEST(Pack, IdxWithASeedKeepsEveryImageWithItsLabel) {
  auto dir = testing::scratch_dir("pack-idx-seed");
  std::string images = idx_header(0x08, {50, 2, 3}), labels = idx_header(0x08, {50});
  for (int i = 0; i < 50; ++i) {
    for (int k = 0; k < 6; ++k) images += static_cast<char>(i * 5 + k);
    labels += static_cast<char>(i / 5);  // sorted by class
  }
  testing::write_file(dir / "img.idx", images);
  testing::write_file(dir / "lab.idx", labels);
  PackOptions o;
  o.out_url = (dir / "out").string();
  o.shuffle_seed = 3;
  Manifest m = pack_idx((dir / "img.idx").string(), (dir / "lab.idx").string(), o);
  auto back = read_back(dir / "out", m);
  ASSERT_EQ(back[0].size(), 50u);
  std::set<int> seen;
  bool moved = false;
  for (int j = 0; j < 50; ++j) {
    const int i = static_cast<uint8_t>(back[0][j][0]) / 5;  // the image's index in the file
    seen.insert(i);
    moved |= i != j;
    EXPECT_EQ(back[0][j], images.substr(16 + i * 6, 6));
    EXPECT_EQ(as_i64(back[1][j]), i / 5) << "image " << i << " lost its label";
  }
  EXPECT_EQ(seen.size(), 50u);
  EXPECT_TRUE(moved) << "a seed must permute";
}

TEST(Pack, RawTokensDropTrailingPartialRecord) {
  auto dir = testing::scratch_dir("pack-raw");
  std::vector<uint16_t> tok(4 * 9 + 3);
  for (size_t i = 0; i < tok.size(); ++i) tok[i] = static_cast<uint16_t>(60000 + i);
  testing::write_file(dir / "tok.bin", std::string(reinterpret_cast<char*>(tok.data()), tok.size() * 2));
  PackOptions o;
  o.out_url = (dir / "out").string();
  o.shard_bytes = 8 * 4;
  std::vector<std::string> log;
  o.log = [&](const std::string& l) { log.push_back(l); };
  Manifest m = pack_raw((dir / "tok.bin").string(), "u16", 4, o);
  EXPECT_EQ(m.schema[0].name, "tokens");
  EXPECT_EQ(m.total_samples(), 9);
  EXPECT_EQ(m.shards.size(), 3u);
  auto back = read_back(dir / "out", m);
  for (int i = 0; i < 9; ++i) {
    uint16_t t[4];
    std::memcpy(t, back[0][i].data(), 8);
    EXPECT_EQ(t[0], 60000 + 4 * i);
    EXPECT_EQ(t[3], 60003 + 4 * i);
  }
  bool reported = false;
  for (const auto& l : log) reported |= l.find("partial record of 6 bytes") != std::string::npos;
  EXPECT_TRUE(reported);
  EXPECT_THROW(pack_raw((dir / "tok.bin").string(), "f64", 4, o), ConfigError);
}

TEST(Pack, ParseSize) {
  EXPECT_EQ(parse_size("4096"), 4096);
  EXPECT_EQ(parse_size("64MB"), 64000000);
  EXPECT_EQ(parse_size("8MiB"), 8 << 20);
  EXPECT_EQ(parse_size("1.5KiB"), 1536);
  EXPECT_EQ(parse_size("2G"), 2ll << 30);
  EXPECT_THROW(parse_size("lots"), ConfigError);
  EXPECT_THROW(parse_size("3XB"), ConfigError);
  EXPECT_THROW(parse_size("-1MB"), ConfigError);
}

TEST(PackCli, HelpDocumentsEveryOption) {
  const char* bin = std::getenv("STRATA_BIN_DIR");
  if (!bin) GTEST_SKIP() << "STRATA_BIN_DIR not set (run through ctest)";
  auto dir = testing::scratch_dir("pack-cli");
  const std::string exe = std::string(bin) + "/strata-pack";
  ASSERT_EQ(std::system((exe + " --help > " + (dir / "help").string()).c_str()), 0);
  const std::string help = testing::read_file(dir / "help");
  for (const char* opt : {"--images", "--labels", "--out", "--shard-size", "--deflate", "--prefix", "--root",
                          "--input", "--sample-bytes", "--tokens", "--seq-len", "--endpoint", "--region",
                          "--encrypt-key-file", "--seed", "--no-shuffle", "--shuffle"})
    EXPECT_NE(help.find(opt), std::string::npos) << opt;
  // A bad option is a usage error (exit 2) that names it.
  const std::string cmd = exe + " idx --images a --labels b --out " + (dir / "o").string() +
                          " --bogus 1 2> " + (dir / "err").string();
  EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 2);
  EXPECT_NE(testing::read_file(dir / "err").find("--bogus"), std::string::npos);
}

// strata-pack files permutes by default (seed 0, as the library with seed 0),
// --no-shuffle keeps the sorted order, and --seed with --no-shuffle, or idx's
// --seed without --shuffle, is a usage error naming both options.
TEST(PackCli, FilesArePermutedByDefault) {
  const char* bin = std::getenv("STRATA_BIN_DIR");
  if (!bin) GTEST_SKIP() << "STRATA_BIN_DIR not set (run through ctest)";
  auto dir = testing::scratch_dir("pack-cli-files");
  class_tree(dir / "in", 4, 30);
  const std::string exe = std::string(bin) + "/strata-pack";
  auto run = [&](const std::string& out, const std::string& extra) {
    const std::string cmd = exe + " files --root " + (dir / "in").string() + " --out " +
                            (dir / out).string() + " --shard-size 336 --quiet --no-verify " + extra +
                            " > /dev/null 2> " + (dir / "err").string();
    return WEXITSTATUS(std::system(cmd.c_str()));
  };
  auto manifest = [&](const std::string& out) {
    return Manifest::from_json(testing::read_file(dir / out / "manifest.json"), out);
  };
  ASSERT_EQ(run("default", ""), 0);
  ASSERT_EQ(run("sorted", "--no-shuffle"), 0);
  PackOptions o;
  o.out_url = (dir / "library").string();
  o.shard_bytes = 336;
  o.shuffle_seed = 0;
  pack_files(dir / "in", o);
  EXPECT_EQ(read_back(dir / "default", manifest("default")), read_back(dir / "library", manifest("library")));
  // one vector: begin() and end() of two calls' temporaries made a range across two
  // allocations (a segfault or a hang, 1 run in 5 on a loaded machine)
  const auto shuffled = labels_per_shard(dir / "default", manifest("default"));
  EXPECT_GE(std::set<int64_t>(shuffled[0].begin(), shuffled[0].end()).size(), 3u);
  const auto sorted = labels_per_shard(dir / "sorted", manifest("sorted"));
  EXPECT_EQ(std::set<int64_t>(sorted[0].begin(), sorted[0].end()).size(), 1u);
  EXPECT_EQ(run("both", "--seed 3 --no-shuffle"), 2);
  EXPECT_NE(testing::read_file(dir / "err").find("--seed excludes --no-shuffle"), std::string::npos)
      << testing::read_file(dir / "err");
  const std::string idx = exe + " idx --images a --labels b --out " + (dir / "o").string() + " --seed 3 2> " +
                          (dir / "err").string();
  EXPECT_EQ(WEXITSTATUS(std::system(idx.c_str())), 2);
  EXPECT_NE(testing::read_file(dir / "err").find("--seed requires --shuffle"), std::string::npos)
      << testing::read_file(dir / "err");
}

// A key file of the wrong size is a usage error naming the option, the file and
// its size, before any input is read; the key's bytes are not printed.
TEST(PackCli, AKeyFileOfTheWrongSizeIsRefused) {
  const char* bin = std::getenv("STRATA_BIN_DIR");
  if (!bin) GTEST_SKIP() << "STRATA_BIN_DIR not set (run through ctest)";
  auto dir = testing::scratch_dir("pack-cli-key");
  testing::write_file(dir / "short.key", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab\n");
  const std::string cmd = "env -u STRATA_DATA_KEY -u STRATA_DATA_KEY_FILE " + std::string(bin) +
                          "/strata-pack idx --images a --labels b --out " + (dir / "o").string() +
                          " --encrypt-key-file " + (dir / "short.key").string() + " 2> " +
                          (dir / "err").string();
  EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 2);
  const std::string err = testing::read_file(dir / "err");
  EXPECT_NE(err.find("--encrypt-key-file: data key file " + (dir / "short.key").string() + " has 61 bytes"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("0123456789abcdef"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(dir / "o" / "manifest.json"));
}

}  // namespace
}  // namespace strata::data
