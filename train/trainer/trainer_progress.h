// The trainer's counters: what a checkpoint must restore for a resumed run to
// continue exactly where it stopped (private to train/trainer).
#pragma once
#include <cstdint>
#include <vector>

#include "core/batch_source.h"
#include "core/tensor.h"
#include "train/early_stopping.h"
#include "train/logging/loader_metrics.h"
#include "train/trainer/task_sums.h"

namespace strata {

struct Trainer::Progress {
  int64_t epoch = 0;       // the epoch being trained (or next, when !mid_epoch)
  bool mid_epoch = false;  // resume by restoring the loader position
  int64_t step = 0;        // optimizer steps done
  int64_t micro = 0;       // micro-batches done in the epoch
  int64_t skipped_steps = 0;
  // the current epoch's training sums, in the task's sum_names() order, on the
  // model's device (empty until the epoch's first batch)
  TaskSums sums;
  // since the last progress line: the sum of the micro-batches' losses, on the device
  TaskSums window_loss;
  int64_t window_batches = 0;
  // early stopping / best metric
  EarlyStopping early;
  double best_metric = 0;
  int64_t best_epoch = -1;
  bool have_best = false;
  bool stopped_early = false;
  int64_t stopped_at_epoch = -1;
  int64_t epochs_done = 0;
  // totals for the summary (not restored: timing of this process)
  double train_seconds = 0, wait_seconds = 0;
  int64_t samples = 0;
  double items = 0;              // the task's items (samples or tokens), all ranks
  LoaderCounters loader_totals;  // the training loader's, all ranks: the sum of the "data" rows
  // host synchronisations per step (TrainSummary::host_syncs_per_step_*), this process
  uint64_t step_syncs_at = 0;  // host_syncs() when the current step's first micro-batch began
  int64_t step_syncs_max = 0, step_syncs_total = 0, synced_steps = 0;
  std::vector<std::pair<std::string, Tensor>> best_weights;
};

// What one fit() call knows besides the Progress: the run's shape, the
// validation source, the stop state and the current epoch's timing.
struct Trainer::Run {
  double t_start = 0;
  int64_t accumulate = 1;
  int64_t batches_per_epoch = 0, steps_per_epoch = 0, total_steps = 0;
  BatchSource* train = nullptr;
  BatchSource* val = nullptr;  // validation, else the test set, else none
  bool done = false;
  int stop_signal = 0;
  // the current epoch
  double epoch_t0 = 0, last_log = 0;
  int64_t epoch_samples = 0, last_log_samples = 0;
  double epoch_items = 0, last_log_items = 0;
  int64_t last_log_step = 0;  // the step of the previous progress line
  // the training source's figures at the previous "data" row, and when
  DataMetrics last_data;
  double last_data_t = 0;
};

}  // namespace strata
