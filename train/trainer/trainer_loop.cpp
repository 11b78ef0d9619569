// Trainer::fit: epochs of micro-batches, an optimizer step per accumulation
// window, evaluation by epochs or steps, early stopping, checkpoints and the
// summary. Stop signals finish the current step, save and return. fit() reads
// top to bottom as the run: set up, train_epoch / end_epoch per epoch, the best
// weights, summarize; after_step is everything a step may trigger.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <optional>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/file_write.h"
#include "core/autograd.h"
#include "kernels/cuda/runtime.h"
#include "kernels/trace_range.h"
#include "train/config/to_yaml.h"
#include "train/make_schedule.h"
#include "train/trainer/stop_signal.h"
#include "train/trainer/trainer.h"
#include "train/trainer/trainer_progress.h"

namespace strata {
namespace {

double now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// Whole or not at all: a full disk must not leave a truncated summary.json.
void write_text_file(const std::filesystem::path& path, const std::string& text) {
  write_file_atomically(
      path, [&](const std::filesystem::path& tmp) { write_bytes(tmp, text.data(), text.size()); });
}

double metric_named(const Metrics& m, const std::string& name) {
  for (auto& [n, v] : m)
    if (n == name) return v;
  return NAN;
}

// "val_loss" -> "loss": the trainer's constructor checked the prefix and the name.
std::string metric_of_monitor(const std::string& monitor) { return monitor.substr(4); }

}  // namespace

void Trainer::open_run_dir() {
  if (log_) return;  // a second fit() of this trainer
  // Every rank's Prometheus port first: a port in use stops the run, on all
  // ranks, before there is a run directory.
  std::string port_refused;
  try {
    start_prometheus();
  } catch (const Error& e) {
    port_refused = e.what();
  }
  if (allreduce_sums({port_refused.empty() ? 0.0 : 1.0})[0] != 0.0)
    throw ConfigError(!port_refused.empty() ? port_refused
                                            : "another rank could not listen on its logging.prometheus_port");
  // Rank 0 owns the directory; every rank learns whether it got it, so that a
  // refused run stops on all ranks instead of leaving them in a collective.
  std::string refused;
  if (comm_.rank() == 0) try {
      run_lock_ = std::make_unique<RunDirLock>(run_dir_);
    } catch (const Error& e) {
      refused = e.what();
    }
  if (allreduce_sums({refused.empty() ? 0.0 : 1.0})[0] != 0.0)
    throw ConfigError(comm_.rank() == 0 ? refused : "rank 0 could not take the run directory " + run_dir_);
  ConsoleMode console = cfg_.logging.console == "off"     ? ConsoleMode::off
                        : cfg_.logging.console == "plain" ? ConsoleMode::plain
                                                          : ConsoleMode::automatic;
  log_ = std::make_unique<RunLog>(run_dir_, comm_.rank() == 0, console, cfg_.logging.tensorboard);
  if (run_lock_ && !run_lock_->recovered_from().empty())
    log_->message("run directory " + run_dir_ +
                  ": took over the lock of a run that ended without releasing it (" +
                  run_lock_->recovered_from() + ")");
  run_record_.fill_from_this_process(comm_.size());
  if (comm_.rank() == 0) {
    write_text_file(std::filesystem::path(run_dir_) / "resolved.yaml", to_yaml(cfg_));
    write_text_file(std::filesystem::path(run_dir_) / "run.json", run_record_.to_json() + "\n");
  }
  if (prometheus_)
    log_->message("prometheus: rank 0 serves metrics on http://" + cfg_.logging.prometheus_address + ":" +
                  std::to_string(prometheus_->port()) + "/metrics (rank r on port + its local rank)");
  start_gpu_sampler();
}

TrainSummary Trainer::fit(BatchSource& train, BatchSource* val, BatchSource* test) {
  try {
    return run_fit(train, val, test);
  } catch (const std::exception& e) {
    if (log_) log_->error(e.what());  // the console gets it from whoever catches it
    throw;
  }
}

TrainSummary Trainer::run_fit(BatchSource& train, BatchSource* val, BatchSource* test) {
  Run run;
  run.t_start = now();
  install_stop_handlers();
  run.accumulate = std::max<int64_t>(1, cfg_.trainer.accumulate);
  run.batches_per_epoch = train.batches_per_epoch();
  if (run.batches_per_epoch == 0)
    throw Error("the training set yields no batch per rank (batch size larger than this rank's share?)");
  run.steps_per_epoch = (run.batches_per_epoch + run.accumulate - 1) / run.accumulate;
  run.total_steps = cfg_.trainer.epochs * run.steps_per_epoch;
  if (cfg_.trainer.max_steps > 0) run.total_steps = std::min(run.total_steps, cfg_.trainer.max_steps);
  schedule_ = make_schedule(cfg_.schedule, run.total_steps, cfg_.optimizer.lr);
  check_resume_path();
  open_run_dir();
  run.train = &train;
  run.val = val ? val : test;

  feeder_.reset();  // of an earlier fit()
  Progress p;
  p.early =
      EarlyStopping({cfg_.early_stopping.mode, cfg_.early_stopping.patience, cfg_.early_stopping.min_delta});
  maybe_resume(train, p);
  run.last_log_step = p.step;
  // resumed from the last step of a run that trainer.max_steps ended: nothing more to train
  if (cfg_.trainer.max_steps > 0 && p.step >= cfg_.trainer.max_steps) run.done = true;
  for (; p.epoch < cfg_.trainer.epochs && !run.done; ++p.epoch) {
    train_epoch(train, run, p);
    if (run.stop_signal) break;
    if (run.done && cfg_.trainer.max_steps > 0 && p.micro < run.batches_per_epoch) {
      // max_steps ends the run mid-epoch: no end_epoch, so save here, resumable mid-epoch
      const bool checkpointing = cfg_.checkpoint.every_steps > 0 || cfg_.checkpoint.every_epochs > 0;
      const bool saved = cfg_.checkpoint.every_steps > 0 && p.step % cfg_.checkpoint.every_steps == 0;
      if (checkpointing && !saved) save(train, p, NAN);
      p.epoch++;  // counts as the epoch reached
      break;
    }
    end_epoch(train, run, p);
  }
  feeder_.reset();
  if (!run.stop_signal) restore_best_weights(p);
  return summarize(run, p, test);
}

void Trainer::train_epoch(BatchSource& train, Run& run, Progress& p) {
  if (!copy_engine_) copy_engine_ = make_copy_engine(model_device());
  feeder_.reset();  // the last epoch's: its copies finish before the source restarts
  if (!p.mid_epoch) {
    train.start_epoch(p.epoch);
    p.micro = 0;
    p.sums = TaskSums();  // made on the first batch, on the model's device
  }
  p.mid_epoch = true;
  model_->train();
  run.epoch_t0 = run.last_log = now();
  run.epoch_samples = run.last_log_samples = 0;
  run.epoch_items = run.last_log_items = 0;
  run.last_data = DataMetrics{};  // the source's figures restart with the epoch (or the resumed part)
  run.last_data_t = run.epoch_t0;
  feeder_ = std::make_unique<DeviceFeeder>(train, *copy_engine_);
  // A source that fails for good (a store down past its retry budget) ends the
  // run. On one process, at a step boundary, the steps trained so far are saved
  // first (with several ranks the others are inside a collective: the newest
  // periodic checkpoint is where the job resumes).
  auto next = [&] {
    TraceRange wait("data wait");
    try {
      return feeder_->next();
    } catch (const Error& e) {
      if (comm_.size() > 1 || p.micro % run.accumulate != 0 || p.step == 0) throw;
      save(train, p, NAN);
      throw Error(std::string(e.what()) + "; checkpoint of step " + std::to_string(p.step) +
                  " saved: continue with checkpoint.resume=auto once the data can be read");
    }
  };
  while (!run.done) {
    const std::optional<FedBatch> batch = next();
    if (!batch) break;
    const bool sync = (p.micro + 1) % run.accumulate == 0 || p.micro + 1 == run.batches_per_epoch;
    if (p.micro % run.accumulate == 0) p.step_syncs_at = cuda::host_syncs();
    const double items = train_micro_batch(*batch, sync, p);
    p.micro++;
    run.epoch_samples += batch->host->size;
    run.epoch_items += items;
    p.window_batches++;
    if (!sync) continue;
    optimizer_->set_lr(schedule_->lr(p.step));
    if (!optimizer_step(p.step)) p.skipped_steps++;
    const int64_t syncs = static_cast<int64_t>(cuda::host_syncs() - p.step_syncs_at);
    p.step_syncs_max = std::max(p.step_syncs_max, syncs);
    p.step_syncs_total += syncs;
    p.synced_steps++;
    p.step++;
    after_step(train, run, p);
    show_console(train, run, p);
  }
  log_loader(train, run, p);  // the epoch's tail since the last logging interval
  log_->end_epoch(p.epoch, p.step, (p.micro + run.accumulate - 1) / run.accumulate, now() - run.epoch_t0);
  sync_buffers_if_trained();  // the epoch's end: buffers agree across ranks
  DataMetrics dm = train.metrics();
  p.train_seconds += now() - run.epoch_t0;
  p.wait_seconds += dm.wait_seconds;
  p.samples += run.epoch_samples * comm_.size();
  p.items += run.epoch_items * comm_.size();
}

void Trainer::after_step(BatchSource& train, Run& run, Progress& p) {
  if (cfg_.logging.every_steps > 0 && p.step % cfg_.logging.every_steps == 0) log_progress(train, run, p);
  double metric = NAN;
  if (cfg_.trainer.eval_every_steps > 0 && p.step % cfg_.trainer.eval_every_steps == 0)
    metric = evaluate_and_track(run, p);
  const bool saved = cfg_.checkpoint.every_steps > 0 && p.step % cfg_.checkpoint.every_steps == 0;
  if (saved) save(train, p, metric);
  if (cfg_.trainer.max_steps > 0 && p.step >= cfg_.trainer.max_steps) run.done = true;
  // A signal reaches the ranks of a job at slightly different moments, and the
  // checkpoint is collective: the ranks agree to stop after the same step.
  int sig = stop_requested();
  if (comm_.size() > 1 && allreduce_sums({sig != 0 ? 1.0 : 0.0})[0] > 0 && sig == 0) sig = SIGTERM;
  if ((run.stop_signal = sig) != 0) {
    if (!saved) save(train, p, NAN);  // this step's state is on disk already
    log_->message("stopped by signal " + std::to_string(run.stop_signal) + " at step " +
                  std::to_string(p.step) +
                  "; checkpoint saved; continue with checkpoint.resume=auto --run-dir " + run_dir_);
    run.done = true;
  }
}

void Trainer::end_epoch(BatchSource& train, Run& run, Progress& p) {
  std::vector<double> sums = p.sums.read();
  sums.resize(task_->sum_names().size(), 0.0);  // an epoch this rank saw no batch of
  sums = allreduce_sums(std::move(sums));
  std::map<std::string, double> record = {{"epoch", double(p.epoch + 1)}};
  for (auto& [name, value] : task_->metrics(sums, false)) record["train_" + name] = value;
  log_->record("epoch", p.step, record);
  double metric = NAN;
  if (cfg_.trainer.eval_every_epochs > 0 && (p.epoch + 1) % cfg_.trainer.eval_every_epochs == 0)
    metric = evaluate_and_track(run, p);
  p.epochs_done = p.epoch + 1;
  p.mid_epoch = false;
  if (p.stopped_early) {
    log_->message("early stopping at epoch " + std::to_string(p.epoch + 1) + ": no improvement of " +
                  cfg_.early_stopping.monitor + " for " + std::to_string(cfg_.early_stopping.patience) +
                  " evaluations");
    run.done = true;
  }
  Progress next = p;  // the checkpoint resumes at the next epoch's start
  next.epoch = p.epoch + 1;
  if (cfg_.checkpoint.every_epochs > 0 && (p.epoch + 1) % cfg_.checkpoint.every_epochs == 0)
    save(train, next, metric);
}

double Trainer::evaluate_and_track(Run& run, Progress& p) {
  if (!run.val) return NAN;
  EvalResult r = evaluate(*run.val);
  std::map<std::string, double> record = {{"epoch", double(p.epoch + 1)}};
  std::string line =
      "epoch " + std::to_string(p.epoch + 1) + " step " + std::to_string(p.step) + " validation:";
  for (auto& [name, value] : r.metrics) {
    record[name] = value;
    line += " " + name + " " + std::to_string(value);
  }
  log_->record("val", p.step, record);
  log_->message(line);
  const double m = metric_named(r.metrics, metric_of_monitor(cfg_.early_stopping.monitor));
  if (schedule_->metric_driven())
    schedule_->observe(metric_named(r.metrics, metric_of_monitor(cfg_.schedule.plateau_monitor)));
  const bool max_mode = cfg_.early_stopping.mode == "max";
  const bool better = !p.have_best || (max_mode ? m > p.best_metric : m < p.best_metric);
  if (better) {
    p.have_best = true;
    p.best_metric = m;
    p.best_epoch = p.epoch;
    if (cfg_.early_stopping.enabled && cfg_.early_stopping.restore_best) {
      p.best_weights.clear();
      for (auto& [n, t] : model_->named_parameters()) p.best_weights.push_back({n, t.clone()});
      for (auto& [n, t] : model_->named_buffers()) p.best_weights.push_back({n, t.clone()});
    }
  }
  if (cfg_.early_stopping.enabled && p.early.update(m, p.epoch)) {
    p.stopped_early = true;
    p.stopped_at_epoch = p.epoch;
  }
  return m;
}

void Trainer::restore_best_weights(Progress& p) {
  if (p.best_weights.empty()) return;
  NoGradGuard no_grad;
  NamedTensors all = model_->named_parameters();
  for (auto& b : model_->named_buffers()) all.push_back(b);
  for (auto& [n, t] : all)
    for (auto& [bn, bt] : p.best_weights)
      if (bn == n) t.copy_(bt);
  log_->message("restored the best weights (epoch " + std::to_string(p.best_epoch + 1) + ")");
}

TrainSummary Trainer::summarize(Run& run, Progress& p, BatchSource* test) {
  TrainSummary s;
  s.run = run_record_;
  s.task = task_->name();
  if (test && !run.stop_signal) {
    EvalResult r = evaluate(*test);
    s.test_metrics = r.metrics;
    s.test_accuracy = r.accuracy;
    s.test_loss = r.loss;
    s.test_top5 = r.top5;
  }
  s.best_metric = p.best_metric;
  s.best_metric_name = cfg_.early_stopping.monitor;
  s.best_epoch = p.best_epoch >= 0 ? p.best_epoch + 1 : -1;
  s.epochs = p.epochs_done;
  s.steps = p.step;
  const double seconds = std::max(1e-9, p.train_seconds);
  s.samples_per_second = static_cast<double>(p.samples) / seconds;
  s.item_unit = task_->item_unit();
  s.items_per_second = p.items / seconds;
  s.flops_per_item = flops_per_item_;
  s.flops_per_second = s.items_per_second * flops_per_item_;
  if (cfg_.trainer.peak_flops > 0) s.mfu = s.flops_per_second / (cfg_.trainer.peak_flops * comm_.size());
  s.data_wait_fraction = p.wait_seconds / seconds;
  s.world_size = comm_.size();
  s.precision = cfg_.precision.dtype;
  s.wall_seconds = now() - run.t_start;
  s.stopped_early = p.stopped_early;
  s.stopped_at_epoch = p.stopped_early ? p.stopped_at_epoch + 1 : -1;
  s.interrupted_by_signal = run.stop_signal;
  s.skipped_steps = p.skipped_steps;
  IoTotals mine;  // every request of this process's sources, manifests included
  std::vector<const BatchSource*> sources;
  for (const BatchSource* src : {run.train, run.val, test})
    if (src && std::find(sources.begin(), sources.end(), src) == sources.end()) sources.push_back(src);
  for (const BatchSource* src : sources) {
    const IoTotals t = src->io_totals();
    mine.remote_requests += t.remote_requests;
    mine.remote_bytes += t.remote_bytes;
  }
  auto io =
      allreduce_sums({static_cast<double>(mine.remote_requests), static_cast<double>(mine.remote_bytes)});
  s.remote_requests = static_cast<int64_t>(io[0]);
  s.remote_bytes = static_cast<int64_t>(io[1]);
  s.train_loader = p.loader_totals;
  const AllocatorStats mem = allocator_for(model_device()).stats();
  s.device = device_name(model_device());
  s.memory_in_use_bytes = static_cast<int64_t>(mem.in_use_bytes);
  s.memory_peak_bytes = static_cast<int64_t>(mem.peak_bytes);
  s.memory_cached_bytes = static_cast<int64_t>(mem.cached_bytes);
  s.memory_allocations = static_cast<int64_t>(mem.allocations);
  s.host_syncs_per_step_max = p.step_syncs_max;
  s.host_syncs_per_step_mean =
      p.synced_steps > 0 ? static_cast<double>(p.step_syncs_total) / static_cast<double>(p.synced_steps)
                         : 0.0;
  if (gpu_sampler_) s.gpu = gpu_sampler_->summary();
  if (comm_.rank() == 0 && !run.stop_signal) {
    write_text_file(std::filesystem::path(run_dir_) / "summary.json", s.to_json() + "\n");
    std::map<std::string, double> record;
    for (auto& [name, value] : s.test_metrics) record[name] = value;
    if (!record.empty()) log_->record("test", p.step, record);
  }
  log_->flush();
  log_->end_console();  // the caller's result line starts a line of its own
  return s;
}

}  // namespace strata
