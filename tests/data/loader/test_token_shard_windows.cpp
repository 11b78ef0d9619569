// TokenLoader on a token corpus 10x larger than its cache (issue #32): it streams
// through the cache in shard windows (data/loader/token_windows.h). A counting
// corpus of 48 equal shards of 500 tokens, context 40 (12 windows per shard, none
// crossing a shard's end), a cache of a tenth of the corpus (W = 3 shards per
// shard window, one more staged ahead). Checked: every window served once per
// epoch, the cache's bytes on disk sampled at every batch never above the cap,
// bytes from the store per epoch against the bound (each shard once: the
// corpus), orders per (seed, epoch), exact mid-epoch resume, the same global
// batches at world sizes 1, 2 and 3, and the error for a cap below two shards.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "base/error.h"
#include "base/file_lock.h"
#include "data/loader/loader.h"
#include "data/loader/token_loader.h"
#include "token_loader_test_util.h"

using namespace strata::data;
using namespace strata::data::testing;

namespace {

constexpr int64_t kShardTokens = 500, kShards = 48, kContext = 40;

struct Corpus {
  fs::path dir;
  Manifest manifest;
  int64_t cap = 0;  // a tenth of the corpus
};

const Corpus& corpus() {
  static Corpus c = [] {
    Corpus k;
    auto d = scratch_root() / "big-counting";
    fs::create_directories(d);
    k.manifest = pack_counting(d, (d / "out").string(), kShards * kShardTokens, kShardTokens);
    k.dir = d / "out" / "train";
    k.cap = k.manifest.total_bytes() / 10;
    return k;
  }();
  return c;
}

TokenLoaderOptions options(const fs::path& cache, int64_t batch, int rank = 0, int world = 1) {
  TokenLoaderOptions o = token_options(corpus().dir.string(), cache, kContext, batch);
  o.cache_bytes = corpus().cap;
  o.rank = rank;
  o.world_size = world;
  return o;
}

// Bytes the cache directory holds on disk: staged shards and downloads in progress
// (reservations are sparse files and hold none), and shards evicted (removed)
// while this process still maps them: their blocks stay allocated until unmapped
// (counted as their mappings' lengths, from /proc/self/maps). Read under the
// cache's lock, as the cache itself counts: without it, the background stage-ahead
// can evict a shard this scan has already counted and download its successor
// into .tmp/ before the scan reaches it (one shard counted twice; seen in CI).
int64_t bytes_on_disk(const fs::path& dataset_dir) {
  strata::FileLock cache_lock(dataset_dir / ".locks" / "cache.lock");
  cache_lock.lock_exclusive();
  int64_t n = 0;
  std::error_code ec;
  for (const char* sub : {"shards", ".tmp"})
    for (auto& e : fs::directory_iterator(dataset_dir / sub, ec)) n += static_cast<int64_t>(e.file_size(ec));
  std::ifstream maps("/proc/self/maps");
  std::map<std::string, int64_t> deleted;  // inode -> mapped bytes
  for (std::string line; std::getline(maps, line);) {
    if (line.find(dataset_dir.string()) == std::string::npos || line.find("(deleted)") == std::string::npos)
      continue;
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode;
    in >> range >> perms >> offset >> dev >> inode;
    const size_t dash = range.find('-');
    deleted[inode] += static_cast<int64_t>(std::stoull(range.substr(dash + 1), nullptr, 16) -
                                           std::stoull(range.substr(0, dash), nullptr, 16));
  }
  for (auto& [inode, bytes] : deleted) n += bytes;
  return n;
}

// Checks each row is a window of one shard and returns the windows' first tokens.
std::vector<int64_t> starts_of(const std::vector<Rows>& rows) {
  std::vector<int64_t> out;
  for (const Rows& r : rows)
    for (size_t i = 0; i * kContext < r.input.size(); ++i) {
      const int64_t first = r.input[i * kContext];
      EXPECT_EQ(first % kShardTokens % kContext, 0) << "a window starts at token " << first;
      EXPECT_LE(first % kShardTokens + kContext + 1, kShardTokens)
          << "window at " << first << " crosses a shard";
      for (int64_t j = 0; j < kContext; ++j) {
        EXPECT_EQ(r.input[i * kContext + static_cast<size_t>(j)], first + j);
        EXPECT_EQ(r.target[i * kContext + static_cast<size_t>(j)], first + j + 1);
      }
      out.push_back(first);
    }
  return out;
}

TEST(TokenShardWindows, EveryWindowOnceCacheUnderTheCapAndBytesPerEpochAtTheBound) {
  auto root = scratch_dir("shard-windows");
  TokenLoader l(options(root / "cache", 6));
  const int64_t total = l.manifest().total_bytes();
  ASSERT_GE(total, 10 * corpus().cap) << "the corpus is at least 10x the cache";
  EXPECT_EQ(l.window_shards(), 3);  // 4 shards fit: 3 in use and 1 staged ahead
  EXPECT_EQ(l.batches_per_epoch(), kShards * 12 / 6) << "equal shards: no window dropped";
  const fs::path dir = dataset_cache_dir(root / "cache", corpus().dir.string());
  for (int64_t e : {0, 1, 2}) {
    l.start_epoch(e);
    std::vector<Rows> rows;
    int64_t max_disk = 0, max_usage = 0;
    strata::HostBatch b;
    while (l.next(b)) {
      rows.push_back(rows_of(b));
      max_disk = std::max(max_disk, bytes_on_disk(dir));
      max_usage = std::max(max_usage, l.cache().usage_bytes());
    }
    const auto starts = starts_of(rows);
    EXPECT_EQ(starts.size(), static_cast<size_t>(kShards * 12));
    EXPECT_EQ(std::set<int64_t>(starts.begin(), starts.end()).size(), starts.size()) << "a window repeated";
    EXPECT_LE(max_disk, corpus().cap) << "epoch " << e;
    EXPECT_LE(max_usage, corpus().cap) << "epoch " << e;
    const strata::DataMetrics m = l.metrics();
    // Shard windows partition the shards: each is fetched at most once per epoch,
    // all of them once from an empty cache (epoch 0).
    if (e == 0) {
      EXPECT_EQ(m.remote_bytes, total);
    }
    EXPECT_LE(m.remote_bytes, total) << "epoch " << e;
    EXPECT_GT(m.evictions, 0) << "epoch " << e;
    std::printf(
        "epoch %lld: %zu windows once each; cache on disk max %lld bytes (reserved max %lld), cap %lld; "
        "from the store %lld bytes in %lld GETs, bound %lld (the corpus); %lld evictions\n",
        static_cast<long long>(e), starts.size(), static_cast<long long>(max_disk),
        static_cast<long long>(max_usage), static_cast<long long>(corpus().cap),
        static_cast<long long>(m.remote_bytes), static_cast<long long>(m.remote_requests),
        static_cast<long long>(total), static_cast<long long>(m.evictions));
  }
}

TEST(TokenShardWindows, OrdersAreDeterministicPerSeedAndEpoch) {
  auto root = scratch_dir("shard-orders");
  TokenLoader a(options(root / "a", 6));
  TokenLoader b(options(root / "b", 6));
  TokenLoaderOptions other = options(root / "c", 6);
  other.seed = 6;
  TokenLoader c(other);
  const auto e0 = epoch(a, 0), e1 = epoch(a, 1);
  EXPECT_EQ(epoch(b, 0), e0);
  EXPECT_EQ(epoch(b, 1), e1);
  EXPECT_NE(e0, e1);
  EXPECT_NE(epoch(c, 0), e0);
  EXPECT_EQ(epoch(a, 0), e0);  // going back to an epoch gives its order again
  // A global batch reads the shards of one shard window: at most 3 shards.
  for (const Rows& r : e0) {
    std::set<int64_t> shards;
    for (int64_t s : starts_of({r})) shards.insert(s / kShardTokens);
    EXPECT_LE(shards.size(), 3u);
  }
}

// Global batches of epoch `e` from step `from` (restored there) at world size
// `world`; each rank has a cache root of its own (ranks of one process cannot
// wait for each other's pins; on a node they are processes and share one).
std::vector<Rows> global_batches(const fs::path& root, int world, int64_t e, int64_t from) {
  std::vector<std::unique_ptr<TokenLoader>> ranks;
  for (int r = 0; r < world; ++r) {
    char name[32];
    std::snprintf(name, sizeof name, "w%d-r%d", world, r);
    const fs::path cache = root / name;
    ranks.push_back(std::make_unique<TokenLoader>(options(cache, 6 / world, r, world)));
    strata::SourcePosition pos = ranks[0]->position();
    pos["epoch"] = e;
    pos["step"] = from;
    pos["window_shards"] = 3;
    ranks.back()->restore(pos);
  }
  return drain_global(ranks);
}

TEST(TokenShardWindows, RestoreMidEpochAndOtherWorldSizesGiveTheSameGlobalBatches) {
  auto root = scratch_dir("shard-resume");
  TokenLoaderOptions o = options(root / "ref", 6);
  TokenLoader ref(o);
  const auto whole = epoch(ref, 2);
  ASSERT_EQ(whole.size(), 96u);
  // 0: the start; 17: inside a shard window; 18: a shard window's first step; 95: the last.
  for (size_t stop : {size_t{0}, size_t{17}, size_t{18}, size_t{95}}) {
    TokenLoader a(options(root / "a", 6));
    a.start_epoch(2);
    strata::HostBatch b;
    for (size_t i = 0; i < stop; ++i) ASSERT_TRUE(a.next(b));
    const strata::SourcePosition pos = a.position();
    EXPECT_EQ(pos.at("window_shards"), 3);
    TokenLoader fresh(options(root / "fresh", 6));  // as after a restart
    fresh.restore(pos);
    const auto rest = drain(fresh);
    const std::vector<Rows> want(whole.begin() + static_cast<std::ptrdiff_t>(stop), whole.end());
    EXPECT_EQ(rest, want) << "resumed at step " << stop;
    EXPECT_EQ(drain(a), rest);
  }
  for (int world : {2, 3}) {
    EXPECT_EQ(global_batches(root, world, 2, 0), whole) << "world " << world;
    const auto tail = global_batches(root, world, 2, 40);
    EXPECT_EQ(tail, std::vector<Rows>(whole.begin() + 40, whole.end()))
        << "world " << world << " from step 40";
  }
}

// The shard window width is part of the order: a restore keeps the saved one,
// and refuses one its cache cannot hold, naming the key.
TEST(TokenShardWindows, RestoreKeepsTheSavedWidthOrRefusesOneTheCacheCannotHold) {
  auto root = scratch_dir("shard-width");
  TokenLoader ref(options(root / "ref", 6));
  const auto whole = epoch(ref, 1);
  strata::SourcePosition pos = ref.position();
  pos["step"] = 30;
  TokenLoaderOptions big = options(root / "big", 6);
  big.cache_bytes = 2 * corpus().cap;  // would choose W = 8
  TokenLoader wide(big);
  EXPECT_EQ(wide.window_shards(), 8);
  wide.restore(pos);
  EXPECT_EQ(wide.window_shards(), 3);
  EXPECT_EQ(drain(wide), std::vector<Rows>(whole.begin() + 30, whole.end()));
  auto refused = [&](int64_t width, const std::string& part) {
    strata::SourcePosition p = pos;
    p["window_shards"] = width;
    TokenLoader l(options(root / "small", 6));
    try {
      l.restore(p);
      ADD_FAILURE() << "restored window_shards " << width;
    } catch (const strata::ConfigError& e) {
      const std::string m = e.what();
      for (const std::string& want : {std::string("'window_shards'"), std::string("data.cache_bytes"), part})
        EXPECT_NE(m.find(want), std::string::npos) << want << " missing from: " << m;
    }
  };
  refused(5, "saved as 5");                  // 6 shards do not fit a cap of 4.8
  refused(0, "smaller than the dataset's");  // cached whole: the corpus does not fit
}

// Evaluation (no shuffle, padded): stream order as when cached whole, each
// batch's shards only in the cache; the padded last batch reads the head again.
TEST(TokenShardWindows, EvaluationStreamsInOrderUnderTheCap) {
  auto root = scratch_dir("shard-eval");
  TokenLoaderOptions o = options(root / "small", 5);
  o.shuffle = false;
  o.remainder = Remainder::kPad;
  TokenLoaderOptions whole_cache = o;
  whole_cache.cache_dir = root / "whole";
  whole_cache.cache_bytes = 64 << 20;
  TokenLoader ref(whole_cache);
  TokenLoader l(o);
  EXPECT_EQ(l.window_shards(), 0);
  const fs::path dir = dataset_cache_dir(root / "small", corpus().dir.string());
  const int64_t total = l.manifest().total_bytes(), shard = corpus().manifest.shards[0].bytes;
  for (int64_t e : {0, 1}) {
    const auto want = epoch(ref, e);
    l.start_epoch(e);
    std::vector<Rows> got;
    int64_t max_disk = 0, valid = 0;
    strata::HostBatch b;
    while (l.next(b)) {
      got.push_back(rows_of(b));
      valid += got.back().valid;
      max_disk = std::max(max_disk, bytes_on_disk(dir));
    }
    EXPECT_EQ(got, want) << "epoch " << e;
    EXPECT_EQ(valid, (kShards * kShardTokens - 1) / kContext) << "every window once";
    EXPECT_LE(max_disk, corpus().cap);
    // Each shard once, and the head's first shard again for the padded batch.
    const strata::DataMetrics m = l.metrics();
    EXPECT_LE(m.remote_bytes, total + shard) << "epoch " << e;
    std::printf(
        "evaluation epoch %lld: %zu batches as cached whole; cache on disk max %lld, cap %lld; "
        "from the store %lld bytes, bound %lld\n",
        static_cast<long long>(e), got.size(), static_cast<long long>(max_disk),
        static_cast<long long>(corpus().cap), static_cast<long long>(m.remote_bytes),
        static_cast<long long>(total + shard));
  }
  // A global batch spanning more shards than the cap holds: named, with the figure to set.
  TokenLoaderOptions wide = o;
  wide.batch_size = 40;  // 40 x 40 tokens: 5 shards of 500 at least
  try {
    TokenLoader w(wide);
    ADD_FAILURE() << "a global batch wider than the cache was accepted";
  } catch (const strata::ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("one global batch of 40 windows reads in stream order"), std::string::npos) << m;
    EXPECT_NE(m.find("data.cache_bytes"), std::string::npos) << m;
  }
}

