// Whether two checkpoints hold the same training state to the bit: the model's
// and the optimizer's tensors (names, dtypes, shapes and bytes) and the
// trainer's counters, but for the world-size history (world_sizes.*: a record
// of the run's starts, one more in a resumed run). What a kill-and-resume check asks of a resumed run
// (strata-inspect --same-as; scripts/gpu-train-check.sh on a GPU).
#pragma once
#include <string>

#include "train/checkpoint/checkpoint.h"

namespace strata {

struct CheckpointComparison {
  bool identical = true;
  std::string first_difference;  // "" when identical, else what and where ("model tensor 3.weight: ...")
  int64_t tensors = 0;           // model + optimizer tensors compared
  int64_t values = 0;            // their elements
};

CheckpointComparison compare_checkpoints(const Checkpoint& a, const Checkpoint& b);

}  // namespace strata
