// TokenLoader on token datasets packed by the real packer into tiny shards, read
// from directories: window contents equal the stream (u16 and i32, windows
// crossing one and several shard boundaries, real text), every window once per
// epoch with the same global batches at world sizes 1, 2, 3, orders per (seed,
// epoch), exact and elastic mid-epoch resume, refused restores and evaluation
// padding. token_loader_staging_test.cpp: the cache, errors and metrics.
#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "base/error.h"
#include "data/loader/token_loader.h"
#include "token_loader_test_util.h"

using namespace strata::data;
using namespace strata::data::testing;

namespace {

TEST(TokenLoader, WindowsEqualTheStreamAcrossShardBoundaries) {
  for (int64_t t : {40, 250}) {  // 250 > a shard's 100 tokens: windows span 3 or 4 shards
    auto root = scratch_dir("content");
    TokenLoaderOptions o = token_options(counting_dir().string(), root / "cache", t, 4);
    o.shuffle = false;
    o.remainder = Remainder::kPad;
    TokenLoader l(o);
    EXPECT_EQ(l.manifest().shards.size(), 30u);
    EXPECT_EQ(l.vocab_size(), 3000);
    EXPECT_EQ(l.windows().windows(), 2999 / t);
    const auto ks = windows_of(epoch(l, 0), t);
    ASSERT_EQ(static_cast<int64_t>(ks.size()), l.batches_per_epoch() * 4);
    for (int64_t k = 0; k < l.windows().windows(); ++k) EXPECT_EQ(ks[static_cast<size_t>(k)], k);
  }
}

// An encrypted token dataset (both splits of strata-pack tokens) is staged
// decrypted and served window for window as the plain one; without its key it
// is refused before any shard is read.
TEST(TokenLoader, EncryptedDatasetServesTheSameWindowsAsThePlainOne) {
  auto root = scratch_dir("encrypted");
  auto key = std::make_shared<const DataKey>(DataKey::from_hex(std::string(64, '7'), "test key"));
  ASSERT_TRUE(pack_counting(root, (root / "enc").string(), 1000, 64, 0, {}, key).encrypted());
  pack_counting(root, (root / "plain").string(), 1000, 64);
  TokenLoaderOptions o = token_options((root / "enc" / "train").string(), root / "cache-enc", 30, 3);
  o.key = key;
  TokenLoader enc(o);
  TokenLoader plain(token_options((root / "plain" / "train").string(), root / "cache-plain", 30, 3));
  const std::vector<Rows> rows = epoch(enc, 0);
  EXPECT_EQ(windows_of(rows, 30).size(), 33u / 3 * 3);
  EXPECT_TRUE(rows == epoch(plain, 0));
  o.key = nullptr;
  o.cache_dir = root / "cache-nokey";
  try {
    TokenLoader refused(o);
    ADD_FAILURE() << "an encrypted dataset was opened without its key";
  } catch (const strata::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("is encrypted (key id " + key->id() + ")"), std::string::npos)
        << e.what();
  }
}

TEST(TokenLoader, ReadsI32ShardsAndPackedText) {
  auto root = scratch_dir("i32");
  const Manifest m = pack_counting(root, (root / "out").string(), 1000, 64, 70000);
  ASSERT_EQ(m.schema[0].dtype, "i32");
  TokenLoader wide(token_options((root / "out" / "train").string(), root / "cache", 30, 3));
  EXPECT_EQ(wide.vocab_size(), 70000);
  EXPECT_EQ(windows_of(epoch(wide, 0), 30).size(), 33u / 3 * 3);

  std::string text;
  for (int i = 0; i < 200; ++i) text += "verse " + std::to_string(i) + ": and it was so.\n";
  std::ofstream(root / "t.txt", std::ios::binary) << text;
  TokenPackOptions p;
  p.pack.out_url = (root / "text").string();
  p.pack.shard_bytes = 2 * 300;  // 300 tokens a shard
  p.val_fraction = 0.1;
  pack_tokens({{(root / "t.txt").string(), TokenFormat::text}}, p);
  TokenLoaderOptions o = token_options((root / "text" / "train").string(), root / "cache", 64, 5);
  o.shuffle = false;
  TokenLoader l(o);
  int64_t k = 0;
  for (const Rows& r : epoch(l, 0))
    for (size_t i = 0; i < r.input.size(); ++i, ++k) {
      ASSERT_EQ(r.input[i], static_cast<unsigned char>(text[static_cast<size_t>(k)]))
          << "token " << k << " (windows are consecutive in stream order)";
      ASSERT_EQ(r.target[i], static_cast<unsigned char>(text[static_cast<size_t>(k + 1)]));
    }
  EXPECT_EQ(k, l.batches_per_epoch() * 5 * 64);
}

