// Order planner: pure functions from (seed, epoch, shard sizes, global batch) to
// the global sample order of an epoch, and from that order, world size and rank
// to one rank's share. The global order never depends on the world size, so a
// run resumes on a different number of ranks with the same order (elastic resume).
//
// Global order of epoch e:
//   1. shards are permuted (seeded by seed, e);
//   2. the permuted list is cut into windows of W consecutive shards; the samples
//      of a window are shuffled together (a bounded in-memory shuffle: a reader
//      needs only the W shards of one window at a time);
//   3. remainder rule: total samples N, global batch GB. kDrop keeps the first
//      floor(N/GB)*GB samples; kPad appends the first (GB - N%GB) samples of the
//      order again so that every sample is seen at least once.
// Partition: global step s is samples [s*GB, (s+1)*GB); rank r of world w takes
// the contiguous slice [s*GB + r*GB/w, s*GB + (r+1)*GB/w). GB % w must be 0.
#pragma once
#include <cstdint>
#include <vector>

#include "data/format/plan_rng.h"  // PlanRng, the generator behind the shuffles

namespace strata::data {

enum class Remainder { kDrop, kPad };

struct OrderOptions {
  uint64_t seed = 0;
  int64_t global_batch = 1;
  int64_t shuffle_window = 1;  // shards per sample-shuffle window (>= 1)
  bool shuffle = true;         // false: shards and samples in manifest order
  Remainder remainder = Remainder::kDrop;
};

// One sample of the dataset: which shard (manifest index) and which sample in it.
// `segment` groups the uses of a shard that are close together (its window; padded
// samples get their own segment) so a reader loads a shard once per segment.
struct SampleRef {
  int32_t shard = 0;
  int32_t segment = 0;
  int64_t index = 0;
  bool operator==(const SampleRef& o) const { return shard == o.shard && index == o.index; }
};

// Global batches of an epoch for `total_samples` samples under `opts`.
int64_t global_batches(int64_t total_samples, const OrderOptions& opts);

// The whole global order of epoch `epoch`: global_batches() * global_batch entries.
std::vector<SampleRef> global_order(const std::vector<int64_t>& shard_samples, const OrderOptions& opts,
                                    int64_t epoch);

// Rank `rank`'s share of a global order, steps [first_step, end), in the order
// the rank consumes it. Throws ConfigError when global_batch % world != 0.
std::vector<SampleRef> rank_order(const std::vector<SampleRef>& global, int64_t global_batch, int world,
                                  int rank, int64_t first_step = 0);

}  // namespace strata::data
