// strata-pack tokens (data/token_packer) on real files: byte-level text, a
// synthetic llm.c .bin, a raw nanoGPT-style .bin; the shards are reopened and the
// token stream compared token by token, and the split checked at its boundary.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "base/error.h"
#include "data/format/shard.h"
#include "data/format/token_packer.h"
#include "test_util.h"

namespace strata::data {
namespace {

namespace fs = std::filesystem;

// The token stream of one packed dataset, shard after shard (tokens widened to i64).
std::vector<int64_t> read_tokens(const fs::path& dir, Manifest* out = nullptr) {
  const Manifest m = Manifest::from_json(testing::read_file(dir / "manifest.json"), dir.string());
  EXPECT_EQ(m.schema.size(), 1u);
  EXPECT_EQ(m.schema[0].name, "tokens");
  EXPECT_TRUE(m.schema[0].shape.empty());
  std::vector<int64_t> tokens;
  for (const auto& s : m.shards) {
    EXPECT_EQ(checksum_file((dir / s.name).string()), s.checksum) << s.name;
    EXPECT_EQ(static_cast<int64_t>(fs::file_size(dir / s.name)), s.bytes) << s.name;
    ShardData d = ShardData::read((dir / s.name).string(), m.schema);
    EXPECT_EQ(d.samples(), s.samples);
    for (int64_t i = 0; i < d.samples(); ++i) {
      size_t n;
      const uint8_t* p = d.sample(0, i, &n);
      if (m.schema[0].dtype == "u16") {
        uint16_t v;
        EXPECT_EQ(n, 2u);
        std::memcpy(&v, p, 2);
        tokens.push_back(v);
      } else {
        int32_t v;
        EXPECT_EQ(n, 4u);
        std::memcpy(&v, p, 4);
        tokens.push_back(v);
      }
    }
  }
  if (out) *out = m;
  return tokens;
}

std::string u16_bytes(const std::vector<uint16_t>& t) {
  return std::string(reinterpret_cast<const char*>(t.data()), 2 * t.size());
}

std::string llmc_file(const std::vector<uint16_t>& t, int32_t version = 1, int64_t claimed = -1) {
  std::vector<int32_t> header(256, 0);
  header[0] = kLlmcMagic;
  header[1] = version;
  header[2] = static_cast<int32_t>(claimed >= 0 ? claimed : static_cast<int64_t>(t.size()));
  return std::string(reinterpret_cast<const char*>(header.data()), kLlmcHeaderBytes) + u16_bytes(t);
}

std::vector<uint16_t> gpt2_like_tokens(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(0, 50256);
  std::vector<uint16_t> t(n);
  for (auto& v : t) v = static_cast<uint16_t>(d(rng));
  return t;
}

TokenPackOptions options(const fs::path& out, int64_t shard_bytes, double val_fraction) {
  TokenPackOptions o;
  o.pack.out_url = out.string();
  o.pack.shard_bytes = shard_bytes;
  o.val_fraction = val_fraction;
  return o;
}

TEST(TokenPack, TextIsByteLevelAndSplitAtTheEnd) {
  auto dir = testing::scratch_dir("tokens-text");
  std::string a = "It was the best of times, it was the worst of times.\n";
  for (int r = 0; r < 40; ++r) a += "Line " + std::to_string(r) + " of a small text.\n";
  std::string b;
  for (int c = 0; c < 256; ++c) b += static_cast<char>(c);  // every byte value, NUL and 0xff included
  testing::write_file(dir / "a.txt", a);
  testing::write_file(dir / "b.txt", b);
  const std::string all = a + b;
  const TokenPackResult r = pack_tokens(
      {{(dir / "a.txt").string(), TokenFormat::text}, {(dir / "b.txt").string(), TokenFormat::text}},
      options(dir / "out", 2 * 300, 0.1));
  const auto n_val = static_cast<size_t>(std::llround(all.size() * 0.1));
  Manifest train, val;
  const auto t = read_tokens(dir / "out" / "train", &train);
  const auto v = read_tokens(dir / "out" / "val", &val);
  EXPECT_EQ(train.vocab_size, 256);
  EXPECT_EQ(val.vocab_size, 256);
  EXPECT_EQ(train.schema[0].dtype, "u16");
  EXPECT_EQ(r.train.total_samples(), static_cast<int64_t>(all.size() - n_val));
  ASSERT_EQ(t.size(), all.size() - n_val);
  ASSERT_EQ(v.size(), n_val);
  EXPECT_GT(train.shards.size(), 2u);  // 300 tokens per shard
  for (const auto& s : train.shards) EXPECT_LE(s.samples, 300);
  for (size_t i = 0; i < all.size(); ++i)
    ASSERT_EQ(i < t.size() ? t[i] : v[i - t.size()], static_cast<unsigned char>(all[i])) << "token " << i;
}

TEST(TokenPack, LlmcAndRawFilesGiveTheSameStream) {
  auto dir = testing::scratch_dir("tokens-u16");
  const auto tokens = gpt2_like_tokens(5000, 7);
  testing::write_file(dir / "llmc.bin", llmc_file(tokens));
  testing::write_file(dir / "raw.bin", u16_bytes(tokens));
  const Uint16FileLayout l = inspect_uint16_file((dir / "llmc.bin").string());
  EXPECT_TRUE(l.llmc);
  EXPECT_EQ(l.offset, kLlmcHeaderBytes);
  EXPECT_EQ(l.tokens, 5000);
  const Uint16FileLayout raw = inspect_uint16_file((dir / "raw.bin").string());
  EXPECT_FALSE(raw.llmc);
  EXPECT_EQ(raw.offset, 0);
  EXPECT_EQ(raw.tokens, 5000);
  const int64_t max_token = *std::max_element(tokens.begin(), tokens.end());
  for (const char* name : {"llmc.bin", "raw.bin"}) {
    const fs::path out = dir / (std::string(name) + ".out");
    pack_tokens({{(dir / name).string(), TokenFormat::uint16}}, options(out, 2 * 1024, 0.05));
    Manifest m;
    auto t = read_tokens(out / "train", &m);
    const auto v = read_tokens(out / "val");
    EXPECT_EQ(m.vocab_size, max_token + 1) << name;
    EXPECT_EQ(v.size(), 250u) << name;
    t.insert(t.end(), v.begin(), v.end());
    EXPECT_EQ(t, std::vector<int64_t>(tokens.begin(), tokens.end())) << name;
  }
}

TEST(TokenPack, SeveralUint16FilesConcatenate) {
  auto dir = testing::scratch_dir("tokens-multi");
  const auto a = gpt2_like_tokens(700, 1), b = gpt2_like_tokens(300, 2);
  testing::write_file(dir / "a.bin", llmc_file(a));
  testing::write_file(dir / "b.bin", u16_bytes(b));
  pack_tokens(
      {{(dir / "a.bin").string(), TokenFormat::uint16}, {(dir / "b.bin").string(), TokenFormat::uint16}},
      options(dir / "out", 1 << 20, 0.0));
  auto want = std::vector<int64_t>(a.begin(), a.end());
  want.insert(want.end(), b.begin(), b.end());
  EXPECT_EQ(read_tokens(dir / "out" / "train"), want);
  Manifest val;
  EXPECT_TRUE(read_tokens(dir / "out" / "val", &val).empty());
  EXPECT_TRUE(val.shards.empty());
}

TEST(TokenPack, VocabularySizeIsCheckedAndWidensToI32) {
  auto dir = testing::scratch_dir("tokens-vocab");
  const std::vector<uint16_t> tokens = {5, 65535, 0, 300, 7, 8, 9, 10, 11, 12};
  testing::write_file(dir / "t.bin", u16_bytes(tokens));
  TokenPackOptions o = options(dir / "small", 1 << 20, 0.2);
  o.vocab_size = 1000;
  try {
    pack_tokens({{(dir / "t.bin").string(), TokenFormat::uint16}}, o);
    ADD_FAILURE() << "a token above the vocabulary was accepted";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("t.bin"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("65535"), std::string::npos) << e.what();
  }
  o = options(dir / "wide", 1 << 20, 0.2);
  o.vocab_size = 100000;
  pack_tokens({{(dir / "t.bin").string(), TokenFormat::uint16}}, o);
  Manifest m;
  auto t = read_tokens(dir / "wide" / "train", &m);
  const auto v = read_tokens(dir / "wide" / "val");
  EXPECT_EQ(m.schema[0].dtype, "i32");
  EXPECT_EQ(m.vocab_size, 100000);
  t.insert(t.end(), v.begin(), v.end());
  EXPECT_EQ(t, std::vector<int64_t>(tokens.begin(), tokens.end()));
  // Text is byte-level only.
  testing::write_file(dir / "x.txt", "abc");
  o = options(dir / "text", 1 << 20, 0.0);
  o.vocab_size = 300;
  EXPECT_THROW(pack_tokens({{(dir / "x.txt").string(), TokenFormat::text}}, o), ConfigError);
}

// A damaged file fails before anything is written, with its name in the message.
void expect_io_error(const fs::path& file, const char* what) {
  try {
    inspect_uint16_file(file.string());
    ADD_FAILURE() << file << " was accepted";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(TokenPack, DamagedFilesAreClearErrors) {
  auto dir = testing::scratch_dir("tokens-bad");
  const auto tokens = gpt2_like_tokens(100, 3);
  testing::write_file(dir / "short.bin", llmc_file(tokens, 1, 101));  // header claims one more
  testing::write_file(dir / "header.bin", llmc_file(tokens).substr(0, 600));
  testing::write_file(dir / "long.bin", llmc_file(tokens, 1, 99));
  testing::write_file(dir / "v2.bin", llmc_file(tokens, 2));
  testing::write_file(dir / "odd.bin", u16_bytes(tokens) + "x");
  std::string llama3 = llmc_file(tokens, 7);
  const int32_t magic3 = kLlmcLlama3Magic;
  std::memcpy(llama3.data(), &magic3, 4);
  testing::write_file(dir / "llama3.bin", llama3);
  expect_io_error(dir / "short.bin", "truncated");
  expect_io_error(dir / "header.bin", "truncated");
  expect_io_error(dir / "long.bin", "after the 99 tokens");
  expect_io_error(dir / "v2.bin", "version 2");
  expect_io_error(dir / "odd.bin", "truncated");
  expect_io_error(dir / "llama3.bin", "LLaMA-3");
  EXPECT_THROW(
      pack_tokens({{(dir / "short.bin").string(), TokenFormat::uint16}}, options(dir / "o", 64, 0.1)),
      IoError);
  EXPECT_FALSE(fs::exists(dir / "o" / "train" / "manifest.json"));
  EXPECT_THROW(
      pack_tokens({{(dir / "missing.txt").string(), TokenFormat::text}}, options(dir / "o", 64, 0.1)),
      IoError);
  testing::write_file(dir / "one.txt", "a");
  EXPECT_THROW(pack_tokens({{(dir / "one.txt").string(), TokenFormat::text}}, options(dir / "o", 64, 1.0)),
               ConfigError);
}

TEST(TokenManifest, VocabularyNeedsATokenSchema) {
  const std::string shards = R"("shards": [])";
  const auto parse = [&](const std::string& schema, const std::string& vocab) {
    return Manifest::from_json(R"({"format_version": 1, "schema": [)" + schema + "], " + shards +
                                   R"(, "vocab_size": )" + vocab + "}",
                               "test");
  };
  EXPECT_EQ(parse(R"({"name": "tokens", "dtype": "u16", "shape": []})", "50257").vocab_size, 50257);
  EXPECT_THROW(parse(R"({"name": "tokens", "dtype": "u16", "shape": []})", "70000"), IoError);
  EXPECT_THROW(parse(R"({"name": "tokens", "dtype": "u16", "shape": []})", "0"), IoError);
  EXPECT_THROW(parse(R"({"name": "tokens", "dtype": "u16", "shape": [8]})", "256"), IoError);
  EXPECT_THROW(parse(R"({"name": "image", "dtype": "u8", "shape": []})", "256"), IoError);
  EXPECT_THROW(parse(R"({"name": "tokens", "dtype": "f32", "shape": []})", "256"), IoError);
  EXPECT_EQ(parse(R"({"name": "tokens", "dtype": "i32", "shape": []})", "100000").vocab_size, 100000);
  // Round trip through to_json keeps the vocabulary.
  Manifest m = parse(R"({"name": "tokens", "dtype": "u16", "shape": []})", "256");
  EXPECT_EQ(Manifest::from_json(m.to_json(), "again").vocab_size, 256);
}

TEST(TokenPackCli, TextFilesAndErrors) {
  const char* bin = std::getenv("STRATA_BIN_DIR");
  if (!bin) GTEST_SKIP() << "STRATA_BIN_DIR not set (run through ctest)";
  auto dir = testing::scratch_dir("tokens-cli");
  testing::write_file(dir / "a.txt", std::string(1000, 'a'));
  testing::write_file(dir / "b.txt", std::string(1000, 'b'));
  const std::string exe = std::string(bin) + "/strata-pack";
  ASSERT_EQ(std::system((exe + " --help > " + (dir / "help").string()).c_str()), 0);
  const std::string help = testing::read_file(dir / "help");
  for (const char* opt : {"tokens", "--text", "--uint16", "--val-fraction", "--vocab-size"})
    EXPECT_NE(help.find(opt), std::string::npos) << opt;
  const std::string ok = exe + " tokens --text " + (dir / "a.txt").string() + " " + (dir / "b.txt").string() +
                         " --out " + (dir / "out").string() +
                         " --val-fraction 0.25 --shard-size 1KiB --quiet > " + (dir / "log").string();
  ASSERT_EQ(WEXITSTATUS(std::system(ok.c_str())), 0);
  const auto t = read_tokens(dir / "out" / "train"), v = read_tokens(dir / "out" / "val");
  ASSERT_EQ(t.size(), 1500u);
  ASSERT_EQ(v.size(), 500u);
  EXPECT_EQ(t.front(), 'a');
  EXPECT_EQ(t.back(), 'b');
  EXPECT_EQ(v.front(), 'b');
  // A truncated llm.c file: exit 1, named; no file at all: a usage error (exit 2).
  testing::write_file(dir / "cut.bin", llmc_file(gpt2_like_tokens(10, 4), 1, 20));
  const std::string cut = exe + " tokens --uint16 " + (dir / "cut.bin").string() + " --out " +
                          (dir / "o2").string() + " 2> " + (dir / "err").string();
  EXPECT_EQ(WEXITSTATUS(std::system(cut.c_str())), 1);
  EXPECT_NE(testing::read_file(dir / "err").find("cut.bin"), std::string::npos);
  const std::string none = exe + " tokens --text --out " + (dir / "o3").string() + " 2> /dev/null";
  EXPECT_EQ(WEXITSTATUS(std::system(none.c_str())), 2);
}

}  // namespace
}  // namespace strata::data
