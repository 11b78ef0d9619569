// Checkpointer: the trainer's checkpoints. A snapshot holds the model's weights
// and buffers, the optimizer, the loss scaler, the schedule, the random
// generators (the default one and each dropout's), the loader's position, the
// resolved config and the TrainState; restore() puts all of it back, or nothing
// (every entry is looked up before anything is set). save() writes through the
// rotation (checkpoint.keep_last / keep_best), rank 0 only; resume() follows
// checkpoint.resume: a file, or auto, the newest checkpoint that loads, naming
// each one it skips and why. When there are checkpoints and none of them loads,
// auto stops the run: starting fresh would save new checkpoints over their
// names and rotate away the run the user meant to continue.
#pragma once
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/batch_source.h"
#include "core/module.h"
#include "nn/loss_scaler.h"
#include "nn/optim/optimizer.h"
#include "nn/schedule/schedule.h"
#include "train/checkpoint/checkpoint.h"
#include "train/checkpoint/checkpoint_rotation.h"
#include "train/config/train_config.h"
#include "train/logging/run_log.h"
#include "train/trainer/task.h"
#include "train/trainer/train_state.h"

namespace strata {

// What a checkpoint holds besides the TrainState, as the trainer has it.
struct TrainParts {
  Module& model;
  Optimizer& optimizer;
  LossScaler& scaler;
  LrSchedule& schedule;
  const Task& task;
  const TrainConfig& cfg;
  Device device;  // the model's: where the restored epoch sums go
};

class Checkpointer {
 public:
  Checkpointer(const TrainConfig& cfg, std::string run_dir, int rank);
  ~Checkpointer();

  // checkpoint.resume names a file that exists (checked before the run directory is made).
  void check_resume_path() const;
  // Restores parts, state and (mid-epoch) the loader from checkpoint.resume; says which in `log`.
  void resume(const TrainParts& parts, BatchSource& train, TrainState& state, RunLog& log);
  // Rank 0 writes the checkpoint (`metric` kept when finite), other ranks return.
  // `loader` is the position after the last batch the step consumed.
  void save(const TrainParts& parts, const SourcePosition& loader, const TrainState& state, double metric,
            RunLog& log);

  // Called on rank 0 with each checkpoint file once it is saved, before save()
  // returns (an s3:// run directory publishes it there); its error fails the save.
  // The figures it returns (an upload's bytes, seconds, MB/s) become a
  // `checkpoint_upload` row of metrics.jsonl at that step, logged by the step
  // loop's thread (at the next save, or at finish(), with checkpoint.async).
  using SavedHook = std::function<std::map<std::string, double>(const std::filesystem::path& file,
                                                                int64_t step, std::optional<double> metric)>;
  void set_on_saved(SavedHook hook) { on_saved_ = std::move(hook); }

  // checkpoint.async: waits for the save in flight; its error propagates.
  void finish(RunLog& log);
  // Of this run's saves so far (rank 0): how many, the seconds the step loop
  // was blocked by them (waiting for the previous save included) and the
  // seconds of that spent waiting for a previous save.
  struct SaveTimes {
    int64_t saves = 0;
    double blocked_seconds = 0, waited_seconds = 0;
  };
  const SaveTimes& save_times() const { return times_; }

  static Checkpoint snapshot(const TrainParts& parts, const SourcePosition& loader, const TrainState& state);
  // Throws ConfigError when `ck` is another model's (names the tensor and the changed config keys).
  static void check_fits(const Checkpoint& ck, const TrainParts& parts);
  static void restore(const Checkpoint& ck, const TrainParts& parts, BatchSource& train, TrainState& state);

 private:
  const TrainConfig& cfg_;
  std::string run_dir_;
  int rank_;
  // Writes `ck` through the rotation and calls on_saved_ (the background thread's work with
  // checkpoint.async).
  void write(const Checkpoint& ck, int64_t step, std::optional<double> metric);
  // Lines the rotation had for the log while writing in the background, logged by the caller's thread.
  void flush_notes(RunLog& log);

  SavedHook on_saved_;
  std::future<void> in_flight_;  // checkpoint.async: the save being written
  std::mutex notes_mu_;
  std::vector<std::string> notes_;
  std::vector<std::pair<int64_t, std::map<std::string, double>>> hook_rows_;  // the hook's figures, by step
  SaveTimes times_;
  std::unique_ptr<CheckpointRotation> rotation_;  // rank 0, made at the first save
  // The checkpoints resume=auto could not load: the rotation never adopts them,
  // so never deletes them.
  std::vector<std::filesystem::path> resume_skipped_;
};

}  // namespace strata
