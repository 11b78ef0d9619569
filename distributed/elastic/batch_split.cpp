#include "distributed/elastic/batch_split.h"

#include <string>

#include "base/error.h"

namespace strata::elastic {

std::vector<int> compatible_world_sizes(int64_t global_batch, int64_t accumulate, int max_ranks) {
  std::vector<int> ok;
  for (int w = 1; w <= max_ranks; ++w)
    if (global_batch % (accumulate * w) == 0) ok.push_back(w);
  return ok;
}

int largest_compatible(int64_t global_batch, int64_t accumulate, int min_ranks, int world_size) {
  for (int w = world_size; w >= std::max(1, min_ranks); --w)
    if (global_batch % (accumulate * w) == 0) return w;
  return 0;
}

BatchSplit split_global_batch(int64_t global_batch, int64_t accumulate, int world_size, int max_ranks) {
  if (global_batch <= 0 || accumulate <= 0 || world_size <= 0)
    throw ConfigError("global batch " + std::to_string(global_batch) + ", trainer.accumulate " +
                      std::to_string(accumulate) + " and " + std::to_string(world_size) +
                      " ranks: each must be positive");
  if (global_batch % (accumulate * world_size) != 0) {
    std::string sizes;
    for (int w : compatible_world_sizes(global_batch, accumulate, max_ranks))
      sizes += (sizes.empty() ? "" : ", ") + std::to_string(w);
    throw ConfigError("the global batch G=" + std::to_string(global_batch) + " does not split over W=" +
                      std::to_string(world_size) + " ranks: data.batch_size x trainer.accumulate (" +
                      std::to_string(accumulate) + ") x " + std::to_string(world_size) + " = " +
                      std::to_string(global_batch) + " has no integer data.batch_size; rank counts up to " +
                      std::to_string(max_ranks) + " that do: " + (sizes.empty() ? "none" : sizes));
  }
  return {global_batch / (accumulate * world_size), accumulate};
}

}  // namespace strata::elastic
