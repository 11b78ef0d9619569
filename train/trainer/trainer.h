// Trainer: the train/eval loop over BatchSources, driven by a TrainConfig; a
// Task (train/trainer/task.h) says what a batch means and which metrics it has.
// Mixed precision (FP32 masters, dynamic loss scaling for fp16), gradient
// accumulation, global-norm clipping, LR schedules, early stopping, periodic
// evaluation, checkpoints with exact resume, and the run directory's logs.
// Ranks: every rank trains on its share; rank 0 writes logs and checkpoints.
//
// The trainer is the loop around a named step (train_step: one optimizer step
// over an accumulation window) and three components: a Checkpointer (save,
// resume, rotation), an Evaluator (evaluation, the best metric, early
// stopping) and a Reporter (run directory, console, metrics, Prometheus,
// NVML). Its state is TrainState, what a checkpoint restores, apart from the
// Reporter's RunStats, what this process measured (train/trainer/train_state.h).
#pragma once
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "core/batch_source.h"
#include "core/communicator.h"
#include "core/module.h"
#include "core/precision.h"
#include "nn/loss_scaler.h"
#include "nn/optim/optimizer.h"
#include "nn/schedule/schedule.h"
#include "train/config/train_config.h"
#include "train/logging/loader_metrics.h"
#include "train/logging/nvml_sampler.h"
#include "train/trainer/checkpointer.h"
#include "train/trainer/device_feeder.h"
#include "train/trainer/evaluator.h"
#include "train/trainer/grad_sync.h"
#include "train/trainer/reporter.h"
#include "train/trainer/run_record.h"
#include "train/trainer/task.h"
#include "train/trainer/train_state.h"

namespace strata {

// summary.json carries only what applies to the run (to_json): the test
// figures when a test set was evaluated (test_accuracy and test_top5 only for a
// task that reports them), best_* after an evaluation, epochs once one was
// completed, stopped_at_epoch when early stopping stopped the run; mfu and the
// FLOP figures are null when they cannot be computed.
struct TrainSummary {
  std::string task;
  Metrics test_metrics;  // empty without a test set
  // from test_metrics; 0 without a test set, and accuracy and top5 0 for a task without them
  double test_accuracy = 0, test_loss = 0, test_top5 = 0;
  double best_metric = 0;
  std::string best_metric_name;
  int64_t best_epoch = -1;  // 1-based; -1 without an evaluation
  int64_t epochs = 0;       // epochs completed
  int64_t steps = 0;        // optimizer steps
  double samples_per_second = 0;
  std::string item_unit = "sample";  // what items_per_second counts: samples or tokens
  double items_per_second = 0;
  // Training FLOPs per item (the model's counter, models/registry.h; 0 when the
  // trainer was given none) and the rate they were done at; MFU, that rate's
  // fraction of trainer.peak_flops x ranks, only with a peak and FLOPs per item.
  double flops_per_item = 0, flops_per_second = 0;
  std::optional<double> mfu;
  double data_wait_fraction = 0;
  int world_size = 1;
  // every start of the run that reached a checkpoint, then this one (issue 33)
  std::vector<WorldSizeStart> world_size_history;
  std::string precision;
  double wall_seconds = 0;
  bool stopped_early = false;
  int64_t stopped_at_epoch = -1;
  int interrupted_by_signal = 0;
  int64_t skipped_steps = 0;  // fp16 overflow
  // Checkpoint saves of this run (rank 0) and the step loop's time blocked by them.
  int64_t checkpoint_saves = 0;
  double checkpoint_blocked_seconds = 0, checkpoint_waited_seconds = 0;
  int64_t remote_requests = 0, remote_bytes = 0;
  // The training loader's counters summed over the ranks and the run's
  // logging intervals: the sum of metrics.jsonl's "data" rows (this process's
  // part of a resumed run).
  LoaderCounters train_loader;
  // The model's device and its allocator's statistics at the end of the run
  // (kernels/runtime/allocator.h; on the host these count every tensor of the process).
  std::string device = "cpu";
  int64_t memory_in_use_bytes = 0, memory_peak_bytes = 0, memory_cached_bytes = 0, memory_allocations = 0;
  // Host synchronisations with the device (kernels/cuda/runtime.h host_syncs())
  // in a step, from its first micro-batch through the optimizer update, logging,
  // evaluation and checkpoints left out: the most in any step of the run and the
  // mean. 0 on the CPU; the budget on a GPU is 1 (the gradient norm's read).
  int64_t host_syncs_per_step_max = 0;
  double host_syncs_per_step_mean = 0;
  // Rank 0's GPU as its driver reported it at the logging intervals
  // (train/logging/nvml_sampler.h); none without NVML or on the host.
  std::optional<GpuSummary> gpu;
  RunRecord run;  // how the run was made (run.json); its fields are repeated in summary.json
  std::string to_json() const;
};

// Training diverged: a gradient is inf or NaN (fp32, bf16), or fp16's loss
// scale fell below precision.min_scale. Raised before the optimizer step, so
// the weights and the last checkpoint are the last good state.
class NumericsError : public Error {
 public:
  using Error::Error;
};

class Trainer {
 public:
  Trainer(TrainConfig cfg, std::string run_dir, std::shared_ptr<Module> model, std::unique_ptr<Task> task,
          Communicator& comm);
  // Image classification of samples of `sample_shape`, e.g. {1, 28, 28}.
  Trainer(TrainConfig cfg, std::string run_dir, std::shared_ptr<Module> model,
          std::vector<int64_t> sample_shape, Communicator& comm);
  ~Trainer();

