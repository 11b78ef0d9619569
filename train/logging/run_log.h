// What a training run reports as it goes: progress bars on the console for the
// epoch (or the steps of a run bounded by trainer.max_steps), the loader's
// staging and evaluation (redrawn in place on a terminal, plain lines
// otherwise: train/logging/progress_bar.h), the progress lines in
// <run>/train.log, one JSON object per record in <run>/metrics.jsonl, and
// TensorBoard scalars under <run>/tensorboard/. Only rank 0 writes.
#pragma once
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "train/logging/progress_bar.h"
#include "train/logging/tensorboard.h"

namespace strata {

enum class ConsoleMode { automatic, plain, off };

struct ProgressInfo {
  int64_t epoch = 0, epochs = 0;
  int64_t step = 0, steps_per_epoch = 0, step_in_epoch = 0;
  // trainer.max_steps ends the run before its epochs do: progress is "step N/M"
  bool bounded_by_steps = false;
  int64_t total_steps = 0;
  double loss = 0, lr = 0, samples_per_second = 0, data_wait_fraction = 0;
  double loss_scale = 0;  // 0 = no loss scaling
  // throughput in the task's items (samples or tokens) per second, all ranks
  std::string item_unit = "sample";
  double items_per_second = 0;
  double mfu = 0;  // model FLOPs utilisation in [0, 1]; 0 = not known
  double eta_seconds = 0;
};

// The training loader's staging in the current epoch (DataMetrics).
struct StagingInfo {
  int64_t shards_staged = 0, shard_uses = 0;  // of the epoch's plan
  int64_t cache_hits = 0, cache_misses = 0;
  int64_t store_bytes = 0;
  double mb_per_second = 0;  // from the store, over the last interval
};

class RunLog {
 public:
  // `enabled` false (ranks other than 0) makes every call a no-op.
  RunLog(const std::string& run_dir, bool enabled, ConsoleMode console, bool tensorboard);
  ~RunLog();

  void progress(const ProgressInfo& p);
  void staging(const StagingInfo& s);
  // `done` of `total` batches of an evaluation; end_evaluation() takes its bar away.
  void evaluation(int64_t done, int64_t total);
  void end_evaluation();
  // On a terminal, the progress bar's counts between two progress lines (its
  // figures stay those of the last line); drawn about ten times a second at most.
  void advance(int64_t epoch, int64_t step, int64_t step_in_epoch);
  // The epoch's bar is drawn with its final counts and the epoch's time
  // ("took 1m05s" for the eta) and stays on the console; the next epoch draws
  // its own (a step-bounded run keeps its one step bar).
  void end_epoch(int64_t epoch, int64_t step, int64_t step_in_epoch, double epoch_seconds);
  // Ends the bars' lines for good: what follows (the run's result) starts a line.
  void end_console();
  // One metrics.jsonl record {"kind": kind, "step": step, "timestamp": unix
  // seconds, ...values} and the values as TensorBoard scalars "<kind>/<name>".
  void record(const std::string& kind, int64_t step, const std::map<std::string, double>& values);
  // A plain message line on the console and in train.log.
  void message(const std::string& line);
  // "error: <what>" in train.log only (the caller reports it on stderr); ends
  // an in-place progress line so that the error starts a line of its own.
  void error(const std::string& what);
  void flush();

 private:
  bool enabled_;
  ConsoleMode console_;
  std::unique_ptr<ConsoleBars> bars_;  // null when the console is off
  std::unique_ptr<ProgressInfo> last_progress_;
  std::FILE* log_ = nullptr;
  std::FILE* jsonl_ = nullptr;
  std::unique_ptr<TensorBoardWriter> tb_;
};

}  // namespace strata
