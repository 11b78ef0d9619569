// The default shuffle window (LoaderOptions::shuffle_window = 0): as many shards
// as the node cache holds while they are read.
//
// The order planner shuffles the samples of each window of W consecutive
// (permuted) shards together, so every batch of a window draws from all W
// shards and each of them stays pinned in the cache from the window's first
// batch to its last. Batches being collated can straddle two windows (or more,
// when a window holds fewer samples than those batches), and with
// Remainder::kPad the padded tail re-reads shards of the first window. The
// widest W is the largest whose worst case over every shard permutation (every
// seed and epoch) still passes the loader's capacity check, so a run never asks
// the cache for more than its capacity because of the window, whichever epoch
// it is in. A dataset that fits the cache gets one window: the whole epoch.
#pragma once
#include <cstdint>
#include <vector>

namespace strata::data {

// What the cache must hold besides the window, as the loader sizes it.
struct WindowBudget {
  int64_t cache_bytes = 0;      // the cache's capacity
  int64_t lookahead_bytes = 0;  // staged ahead of the batches being collated, per rank
  int local_ranks = 1;          // processes sharing the cache, each pinning its own
  int64_t global_batch = 1;     // samples per global step
  int64_t span_batches = 1;     // batches one rank collates at once (the ring)
  bool pad = false;             // Remainder::kPad: a padded tail follows the order
};

// An upper bound, over every shard permutation, of the bytes of shard uses that
// `span_batches` consecutive batches of one rank overlap (what
// StagingPlan::max_bytes_in_span measures for one epoch) with windows of
// `window` shards. `shard_samples` and `shard_bytes` are per shard.
int64_t window_pin_bound(const std::vector<int64_t>& shard_samples, const std::vector<int64_t>& shard_bytes,
                         int64_t window, const WindowBudget& budget);

// The widest window (1 .. number of shards) whose bound, with the look-ahead and
// every local rank (node_cache_need), fits `cache_bytes`. 1 when even one shard
// per window does not fit: the loader's capacity check then names the figures.
int64_t widest_shuffle_window(const std::vector<int64_t>& shard_samples,
                              const std::vector<int64_t>& shard_bytes, const WindowBudget& budget);

}  // namespace strata::data