TEST(TokenShardWindows, ACapBelowTwoShardsNamesBothSizesAndTheKey) {
  auto root = scratch_dir("shard-cap");
  std::vector<int64_t> bytes;
  for (auto& s : corpus().manifest.shards) bytes.push_back(s.bytes);
  std::sort(bytes.rbegin(), bytes.rend());
  TokenLoaderOptions o = options(root / "cache", 6);
  o.cache_bytes = bytes[0] + bytes[1] - 1;
  try {
    TokenLoader l(o);
    ADD_FAILURE() << "a cache below two shards was accepted";
  } catch (const strata::ConfigError& e) {
    const std::string m = e.what();
    for (const std::string& part :
         {std::to_string(o.cache_bytes), std::to_string(bytes[0]) + " + " + std::to_string(bytes[1]),
          std::string("data.cache_bytes")})
      EXPECT_NE(m.find(part), std::string::npos) << part << " missing from: " << m;
    std::printf("cap %lld: %s\n", static_cast<long long>(o.cache_bytes), m.c_str());
  }
  o.cache_bytes = bytes[0] + bytes[1];  // the least that streams: one shard per shard window
  TokenLoader l(o);
  EXPECT_EQ(l.window_shards(), 1);
  const auto rows = epoch(l, 0);
  EXPECT_EQ(starts_of(rows).size(), static_cast<size_t>(kShards * 12));
}

}  // namespace
