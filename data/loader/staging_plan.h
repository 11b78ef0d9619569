// StagingPlan: what one rank's order of an epoch asks of the cache. Every shard
// is used in one or more "uses" (one per segment of the order: a shuffle window,
// or the padded tail); a use spans positions [first, last] of the rank's order.
// The pipeline stages and pins one use at a time; the cache evicts by next use.
#pragma once
#include <cstdint>
#include <vector>

#include "data/format/manifest.h"
#include "data/loader/order_planner.h"

namespace strata::data {

struct ShardUse {
  int32_t shard = 0;
  int64_t first = 0, last = 0;  // positions in the rank's order
  int64_t samples = 0;          // positions that read this use
  int64_t bytes = 0;            // shard file size
};

class StagingPlan {
 public:
  StagingPlan(const std::vector<SampleRef>& order, const Manifest& manifest);
  const std::vector<ShardUse>& uses() const { return uses_; }
  // Index into uses() of the sample at `pos`.
  int32_t use_at(int64_t pos) const { return use_at_[static_cast<size_t>(pos)]; }
  int64_t positions() const { return static_cast<int64_t>(use_at_.size()); }
  // The first position >= pos at which `shard` is read (pos itself while a use of
  // it is under way), or -1 when it is not read again.
  int64_t next_use(int32_t shard, int64_t pos) const;
  // The most bytes of uses that overlap any `span` consecutive positions: what
  // must be pinned at once when `span` positions are being collated.
  int64_t max_bytes_in_span(int64_t span) const;

 private:
  std::vector<ShardUse> uses_;
  std::vector<int32_t> use_at_;
  std::vector<std::vector<int32_t>> uses_of_shard_;  // per shard, ascending
};

// Bytes the node cache must hold at once for one dataset: each of `local_ranks`
// processes pins up to `in_use` bytes of shards for the batches it collates plus
// `lookahead` staged ahead, and none of it can exceed the whole dataset
// (`whole`): a cache that holds every shard never waits for an eviction. The
// loader's capacity check and the width of the default shuffle window
// (shuffle_block.h) both use this one rule.
int64_t node_cache_need(int64_t in_use, int64_t lookahead, int64_t whole, int local_ranks);

}  // namespace strata::data
