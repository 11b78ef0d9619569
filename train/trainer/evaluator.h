// Evaluator: runs the model over a BatchSource without gradients and sums the
// task's figures (one device read per evaluation), and, during fit(), tracks
// the monitored metric: the best value and its epoch, the best weights when
// early_stopping.restore_best asks for them, early stopping, and the metric a
// plateau schedule observes. Padded rows of the last global batch are dropped.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/batch_source.h"
#include "core/communicator.h"
#include "core/module.h"
#include "core/precision.h"
#include "kernels/runtime/copy_engine.h"
#include "nn/schedule/schedule.h"
#include "train/config/train_config.h"
#include "train/logging/run_log.h"
#include "train/trainer/task.h"
#include "train/trainer/train_state.h"

namespace strata {

struct EvalResult {
  Metrics metrics;  // the task's, in its metric_names() order
  double loss = 0;
  double accuracy = 0;  // classification: top-1 (0 for other tasks)
  double top5 = 0;
  int64_t samples = 0;                           // batch rows evaluated (images or token windows)
  int64_t items = 0;                             // the task's items (samples or tokens)
  double metric(const std::string& name) const;  // throws when the task has no such metric
};

class Evaluator {
 public:
  Evaluator(const TrainConfig& cfg, Module& model, const Task& task, Precision precision, Communicator& comm);

  // `log` (null outside fit) shows the evaluation's progress bar.
  EvalResult evaluate(BatchSource& src, CopyEngine& engine, Device device, RunLog* log);

  // Evaluates `val` after the state's epoch and step, writes the "val" row and
  // line, and updates the best tracking, early stopping and a metric-driven
  // schedule. Returns the monitored metric.
  double evaluate_and_track(BatchSource& val, CopyEngine& engine, Device device, LrSchedule& schedule,
                            TrainState& state, RunLog& log);
  // The best weights back into the model (when kept); says so in `log`.
  void restore_best_weights(const TrainState& state, RunLog& log);

  // A new fit(): no best weights kept, not stopped.
  void start_run() {
    best_weights_.clear();
    stopped_at_epoch_ = -1;
  }
  bool stopped_early() const { return stopped_at_epoch_ >= 0; }
  int64_t stopped_at_epoch() const { return stopped_at_epoch_; }  // 0-based; -1 when it did not stop

 private:
  const TrainConfig& cfg_;
  Module& model_;
  const Task& task_;
  Precision precision_;
  Communicator& comm_;
  std::vector<std::pair<std::string, Tensor>> best_weights_;
  int64_t stopped_at_epoch_ = -1;
};

}  // namespace strata
