// The default shuffle window (shuffle_block.h) against the plans it stands for:
// the bound is never below what a real epoch's plan pins (any window, epoch,
// world size, rank, remainder rule, uneven shards), so the widest window never
// fails the loader's capacity check; with even shards it is as wide as the cache
// allows, not narrower; a cache that holds the dataset gets one window.
#include <gtest/gtest.h>

#include <numeric>

#include "base/error.h"
#include "data/format/plan_rng.h"
#include "data/loader/order_planner.h"
#include "data/loader/shuffle_block.h"
#include "data/loader/staging_plan.h"

using namespace strata::data;

namespace {

// A manifest of `samples.size()` shards; only the names, counts and sizes matter.
Manifest manifest_of(const std::vector<int64_t>& samples, const std::vector<int64_t>& bytes) {
  Manifest m;
  for (size_t i = 0; i < samples.size(); ++i)
    m.shards.push_back({"s" + std::to_string(i), samples[i], bytes[i], "xxh3:0", 0, ""});
  return m;
}

// What one rank's epoch pins at most: the loader's own measure.
int64_t plan_pins(const std::vector<int64_t>& samples, const Manifest& m, int64_t window, int64_t gb,
                  int world, int rank, int64_t ring, Remainder rem, int64_t epoch) {
  OrderOptions o;
  o.seed = 77;
  o.global_batch = gb;
  o.shuffle_window = window;
  o.remainder = rem;
  auto order = rank_order(global_order(samples, o, epoch), gb, world, rank);
  return StagingPlan(order, m).max_bytes_in_span(ring * (gb / world));
}

int64_t total(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t{0}); }

}  // namespace

TEST(ShuffleBlock, BoundCoversEveryPlanWithUnevenShards) {
  PlanRng rng(5);
  int checked = 0;
  for (int dataset = 0; dataset < 6; ++dataset) {
    const int n = 3 + static_cast<int>(rng.below(14));
    std::vector<int64_t> samples, bytes;
    for (int i = 0; i < n; ++i) {
      samples.push_back(
          1 + static_cast<int64_t>(rng.below(dataset % 2 ? 12 : 60)));  // windows smaller than a span too
      bytes.push_back(1000 + static_cast<int64_t>(rng.below(9000)));
    }
    const Manifest m = manifest_of(samples, bytes);
    for (int64_t gb : {4, 12}) {
      if (total(samples) < gb) continue;
      for (int world : {1, 2, 4}) {
        if (gb % world) continue;
        for (int64_t ring : {1, 4})
          for (Remainder rem : {Remainder::kDrop, Remainder::kPad})
            for (int64_t w = 1; w <= n; ++w) {
              const WindowBudget b{.global_batch = gb, .span_batches = ring, .pad = rem == Remainder::kPad};
              const int64_t bound = window_pin_bound(samples, bytes, w, b);
              for (int64_t epoch = 0; epoch < 3; ++epoch)
                for (int r = 0; r < world; ++r) {
                  ASSERT_LE(plan_pins(samples, m, w, gb, world, r, ring, rem, epoch), bound)
                      << "dataset " << dataset << " window " << w << " gb " << gb << " world " << world
                      << " rank " << r << " ring " << ring << " pad " << (rem == Remainder::kPad) << " epoch "
                      << epoch;
                  ++checked;
                }
            }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(ShuffleBlock, WidestWindowPassesTheCapacityCheckInEveryEpoch) {
  PlanRng rng(9);
  const int n = 30;
  std::vector<int64_t> samples, bytes;
  for (int i = 0; i < n; ++i) {
    samples.push_back(40 + static_cast<int64_t>(rng.below(40)));
    bytes.push_back(100'000 + static_cast<int64_t>(rng.below(50'000)));
  }
  const Manifest m = manifest_of(samples, bytes);
  const int64_t whole = total(bytes);
  for (int64_t cache : {whole / 2, whole * 3 / 4}) {
    for (int lr : {1, 2}) {
      const int64_t gb = 16, ring = 4, lookahead = 150'000;
      const WindowBudget b{.cache_bytes = cache,
                           .lookahead_bytes = lookahead,
                           .local_ranks = lr,
                           .global_batch = gb,
                           .span_batches = ring};
      const int64_t w = widest_shuffle_window(samples, bytes, b);
      EXPECT_GT(w, 1) << "cache " << cache << ", " << lr << " local ranks: the test wants a real block";
      for (int64_t epoch = 0; epoch < 8; ++epoch)
        for (int r = 0; r < lr; ++r) {
          const int64_t pins = plan_pins(samples, m, w, gb, lr, r, ring, Remainder::kDrop, epoch);
          EXPECT_LE(node_cache_need(pins, lookahead, whole, lr), cache)
              << "window " << w << " epoch " << epoch << " rank " << r << " of " << lr;
        }
    }
  }
}

// Even shards (as strata-pack writes them): the batches in flight straddle two
// windows, so the bound is 2 windows, and the widest window is exactly the one
// whose two windows plus the look-ahead, for each local rank, fill the cache. One
// shard more per window and a real epoch's plan needs more than the cache.
TEST(ShuffleBlock, EvenShardsGetTheWidestWindowThatFits) {
  const int n = 80;  // more than any cache below holds: the window, not the dataset, decides
  const int64_t shard = 1'000'000, lookahead = 1'000'000, gb = 32, ring = 4;
  const std::vector<int64_t> samples(n, 100), bytes(n, shard);
  const Manifest m = manifest_of(samples, bytes);
  for (int lr : {1, 2, 4})
    for (int64_t want : {2, 5, 9}) {
      const int64_t cache = lr * (2 * want * shard + lookahead);
      const WindowBudget b{.cache_bytes = cache,
                           .lookahead_bytes = lookahead,
                           .local_ranks = lr,
                           .global_batch = gb,
                           .span_batches = ring};
      EXPECT_EQ(window_pin_bound(samples, bytes, want, b), 2 * want * shard);
      ASSERT_EQ(widest_shuffle_window(samples, bytes, b), want) << lr << " local ranks";
      int64_t most = 0;
      for (int64_t epoch = 0; epoch < 4; ++epoch)
        most = std::max(most, plan_pins(samples, m, want + 1, gb, 1, 0, ring, Remainder::kDrop, epoch));
      EXPECT_GT(node_cache_need(most, lookahead, n * shard, lr), cache)
          << "window " << want + 1 << " must not fit: the chosen width is the widest, not a safe guess";
    }
}

TEST(ShuffleBlock, ADatasetTheCacheHoldsIsOneWindow) {
  const std::vector<int64_t> samples(12, 50), bytes(12, 1000);
  WindowBudget b{.cache_bytes = 12'000, .lookahead_bytes = 1 << 30, .local_ranks = 8, .global_batch = 64};
  EXPECT_EQ(widest_shuffle_window(samples, bytes, b), 12);
  b.cache_bytes = 11'999;  // one byte short of the dataset, with a look-ahead larger than it
  EXPECT_EQ(widest_shuffle_window(samples, bytes, b), 1) << "nothing fits: the loader's check reports it";
}

TEST(ShuffleBlock, MismatchedInputsAreRefused) {
  try {
    widest_shuffle_window({10, 10}, {100}, WindowBudget{});
    FAIL() << "expected a ConfigError";
  } catch (const strata::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("2 sample counts for 1 shard sizes"), std::string::npos) << e.what();
  }
  EXPECT_THROW(window_pin_bound({10}, {100}, 1, WindowBudget{.global_batch = 0}), strata::ConfigError);
}
