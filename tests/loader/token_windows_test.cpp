// TokenWindows: every window exactly once per epoch with target = input shifted
// by one, an order that depends on (seed, epoch) only, exact mid-epoch resume,
// and windows read from packed token shards equal to the packed text.
#include "data/token_windows.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>

#include "base/error.h"
#include "data/token_packer.h"

namespace strata::data {
namespace {

// A stream whose token i is i (mod 50000), so a window's place shows in its ids.
std::vector<int32_t> counting(int64_t n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = static_cast<int32_t>(i % 50000);
  return t;
}

// All windows left in the current epoch, as (input, target) pairs.
std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> drain(TokenWindows& w) {
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> out;
  std::vector<int64_t> in(static_cast<size_t>(w.context())), tg(in.size());
  while (w.next(in.data(), tg.data())) out.emplace_back(in, tg);
  return out;
}

TEST(TokenWindows, EveryWindowOncePerEpochTargetsShiftedByOne) {
  const int64_t n = 1000, t = 16;  // 999 / 16 = 62 windows; the tail is dropped
  TokenWindows w(counting(n), t, 42);
  EXPECT_EQ(w.windows_per_epoch(), (n - 1) / t);
  for (int64_t epoch : {0, 1, 5}) {
    w.start_epoch(epoch);
    const auto all = drain(w);
    ASSERT_EQ(static_cast<int64_t>(all.size()), w.windows_per_epoch());
    std::set<int64_t> starts;
    for (const auto& [in, tg] : all) {
      ASSERT_EQ(in.front() % t, 0);
      starts.insert(in.front());
      for (int64_t i = 0; i < t; ++i) {
        EXPECT_EQ(in[static_cast<size_t>(i)], in.front() + i);
        EXPECT_EQ(tg[static_cast<size_t>(i)], in.front() + i + 1);
      }
    }
    EXPECT_EQ(static_cast<int64_t>(starts.size()), w.windows_per_epoch())
        << "a window repeated in epoch " << epoch;
    EXPECT_EQ(*starts.rbegin(), (w.windows_per_epoch() - 1) * t);
  }
  std::vector<int64_t> in(t), tg(t);
  EXPECT_FALSE(w.next(in.data(), tg.data()));                    // the epoch is over
  EXPECT_THROW(TokenWindows(counting(16), 16, 0), ConfigError);  // needs T + 1 tokens
  EXPECT_EQ(TokenWindows(counting(17), 16, 0).windows_per_epoch(), 1);
}

TEST(TokenWindows, OrderIsAPureFunctionOfSeedAndEpoch) {
  const auto a = TokenWindows::epoch_order(500, 7, 3);
  EXPECT_EQ(a, TokenWindows::epoch_order(500, 7, 3));
  EXPECT_NE(a, TokenWindows::epoch_order(500, 7, 4));
  EXPECT_NE(a, TokenWindows::epoch_order(500, 8, 3));
  std::vector<int64_t> sorted = a, identity(500);
  std::sort(sorted.begin(), sorted.end());
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(sorted, identity);
  EXPECT_NE(a, identity);  // shuffled
  // Two readers with the same seed serve the same windows in the same order.
  TokenWindows x(counting(3000), 32, 11), y(counting(3000), 32, 11);
  x.start_epoch(2);
  y.start_epoch(2);
  EXPECT_EQ(drain(x), drain(y));
}

TEST(TokenWindows, ResumeMidEpochIsExact) {
  const auto tokens = counting(5000);
  TokenWindows ref(tokens, 24, 99);
  ref.start_epoch(1);
  const auto whole = drain(ref);
  for (int64_t stop : std::vector<int64_t>{0, 1, 37, static_cast<int64_t>(whole.size())}) {
    TokenWindows a(tokens, 24, 99);
    a.start_epoch(1);
    std::vector<int64_t> in(24), tg(24);
    for (int64_t i = 0; i < stop; ++i) ASSERT_TRUE(a.next(in.data(), tg.data()));
    const SourcePosition pos = a.position();
    EXPECT_EQ(pos.at("epoch"), 1);
    EXPECT_EQ(pos.at("window"), stop);
    TokenWindows b(tokens, 24, 99);  // a fresh reader, as after a restart
    b.restore(pos);
    const auto rest = drain(b);
    ASSERT_EQ(rest.size(), whole.size() - static_cast<size_t>(stop)) << "stop " << stop;
    for (size_t i = 0; i < rest.size(); ++i) EXPECT_EQ(rest[i], whole[static_cast<size_t>(stop) + i]);
    EXPECT_EQ(drain(a), rest);  // and the original goes on the same way
  }
  TokenWindows other_seed(tokens, 24, 100), other_t(tokens, 25, 99);
  const SourcePosition pos = ref.position();
  EXPECT_THROW(other_seed.restore(pos), ConfigError);
  EXPECT_THROW(other_t.restore(pos), ConfigError);
  SourcePosition bad = pos;
  bad["window"] = ref.windows_per_epoch() + 1;
  EXPECT_THROW(ref.restore(bad), ConfigError);
}

TEST(TokenWindows, ReadsPackedTokenShards) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("strata-token-windows-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string text;
  for (int i = 0; i < 300; ++i) text += "verse " + std::to_string(i) + ": and it was so.\n";
  std::ofstream(dir / "t.txt", std::ios::binary) << text;
  TokenPackOptions o;
  o.pack.out_url = (dir / "out").string();
  o.pack.shard_bytes = 2 * 1000;  // several shards: windows cross shard boundaries
  o.val_fraction = 0.1;
  const TokenPackResult r = pack_tokens({{(dir / "t.txt").string(), TokenFormat::text}}, o);
  ASSERT_GT(r.train.shards.size(), 3u);
  TokenWindows w = TokenWindows::open((dir / "out" / "train").string(), 64, 5);
  EXPECT_EQ(w.tokens(), r.train.total_samples());
  std::vector<int64_t> in(64), tg(64);
  for (int64_t k = 0; k < w.windows_per_epoch(); ++k) {
    w.window(k, in.data(), tg.data());
    for (int64_t i = 0; i < 64; ++i) {
      ASSERT_EQ(in[static_cast<size_t>(i)],
                static_cast<unsigned char>(text[static_cast<size_t>(k * 64 + i)]));
      ASSERT_EQ(tg[static_cast<size_t>(i)],
                static_cast<unsigned char>(text[static_cast<size_t>(k * 64 + i + 1)]));
    }
  }
  EXPECT_THROW(TokenWindows::open((dir / "missing").string(), 64, 5), IoError);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace strata::data
