// Reporter: everything the trainer tells the world while it runs. It takes the
// run directory (its lock, train.log / metrics.jsonl / TensorBoard through the
// RunLog, resolved.yaml and run.json), serves this rank's Prometheus endpoint,
// reads the GPU through NVML, and at each logging interval writes the progress
// line with its "train" row, the training loader's "data" row and the "gpu"
// row; between lines it advances the console's bars. It keeps the windows
// those rows are rates over and the run's statistics for summary.json
// (RunStats). See docs/training.md and docs/monitoring.md.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "core/batch_source.h"
#include "core/communicator.h"
#include "train/config/train_config.h"
#include "train/logging/loader_metrics.h"
#include "train/logging/nvml_sampler.h"
#include "train/logging/prometheus_exporter.h"
#include "train/logging/run_log.h"
#include "train/trainer/run_dir_lock.h"
#include "train/trainer/run_record.h"
#include "train/trainer/task_sums.h"
#include "train/trainer/train_state.h"

namespace strata {

// The shape of one fit(): batches and steps per epoch, and the step budget.
struct RunShape {
  int64_t accumulate = 1;
  int64_t batches_per_epoch = 0, steps_per_epoch = 0, total_steps = 0;
  // the current epoch's steps done (a partial last window counts)
  int64_t steps_in_epoch(int64_t micro) const { return (micro + accumulate - 1) / accumulate; }
};

// What the progress line reports besides the counters: the optimizer's and the
// scaler's figures now, and where the model runs.
struct StepFigures {
  double lr = 0;
  double loss_scale = 0;  // 0 without loss scaling
  double raw_loss_scale = 1;
  Device device = Device::cpu;
};

class Reporter {
 public:
  Reporter(const TrainConfig& cfg, std::string run_dir, Communicator& comm, std::string item_unit);
  ~Reporter();

  // Takes the run directory (collective: a port or directory refused on one
  // rank stops every rank before anything is written). A second call does nothing.
  void open(RunRecord& record, Device model_device);
  bool is_open() const { return log_ != nullptr; }
  RunLog& log() { return *log_; }
  RunLog* log_or_null() { return log_.get(); }
  void set_gpu_sampler(std::unique_ptr<NvmlSampler> sampler) { gpu_sampler_ = std::move(sampler); }
  NvmlSampler* gpu_sampler() { return gpu_sampler_.get(); }
  void set_flops_per_item(double flops) { flops_per_item_ = flops; }

  void start_run(const RunShape& shape, int64_t step);
  // This start's world size and the run's earlier ones: a line in the log and
  // the strata_world_size* series.
  void note_world_sizes(const std::vector<WorldSizeStart>& starts);
  void start_epoch();
  // The sum of the micro-batches' losses since the last progress line, on the device.
  TaskSums& loss_window(Device device);
  // A step's micro-batches: their count, rows and task items.
  void count_micro_batches(int64_t batches, int64_t samples, double items);
  void count_host_syncs(int64_t syncs) { stats_.count_host_syncs(syncs); }
  // At a logging interval (logging.every_steps): the progress line and its rows.
  void log_progress(BatchSource& train, const TrainState& s, const StepFigures& f);
  // The loader's counters since the last call as a "data" row (summed over the
  // ranks; collective) and into the run's totals.
  LoaderCounters log_loader(BatchSource& train, const TrainState& s);
  void show_console(const BatchSource& train, const TrainState& s);  // rank 0: bars between lines
  // The epoch's tail of rows, its end line, and its time and items into the stats.
  void end_epoch(BatchSource& train, const TrainState& s);

  const RunStats& stats() const { return stats_; }

 private:
  void start_prometheus();  // logging.prometheus_port > 0; before the run directory exists
  void start_gpu_sampler(Device model_device);  // once the run log exists: says when NVML is not there
  void log_gpu(int64_t step);                   // a "gpu" row, at a logging interval

  const TrainConfig& cfg_;
  std::string run_dir_;
  Communicator& comm_;
  std::string item_unit_;
  double flops_per_item_ = 0;
  std::unique_ptr<RunDirLock> run_lock_;            // rank 0, from open()
  std::unique_ptr<RunLog> log_;                     // from open()
  std::unique_ptr<PrometheusExporter> prometheus_;  // every rank, when logging.prometheus_port is set
  std::unique_ptr<NvmlSampler> gpu_sampler_;        // null without a GPU to read
  std::optional<GpuSample> gpu_last_;               // for the Prometheus probe
  RunShape shape_;
  RunStats stats_;
  // the progress line's window and the current epoch's figures
  TaskSums window_loss_;
  int64_t window_batches_ = 0;
  double epoch_t0_ = 0, last_log_ = 0;
  int64_t epoch_samples_ = 0, last_log_samples_ = 0;
  double epoch_items_ = 0, last_log_items_ = 0;
  int64_t last_log_step_ = 0;  // the step of the previous progress line
  // the training source's figures at the previous "data" row, and when
  DataMetrics last_data_;
  double last_data_t_ = 0;
};

double steady_seconds();  // a monotonic clock, in seconds

}  // namespace strata
