// The shuffle window is part of the order, and the one 0 resolves to depends on
// the cache: a position records it, and a restored loader keeps it (for the rest
// of the epoch and the epochs after) whatever its own cache would give; an
// explicit window that differs is refused; positions saved before the window was
// recorded resume with the window those loaders used; two ranks of half the batch
// (whose own settings give another width) resume one rank's window and order.
#include <gtest/gtest.h>

#include "base/error.h"
#include "data/loader/loader.h"
#include "data/loader/shuffle_block.h"
#include "loader_test_util.h"

using namespace strata::data;
using namespace strata::data::testing;

namespace {

std::vector<int64_t> labels(Loader& l) {
  std::vector<int64_t> out;
  strata::HostBatch b;
  while (l.next(b)) out.insert(out.end(), b.field("y").as<int64_t>(), b.field("y").as<int64_t>() + b.size);
  return out;
}

struct Fixture {
  fs::path root;
  Manifest m;
  LoaderOptions small;  // a cache that holds windows of 3 of the 12 shards
  LoaderOptions large;  // a cache that holds the dataset: one window of 12
};

Fixture fixture(const std::string& name) {
  Fixture f;
  f.root = scratch_dir(name);
  f.m = make_dataset(f.root / "ds", 12, 50);
  std::vector<int64_t> samples, bytes;
  int64_t shard = 0;
  for (auto& s : f.m.shards) {
    samples.push_back(s.samples);
    bytes.push_back(s.bytes);
    shard = std::max(shard, s.bytes);
  }
  LoaderOptions o;
  o.url = (f.root / "ds").string();
  o.seed = 3;
  o.batch_size = 10;
  o.lookahead_bytes = 0;
  o.staging_threads = 1;
  o.decode_threads = 2;  // ring of 4 batches: 40 samples, less than one shard
  f.large = o;
  f.large.cache_dir = f.root / "cache-large";
  f.large.cache_bytes = f.m.total_bytes();
  f.small = o;
  f.small.cache_dir = f.root / "cache-small";
  f.small.cache_bytes = 6 * shard + shard / 2;  // two windows of 3 shards, not of 4
  const WindowBudget b{.cache_bytes = f.small.cache_bytes, .global_batch = 10, .span_batches = 4};
  EXPECT_EQ(widest_shuffle_window(samples, bytes, b), 3);
  return f;
}

}  // namespace

TEST(ShuffleResume, ARestoredLoaderKeepsTheSavedWindowIntoLaterEpochs) {
  Fixture f = fixture("keep");
  Loader a(f.small);
  ASSERT_EQ(a.shuffle_window(), 3);
  a.start_epoch(1);
  strata::HostBatch b;
  for (int i = 0; i < 17; ++i) ASSERT_TRUE(a.next(b));
  const auto pos = a.position();
  EXPECT_EQ(pos.at("shuffle_window"), 3);
  const auto rest = labels(a);
  a.start_epoch(2);
  const auto next_epoch = labels(a);

  Loader c(f.large);  // another node, whose cache would give one window of 12
  ASSERT_EQ(c.shuffle_window(), 12);
  c.start_epoch(0);  // the order of epoch 1 under window 12 is now kept for reuse
  c.restore(pos);
  EXPECT_EQ(c.shuffle_window(), 3);
  EXPECT_EQ(labels(c), rest) << "the rest of the epoch under the saved window";
  c.start_epoch(2);
  EXPECT_EQ(labels(c), next_epoch) << "the epoch after keeps the saved window too";
}

TEST(ShuffleResume, AnExplicitWindowOtherThanTheSavedOneIsRefused) {
  Fixture f = fixture("explicit");
  Loader a(f.small);
  const auto pos = a.position();
  LoaderOptions o = f.large;
  o.shuffle_window = 4;
  Loader c(o);
  try {
    c.restore(pos);
    FAIL() << "a window of 4 resumed a position saved with 3";
  } catch (const strata::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("saved with shuffle window 3 shard(s), this run has 4"),
              std::string::npos)
        << e.what();
  }
  o.shuffle_window = 3;
  Loader same(o);
  EXPECT_NO_THROW(same.restore(pos));
}

TEST(ShuffleResume, ASavedWindowTheCacheCannotHoldIsACapacityError) {
  Fixture f = fixture("toowide");
  Loader a(f.large);
  auto pos = a.position();
  ASSERT_EQ(pos.at("shuffle_window"), 12);
  Loader c(f.small);
  try {
    c.restore(pos);
    FAIL() << "a window of 12 was resumed in a cache that holds windows of 3";
  } catch (const strata::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("with a shuffle window of 12 shard(s)"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(f.small.cache_bytes)), std::string::npos) << e.what();
  }
}

TEST(ShuffleResume, APositionWithoutAWindowResumesWithTheOldDefaultOfOne) {
  Fixture f = fixture("old");
  LoaderOptions one = f.large;
  one.shuffle_window = 1;
  Loader a(one);
  a.start_epoch(0);
  strata::HostBatch b;
  for (int i = 0; i < 9; ++i) ASSERT_TRUE(a.next(b));
  auto pos = a.position();
  const auto rest = labels(a);
  pos.erase("shuffle_window");  // as checkpoints wrote it before the key existed
  Loader c(f.large);            // window 0: strata-train ran those with 1
  c.restore(pos);
  EXPECT_EQ(c.shuffle_window(), 1);
  EXPECT_EQ(labels(c), rest);
  pos["shuffle_window"] = 0;
  EXPECT_THROW(c.restore(pos), strata::ConfigError);
}

TEST(ShuffleResume, TwoRanksOfHalfTheBatchResumeOneRanksWindowAndOrder) {
  Fixture f = fixture("elastic");
  Loader one(f.small);  // 1 rank of 10, windows of 3
  one.start_epoch(0);
  strata::HostBatch b;
  for (int i = 0; i < 11; ++i) ASSERT_TRUE(one.next(b));
  const auto pos = one.position();
  std::vector<std::vector<int64_t>> want;
  while (one.next(b)) want.emplace_back(b.field("y").as<int64_t>(), b.field("y").as<int64_t>() + b.size);

  // 2 ranks of 5 on one node, whose own cache and ranks would give one window of 12
  std::vector<std::unique_ptr<Loader>> two;
  for (int r = 0; r < 2; ++r) {
    LoaderOptions o = f.large;
    o.batch_size = 5;
    o.world_size = 2;
    o.local_ranks = 2;
    o.rank = r;
    two.push_back(std::make_unique<Loader>(o));
    ASSERT_EQ(two.back()->shuffle_window(), 12);
    two.back()->restore(pos);
    EXPECT_EQ(two.back()->shuffle_window(), 3);
  }
  strata::HostBatch b0, b1;
  size_t step = 0;
  while (two[0]->next(b0)) {
    ASSERT_TRUE(two[1]->next(b1));
    ASSERT_LT(step, want.size());
    std::vector<int64_t> joined(b0.field("y").as<int64_t>(), b0.field("y").as<int64_t>() + 5);
    joined.insert(joined.end(), b1.field("y").as<int64_t>(), b1.field("y").as<int64_t>() + 5);
    EXPECT_EQ(joined, want[step]) << "global step " << 11 + step;
    ++step;
  }
  EXPECT_EQ(step, want.size());
}
