// The trainer's state in two halves. TrainState is exactly what a checkpoint
// restores (train/trainer/checkpointer.cpp writes and reads every field of it,
// and nothing else of the trainer's own), so that a resumed run continues where
// it stopped; RunStats is what this process measured for its logs and
// summary.json, which a resumed run starts afresh. Private to train/trainer.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "train/early_stopping.h"
#include "train/logging/loader_metrics.h"
#include "train/trainer/task_sums.h"

namespace strata {

// The monitored metric's best value so far and early stopping's counters.
struct BestTracking {
  EarlyStopping early;
  double best_metric = 0;
  int64_t best_epoch = -1;  // 0-based; -1 before the first evaluation
  bool have_best = false;
};

// One start of the run (issue 33): its world size, the step it started from and
// when (seconds since the epoch, UTC). Kept in every checkpoint, so that the
// list survives relaunches on other rank counts and s3:// run directories.
struct WorldSizeStart {
  int64_t world_size = 0, step = 0, unix_time = 0;
};

struct TrainState {
  int64_t epoch = 0;       // the epoch being trained (or next, when !mid_epoch)
  bool mid_epoch = false;  // resume by restoring the loader position
  int64_t step = 0;        // optimizer steps done
  int64_t micro = 0;       // micro-batches done in the epoch
  int64_t epochs_done = 0;
  int64_t skipped_steps = 0;  // fp16 overflows
  // the current epoch's training sums, in the task's sum_names() order, on the
  // model's device (empty until the epoch's first batch)
  TaskSums sums;
  BestTracking best;
  // every start whose state reached a checkpoint, then this one (Trainer::run_fit)
  std::vector<WorldSizeStart> world_sizes;
};

struct RunStats {
  double train_seconds = 0, wait_seconds = 0;
  int64_t samples = 0;           // all ranks
  double items = 0;              // the task's items (samples or tokens), all ranks
  LoaderCounters loader_totals;  // the training loader's, all ranks: the sum of the "data" rows
  // host synchronisations per step (TrainSummary::host_syncs_per_step_*), this process
  int64_t step_syncs_max = 0, step_syncs_total = 0, synced_steps = 0;
  void count_host_syncs(int64_t syncs) {
    step_syncs_max = syncs > step_syncs_max ? syncs : step_syncs_max;
    step_syncs_total += syncs;
    synced_steps++;
  }
};

}  // namespace strata