// Global batches of an epoch at world size `world`: each step's rank slices in rank order.
std::vector<Rows> global_batches(const fs::path& cache, int world, int64_t gb, int64_t e, uint64_t seed) {
  std::vector<std::unique_ptr<TokenLoader>> ranks;
  for (int r = 0; r < world; ++r) {
    TokenLoaderOptions o = token_options(counting_dir().string(), cache, 40, gb / world);
    o.seed = seed;
    o.rank = r;
    o.world_size = world;
    o.local_ranks = world;
    ranks.push_back(std::make_unique<TokenLoader>(o));
    ranks.back()->start_epoch(e);
  }
  return drain_global(ranks);
}

TEST(TokenLoader, EveryWindowOncePerEpochAndTheSameGlobalBatchesAtAnyWorldSize) {
  auto root = scratch_dir("world");
  for (int64_t e : {0, 1}) {
    const auto one = global_batches(root / "cache", 1, 6, e, 5);
    ASSERT_EQ(one.size(), 74u / 6);  // 74 windows of 40; the remainder of 2 is dropped
    const auto ks = windows_of(one, 40);
    EXPECT_EQ(std::set<int64_t>(ks.begin(), ks.end()).size(), ks.size()) << "a window repeated";
    EXPECT_EQ(global_batches(root / "cache", 2, 6, e, 5), one) << "epoch " << e;
    EXPECT_EQ(global_batches(root / "cache", 3, 6, e, 5), one) << "epoch " << e;
  }
}

TEST(TokenLoader, OrdersDifferByEpochAndSeedAndRepeatForTheSame) {
  auto root = scratch_dir("orders");
  TokenLoader a(token_options(counting_dir().string(), root / "cache", 40, 8));
  TokenLoader b(token_options(counting_dir().string(), root / "cache", 40, 8));
  TokenLoaderOptions other = token_options(counting_dir().string(), root / "cache", 40, 8);
  other.seed = 6;
  TokenLoader c(other);
  const auto e0 = epoch(a, 0), e1 = epoch(a, 1);
  EXPECT_EQ(epoch(b, 0), e0);
  EXPECT_EQ(epoch(b, 1), e1);
  EXPECT_NE(e0, e1);
  EXPECT_NE(epoch(c, 0), e0);
  EXPECT_EQ(epoch(a, 0), e0);  // going back to an epoch gives its order again
}

