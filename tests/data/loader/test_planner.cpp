// Order planner: purity, exactly-once coverage across ranks, windows, restore and
// elastic restore (the global order does not depend on the world size).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "base/error.h"
#include "data/loader/order_planner.h"
#include "data/loader/staging_plan.h"

using namespace strata::data;

namespace {
const std::vector<int64_t> kShards = {7, 5, 9, 3, 11, 8, 4};  // 47 samples

int64_t key(const SampleRef& r) { return int64_t{r.shard} * 1000 + r.index; }

OrderOptions opts(int64_t gb, Remainder rem = Remainder::kDrop, int64_t window = 2) {
  OrderOptions o;
  o.seed = 1234;
  o.global_batch = gb;
  o.shuffle_window = window;
  o.remainder = rem;
  return o;
}
}  // namespace

TEST(Planner, PureFunctionOfSeedAndEpoch) {
  auto a = global_order(kShards, opts(12), 3);
  auto b = global_order(kShards, opts(12), 3);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, global_order(kShards, opts(12), 4)) << "another epoch must reshuffle";
  auto o = opts(12);
  o.seed = 99;
  EXPECT_NE(a, global_order(kShards, o, 3)) << "another seed must reshuffle";
}

TEST(Planner, FixedValuesDoNotDriftBetweenBuilds) {
  // The order is part of a checkpoint's meaning: the generator must not change silently.
  PlanRng r(42);
  EXPECT_EQ(r.next(), 0xBDD732262FEB6E95ull);
}

TEST(Planner, ExactlyOnceAcrossRanksDropRemainder) {
  for (int64_t gb : {12, 47, 1}) {
    auto global = global_order(kShards, opts(gb), 0);
    const int64_t kept = 47 / gb * gb;
    ASSERT_EQ(static_cast<int64_t>(global.size()), kept);
    for (int world = 1; world <= 4; ++world) {
      if (gb % world) continue;
      std::multiset<int64_t> seen;
      for (int r = 0; r < world; ++r)
        for (auto& s : rank_order(global, gb, world, r)) seen.insert(key(s));
      EXPECT_EQ(static_cast<int64_t>(seen.size()), kept) << "gb " << gb << " world " << world;
      for (auto k : seen) EXPECT_EQ(seen.count(k), 1u) << "sample " << k << " seen twice, world " << world;
    }
  }
}

TEST(Planner, PadRemainderSeesEverySampleAndRepeatsTheHead) {
  const int64_t gb = 12;
  auto global = global_order(kShards, opts(gb, Remainder::kPad), 5);
  ASSERT_EQ(global.size(), 48u);  // 47 padded up to 4 global batches
  for (int world : {1, 2, 3, 4}) {
    std::map<int64_t, int> count;
    for (int r = 0; r < world; ++r)
      for (auto& s : rank_order(global, gb, world, r)) count[key(s)]++;
    EXPECT_EQ(count.size(), 47u) << "every sample at least once, world " << world;
    int repeats = 0;
    for (auto& [k, c] : count) repeats += c - 1;
    EXPECT_EQ(repeats, 1) << "world " << world;
    EXPECT_EQ(count[key(global[0])], 2) << "the pad repeats the head of the order";
  }
}

TEST(Planner, ShuffleWindowKeepsSamplesOfAWindowTogether) {
  auto global = global_order(kShards, opts(1, Remainder::kDrop, 3), 2);
  // Each window of 3 shards occupies one contiguous range: the window id never
  // comes back once it has changed.
  std::set<int32_t> done;
  int32_t cur = -1;
  std::map<int32_t, std::set<int32_t>> shards_of_window;
  for (auto& s : global) {
    if (s.segment != cur) {
      EXPECT_FALSE(done.count(s.segment)) << "window " << s.segment << " split";
      if (cur >= 0) done.insert(cur);
      cur = s.segment;
    }
    shards_of_window[s.segment].insert(s.shard);
  }
  for (auto& [w, sh] : shards_of_window) EXPECT_LE(sh.size(), 3u);
  // ...and inside a window the samples really are mixed across shards.
  int switches = 0;
  for (size_t i = 1; i < global.size(); ++i) switches += global[i].shard != global[i - 1].shard;
  EXPECT_GT(switches, 7);
}

