// The global batch of an elastic job (strata-elastic, issue 33). G samples per
// optimizer step stay fixed whatever the rank count W: each rank takes b = G /
// (a x W) samples per micro-batch, a being the config's trainer.accumulate,
// which stays as it is. Only the per-rank batch changes because a checkpoint
// counts its epoch's progress in micro-batches of b x W samples (TrainState::
// micro): with a x b x W fixed and `a` fixed, b x W is fixed, and a resume on W'
// ranks continues the same global sample order (test_ddp_elastic). A W with no
// integer b is refused, naming the rank counts that work.
#pragma once
#include <cstdint>
#include <vector>

namespace strata::elastic {

struct BatchSplit {
  int64_t batch = 0;       // data.batch_size per rank
  int64_t accumulate = 1;  // trainer.accumulate
};

// Throws ConfigError naming G, W, a and the rank counts up to max_ranks that divide.
BatchSplit split_global_batch(int64_t global_batch, int64_t accumulate, int world_size, int max_ranks);
// The rank counts 1..max_ranks with an integer per-rank batch.
std::vector<int> compatible_world_sizes(int64_t global_batch, int64_t accumulate, int max_ranks);
// The largest compatible count in [min_ranks, world_size], or 0 when there is none.
int largest_compatible(int64_t global_batch, int64_t accumulate, int min_ranks, int world_size);

}  // namespace strata::elastic