TEST(TokenLoader, RestoreMidEpochYieldsTheRestByteIdentical) {
  auto root = scratch_dir("resume");
  TokenLoaderOptions o = token_options(counting_dir().string(), root / "cache", 40, 6);
  TokenLoader ref(o);
  const auto whole = epoch(ref, 2);
  ASSERT_EQ(whole.size(), 12u);
  for (size_t stop : {size_t{0}, size_t{1}, size_t{5}, whole.size()}) {
    TokenLoader a(o);
    a.start_epoch(2);
    strata::HostBatch b;
    for (size_t i = 0; i < stop; ++i) ASSERT_TRUE(a.next(b));
    const strata::SourcePosition pos = a.position();
    EXPECT_EQ(pos.at("epoch"), 2);
    EXPECT_EQ(pos.at("step"), static_cast<int64_t>(stop));
    EXPECT_EQ(pos.at("context"), 40);
    EXPECT_EQ(pos.at("global_batch"), 6);
    TokenLoader fresh(o);  // as after a restart
    fresh.restore(pos);
    const auto rest = drain(fresh);
    EXPECT_EQ(rest, std::vector<Rows>(whole.begin() + static_cast<std::ptrdiff_t>(stop), whole.end()));
    EXPECT_EQ(drain(a), rest);
    // Elastic: two ranks of 3 resume the same global batches.
    std::vector<Rows> halves[2];
    for (int r = 0; r < 2; ++r) {
      TokenLoaderOptions h = o;
      h.batch_size = 3;
      h.rank = r;
      h.world_size = 2;
      TokenLoader l(h);
      l.restore(pos);
      halves[r] = drain(l);
      ASSERT_EQ(halves[r].size(), rest.size());
    }
    for (size_t i = 0; i < rest.size(); ++i) {
      Rows g = halves[0][i];
      append(g, halves[1][i]);
      EXPECT_EQ(g, rest[i]) << "step " << stop + i;
    }
  }
}

// The message names the key that differs.
void expect_refused(TokenLoader& l, const strata::SourcePosition& pos, const std::string& key) {
  try {
    l.restore(pos);
    ADD_FAILURE() << "restore accepted another " << key;
  } catch (const strata::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'" + key + "'"), std::string::npos) << e.what();
  }
}

TEST(TokenLoader, RestoreRefusesAnotherSeedContextOrGlobalBatch) {
  auto root = scratch_dir("refuse");
  TokenLoaderOptions o = token_options(counting_dir().string(), root / "cache", 40, 6);
  TokenLoader l(o);
  l.start_epoch(1);
  strata::HostBatch b;
  ASSERT_TRUE(l.next(b));
  const auto pos = l.position();
  o.seed = 6;
  TokenLoader seed(o);
  expect_refused(seed, pos, "seed");
  o.seed = 5;
  o.context = 41;
  TokenLoader context(o);
  expect_refused(context, pos, "context");
  o.context = 40;
  o.batch_size = 4;
  TokenLoader batch(o);
  expect_refused(batch, pos, "global_batch");
  auto missing = pos;
  missing.erase("context");
  expect_refused(l, missing, "context");
  auto past = pos;
  past["step"] = l.batches_per_epoch() + 1;
  EXPECT_THROW(l.restore(past), strata::ConfigError);
}

TEST(TokenLoader, EvaluationPadsTheLastBatchAndCountsOnlyRealWindows) {
  auto root = scratch_dir("eval");
  const int world = 2;
  std::vector<std::vector<Rows>> per_rank;
  for (int r = 0; r < world; ++r) {
    TokenLoaderOptions o = token_options(counting_dir().string(), root / "cache", 40, 8);
    o.shuffle = false;
    o.remainder = Remainder::kPad;
    o.rank = r;
    o.world_size = world;
    TokenLoader l(o);
    ASSERT_EQ(l.batches_per_epoch(), 5);  // 74 windows = 4 * 16 + 10
    per_rank.push_back(epoch(l, 0));
  }
  std::vector<int64_t> real, pad;
  for (size_t s = 0; s < 5; ++s)
    for (int r = 0; r < world; ++r) {
      const Rows& b = per_rank[static_cast<size_t>(r)][s];
      const auto ks = windows_of({b}, 40);
      EXPECT_EQ(b.valid, s < 4 ? 8 : (r == 0 ? 8 : 2)) << "step " << s << " rank " << r;
      real.insert(real.end(), ks.begin(), ks.begin() + b.valid);
      pad.insert(pad.end(), ks.begin() + b.valid, ks.end());
    }
  std::vector<int64_t> stream(74), head(6);
  std::iota(stream.begin(), stream.end(), 0);
  std::iota(head.begin(), head.end(), 0);
  EXPECT_EQ(real, stream) << "real windows: each once, in stream order";
  EXPECT_EQ(pad, head) << "padding repeats the first windows";
}

}  // namespace