  // Trains; `val` may be null (validation then uses `test` when given); `test`
  // may be null. Writes summary.json into the run directory (rank 0). The run
  // directory is created and locked here (RunDirLock), not by the constructor;
  // an error that ends the run is written to its train.log before it propagates.
  TrainSummary fit(BatchSource& train, BatchSource* val, BatchSource* test);
  EvalResult evaluate(BatchSource& src);

  // Replaces the plain after-backward allreduce (data-parallel wrappers).
  void set_gradient_sync(std::unique_ptr<GradientSync> sync) { sync_ = std::move(sync); }
  GradientSync& gradient_sync() { return *sync_; }
  // Makes the model's buffers (BatchNorm running statistics) agree across ranks
  // (DataParallel::sync_buffers). Called on every rank, when training ran since
  // the last call: at the end of each epoch, before each evaluation and before
  // each checkpoint. Must be collective-safe: every rank reaches the same calls.
  void set_buffer_sync(std::function<void()> fn) { buffer_sync_ = std::move(fn); }
  Optimizer& optimizer() { return *optimizer_; }
  LossScaler& scaler() { return scaler_; }
  Module& model() { return *model_; }
  const std::string& run_dir() const { return run_dir_; }
  const Task& task() const { return *task_; }
  // The model's training FLOPs per task item, for MFU (models::ModelEntry::train_flops).
  void set_flops_per_item(double flops) {
    flops_per_item_ = flops;
    reporter_.set_flops_per_item(flops);
  }
  // How training and evaluation batches reach the model's device (DeviceFeeder);
  // by default make_copy_engine() of the model's device, made at the first epoch.
  // Rank 0: told of each checkpoint file once saved (Checkpointer::set_on_saved).
  void set_on_checkpoint_saved(Checkpointer::SavedHook hook) { checkpointer_.set_on_saved(std::move(hook)); }
  void set_copy_engine(std::unique_ptr<CopyEngine> engine) { copy_engine_ = std::move(engine); }
  // The command line, overrides and config file for run.json and summary.json;
  // fit() fills in the version, commit, host, world size and start time.
  void set_run_record(RunRecord record) { run_record_ = std::move(record); }
  // Requests this process made of the store before fit() through sources it
  // has closed since (strata-train's probes that size the node's cache budget):
  // summary.json's remote_requests and remote_bytes count them too.
  void add_setup_io(IoTotals io) {
    setup_io_.remote_requests += io.remote_requests;
    setup_io_.remote_bytes += io.remote_bytes;
  }
  // The reader of this rank's GPU for the "gpu" rows, before fit(). Without
  // one, a model on CUDA gets an NvmlSampler of the current CUDA device (by its
  // PCI bus id); a model on the host reads no GPU unless given one.
  void set_gpu_sampler(std::unique_ptr<NvmlSampler> sampler) {
    reporter_.set_gpu_sampler(std::move(sampler));
  }

 private:
  // One optimizer step: the accumulation window's micro-batches from
  // `next_batch`, forward and backward each, then the update. Returns false
  // when the source ran out inside the window (no update then).
  bool train_step(const std::function<std::optional<FedBatch>()>& next_batch, int64_t window, TrainState& s);
  // One micro-batch's forward and backward; its sums go into the epoch's and
  // its loss into the progress line's window. Returns the batch's task items.
  double forward_backward(const FedBatch& b, bool sync, TrainState& s);
  // Clip, unscale and update from the gradients; false when fp16 overflowed
  // (the step is skipped). Throws NumericsError on divergence.
  bool optimizer_update(int64_t step);
  // fit()'s parts: an epoch of steps, what may follow a step, an epoch's end.
  void train_epoch(BatchSource& train, TrainState& s);
  void after_step(BatchSource& train, TrainState& s);
  int agreed_stop_signal();
  void end_epoch(BatchSource& train, TrainState& s);
  double evaluate_and_track(TrainState& s);  // NaN without a validation source
  void save(const BatchSource& train, TrainState& s, double metric);
  TrainParts parts();
  TrainSummary summarize(const TrainState& s, BatchSource* test);
  TrainSummary run_fit(BatchSource& train, BatchSource* val, BatchSource* test);
  void sync_buffers_if_trained();
  CopyEngine& copy_engine();
  // STRATA_TRACE_SAMPLE_IDS: one line per micro-batch with its samples' ids
  void open_sample_trace(const TrainState& s);
  void trace_samples(const HostBatch& b, const TrainState& s);

  TrainConfig cfg_;
  std::string run_dir_;
  std::shared_ptr<Module> model_;
  std::unique_ptr<Task> task_;
  Communicator& comm_;
  NamedTensors params_;
  // Where the model lives (its first parameter's device): batches are moved there.
  Device model_device() const { return params_.empty() ? Device::cpu : params_.front().second.device(); }
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<LrSchedule> schedule_;
  LossScaler scaler_;
  Precision precision_;
  std::unique_ptr<GradientSync> sync_;
  // The training batches' way to the model's device (made at the first epoch),
  // and the epoch's feeder: checkpoints take the loader position from it, since
  // it holds one batch more than it handed out.
  std::unique_ptr<CopyEngine> copy_engine_;
  std::unique_ptr<DeviceFeeder> feeder_;
  Reporter reporter_;
  Checkpointer checkpointer_;
  Evaluator evaluator_;
  // what one fit() knows besides the TrainState
  RunShape shape_;
  BatchSource* train_ = nullptr;
  BatchSource* val_ = nullptr;  // validation, else the test set, else none
  bool done_ = false;
  int stop_signal_ = 0;
  double t_start_ = 0;
  double flops_per_item_ = 0;
  RunRecord run_record_;
  IoTotals setup_io_;
  std::function<void()> buffer_sync_;
  bool trained_since_buffer_sync_ = false;
  std::unique_ptr<std::ofstream> sample_trace_;
  int64_t trace_start_ = 0;  // this start's index in the world-size history
};

}  // namespace strata