TEST(Planner, RestoreMidEpochReproducesTheRest) {
  const int64_t gb = 8;
  auto global = global_order(kShards, opts(gb), 1);
  for (int world : {1, 2, 4}) {
    for (int r = 0; r < world; ++r) {
      auto full = rank_order(global, gb, world, r);
      auto rest = rank_order(global_order(kShards, opts(gb), 1), gb, world, r, 3);
      std::vector<SampleRef> tail(full.begin() + 3 * (gb / world), full.end());
      EXPECT_EQ(rest, tail) << "world " << world << " rank " << r;
    }
  }
}

TEST(Planner, RestoreWithDifferentWorldSizeKeepsTheGlobalOrder) {
  const int64_t gb = 8;
  auto global = global_order(kShards, opts(gb), 2);
  // A checkpoint taken at step 2 by 4 ranks resumes on 2 ranks (and on 1): the
  // samples of each later global step are the same, in the same order.
  for (int world : {1, 2, 4}) {
    std::vector<std::vector<SampleRef>> per_rank;
    for (int r = 0; r < world; ++r) per_rank.push_back(rank_order(global, gb, world, r, 2));
    const int64_t b = gb / world;
    std::vector<SampleRef> rebuilt;
    for (int64_t s = 0; s < static_cast<int64_t>(per_rank[0].size()) / b; ++s)
      for (int r = 0; r < world; ++r)
        rebuilt.insert(rebuilt.end(), per_rank[r].begin() + s * b, per_rank[r].begin() + (s + 1) * b);
    EXPECT_EQ(rebuilt, std::vector<SampleRef>(global.begin() + 2 * gb, global.end())) << "world " << world;
  }
}

TEST(Planner, RejectsAGlobalBatchTheWorldDoesNotDivide) {
  auto global = global_order(kShards, opts(10), 0);
  EXPECT_THROW(rank_order(global, 10, 4, 0), strata::ConfigError);
  EXPECT_THROW(rank_order(global, 10, 2, 2), strata::ConfigError);
}

TEST(Planner, EachRankTouchesFewShards) {
  // Contiguous slices of a window-1 order: a rank's 3 samples of a global step lie
  // next to each other in the order, so (every shard has >= 3 samples) they span at
  // most 2 shards. A strided partition (rank r takes r, r+4, ...) would not.
  auto global = global_order(kShards, opts(12, Remainder::kDrop, 1), 0);
  int max_shards = 0;
  for (int r = 0; r < 4; ++r) {
    auto mine = rank_order(global, 12, 4, r);
    for (size_t s = 0; s + 3 <= mine.size(); s += 3) {
      std::set<int32_t> shards = {mine[s].shard, mine[s + 1].shard, mine[s + 2].shard};
      max_shards = std::max(max_shards, static_cast<int>(shards.size()));
    }
  }
  EXPECT_LE(max_shards, 2);
}

TEST(StagingPlan, UsesAndNextUse) {
  Manifest m;
  for (size_t i = 0; i < kShards.size(); ++i)
    m.shards.push_back({"s" + std::to_string(i), kShards[i], 100 + int64_t(i), ""});
  auto order = rank_order(global_order(kShards, opts(1, Remainder::kDrop, 1), 0), 1, 1, 0);
  StagingPlan plan(order, m);
  ASSERT_EQ(plan.uses().size(), kShards.size());  // window 1: one use per shard
  for (auto& u : plan.uses()) {
    EXPECT_EQ(u.last - u.first + 1, kShards[static_cast<size_t>(u.shard)]);
    EXPECT_EQ(plan.next_use(u.shard, 0), u.first);
    EXPECT_EQ(plan.next_use(u.shard, u.first + 1), u.first + 1) << "in use: now";
    EXPECT_EQ(plan.next_use(u.shard, u.last + 1), -1);
  }
  // Span 1: one shard at a time; span 2 at a boundary: two.
  int64_t biggest = 0;
  for (auto& s : m.shards) biggest = std::max(biggest, s.bytes);
  EXPECT_EQ(plan.max_bytes_in_span(1), biggest);
  EXPECT_GT(plan.max_bytes_in_span(2), biggest);
}
