// TokenLoader's staging and its edges: two processes sharing the node-local cache
// make one GET per shard (plus the manifest) over two epochs; errors name the
// URL, the token count, the context and the batch, the cache capacity, a
// dataset that holds no tokens; metrics per epoch.
#include <gtest/gtest.h>

#include "base/error.h"
#include "data/loader/token_loader.h"
#include "token_loader_test_util.h"

using namespace strata::data;
using namespace strata::data::testing;

namespace {

TEST(TokenLoader, TwoProcessesSharingTheCacheMakeOneGetPerShard) {
  auto root = scratch_dir("oneget");
  const fs::path data = counting_dir();  // packed here, not by each child
  const int procs = 2;
  auto codes = run_children(procs, [&](int rank, const std::function<void()>& ready) {
    TokenLoaderOptions o = token_options(data.string(), root / "cache", 40, 3);
    o.rank = rank;
    o.world_size = procs;
    o.local_ranks = procs;
    TokenLoader l(o, std::make_unique<HookedSource>(data));
    ready();
    for (int64_t e = 0; e < 2; ++e) {
      if (windows_of(epoch(l, e), 40).size() != 12 * 3) return 5;
      write_count(root / ("misses." + std::to_string(rank) + "." + std::to_string(e)),
                  l.metrics().cache_misses);
    }
    write_count(root / ("requests." + std::to_string(rank)), l.source().stats().requests);
    return ::testing::Test::HasFailure() ? 6 : 0;
  });
  ASSERT_EQ(codes, std::vector<int>(procs, 0));
  int64_t requests = 0, misses = 0;
  for (int r = 0; r < procs; ++r) {
    requests += read_count(root / ("requests." + std::to_string(r)));
    // A rank's half of epoch 0 may miss a shard that its epoch 1 then fetches
    // (before the other rank did): count the node's downloads over both epochs.
    for (int e = 0; e < 2; ++e)
      misses += read_count(root / ("misses." + std::to_string(r) + "." + std::to_string(e)));
  }
  EXPECT_EQ(requests, 30 + 1) << "one GET per shard plus the manifest, for the node";
  EXPECT_EQ(misses, 30) << "each shard downloaded once on the node";
}

TEST(TokenLoader, ErrorsNameWhatIsWrong) {
  auto root = scratch_dir("errors");
  auto message = [](auto&& make) {
    try {
      make();
    } catch (const strata::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string url = counting_dir().string();
  // 74 windows of 40 < a global batch of 80.
  std::string m = message([&] { TokenLoader(token_options(url, root / "c", 40, 80)); });
  for (const char* part : {url.c_str(), "3000 tokens", "context 40", "global batch of 80", "batch 80"})
    EXPECT_NE(m.find(part), std::string::npos) << part << " missing from: " << m;
  m = message([&] { TokenLoader(token_options(url, root / "c", 3000, 1)); });
  EXPECT_NE(m.find("not one window"), std::string::npos) << m;
  auto small = token_options(url, root / "c", 40, 2);
  small.cache_bytes = 1000;
  m = message([&] { TokenLoader{small}; });
  EXPECT_NE(m.find("cache capacity 1000 bytes"), std::string::npos) << m;
  make_dataset(root / "images", 1, 4);
  m = message([&] { TokenLoader(token_options((root / "images").string(), root / "c", 4, 1)); });
  EXPECT_NE(m.find("not a token dataset"), std::string::npos) << m;
}

TEST(TokenLoader, MetricsPerEpoch) {
  auto root = scratch_dir("metrics");
  TokenLoader l(token_options(counting_dir().string(), root / "cache", 40, 6));
  epoch(l, 0);
  strata::DataMetrics m = l.metrics();
  EXPECT_EQ(m.batches, 12);
  EXPECT_EQ(m.samples, 72);
  EXPECT_EQ(m.sample_bytes, 72 * 40 * 2 * 8);
  EXPECT_EQ(m.cache_misses, 30);
  EXPECT_EQ(m.shards_staged, 30);
  EXPECT_EQ(m.remote_requests, 30);  // file:// counts its reads too
  EXPECT_GE(m.wait_seconds, 0);
  epoch(l, 1);
  m = l.metrics();
  EXPECT_EQ(m.batches, 12);
  EXPECT_EQ(m.cache_misses + m.cache_hits + m.shards_staged + m.remote_requests, 0);
}

}  // namespace
