// Trainer::fit: epochs of micro-batches, an optimizer step per accumulation
// window, evaluation by epochs or steps, early stopping, checkpoints and the
// summary. Stop signals finish the current step, save and return.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "core/autograd.h"
#include "core/config/to_yaml.h"
#include "core/schedule/make_schedule.h"
#include "core/trainer/stop_signal.h"
#include "core/trainer/trainer.h"
#include "core/trainer/trainer_progress.h"

namespace strata {
namespace {

double now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

ScheduleOptions to_schedule_options(const ScheduleConfig& s, int64_t total_steps) {
  ScheduleOptions o;
  o.name = s.name;
  o.warmup_steps = s.warmup_steps;
  o.warmup_start_factor = s.warmup_start_factor;
  o.step_size = s.step_size;
  o.milestones = s.milestones;
  o.gamma = s.gamma;
  o.min_lr = s.min_lr;
  o.max_lr = s.max_lr;
  o.pct_start = s.pct_start;
  o.total_steps = s.total_steps > 0 ? s.total_steps : total_steps;
  o.plateau_patience = s.plateau_patience;
  o.plateau_factor = s.plateau_factor;
  o.plateau_threshold = s.plateau_threshold;
  o.plateau_mode = s.plateau_mode;
  return o;
}

double metric_of(const std::string& monitor, double loss, double acc) {
  if (monitor == "val_loss") return loss;
  if (monitor == "val_accuracy") return acc;
  throw ConfigError("early_stopping.monitor: unknown metric '" + monitor + "' (val_loss, val_accuracy)");
}

}  // namespace

TrainSummary Trainer::fit(BatchSource& train, BatchSource* val, BatchSource* test) {
  const double t_start = now();
  install_stop_handlers();
  if (comm_.rank() == 0) {
    std::filesystem::create_directories(run_dir_);
    std::ofstream(std::filesystem::path(run_dir_) / "resolved.yaml") << to_yaml(cfg_);
  }
  const int64_t acc = std::max<int64_t>(1, cfg_.trainer.accumulate);
  const int64_t bpe = train.batches_per_epoch();
  if (bpe == 0)
    throw Error("the training set yields no batch per rank (batch size larger than this rank's share?)");
  const int64_t steps_per_epoch = (bpe + acc - 1) / acc;
  int64_t total_steps = cfg_.trainer.epochs * steps_per_epoch;
  if (cfg_.trainer.max_steps > 0) total_steps = std::min(total_steps, cfg_.trainer.max_steps);
  schedule_ = make_schedule(to_schedule_options(cfg_.schedule, total_steps), cfg_.optimizer.lr);

  Progress p;
  EarlyStoppingOptions eo;
  eo.mode = cfg_.early_stopping.mode;
  eo.patience = cfg_.early_stopping.patience;
  eo.min_delta = cfg_.early_stopping.min_delta;
  p.early = EarlyStopping(eo);
  maybe_resume(train, p);
  BatchSource* val_src = val ? val : test;
  const std::string& monitor = cfg_.early_stopping.monitor;
  bool max_mode = cfg_.early_stopping.mode == "max";
  bool done = false;
  int stop_signal = 0;

  auto evaluate_and_track = [&](int64_t epoch) -> double {
    if (!val_src) return NAN;
    EvalResult r = evaluate(*val_src);
    log_->record(
        "val", p.step,
        {{"loss", r.loss}, {"accuracy", r.accuracy}, {"top5", r.top5}, {"epoch", double(epoch + 1)}});
    log_->message("epoch " + std::to_string(epoch + 1) + " validation: loss " + std::to_string(r.loss) +
                  " accuracy " + std::to_string(r.accuracy));
    double m = metric_of(monitor, r.loss, r.accuracy);
    if (schedule_->metric_driven())
      schedule_->observe(cfg_.schedule.plateau_monitor == "val_accuracy" ? r.accuracy : r.loss);
    bool better = !p.have_best || (max_mode ? m > p.best_metric : m < p.best_metric);
    if (better) {
      p.have_best = true;
      p.best_metric = m;
      p.best_epoch = epoch;
      if (cfg_.early_stopping.enabled && cfg_.early_stopping.restore_best) {
        p.best_weights.clear();
        for (auto& [n, t] : model_->named_parameters()) p.best_weights.push_back({n, t.clone()});
        for (auto& [n, t] : model_->named_buffers()) p.best_weights.push_back({n, t.clone()});
      }
    }
    if (cfg_.early_stopping.enabled && p.early.update(m, epoch)) {
      p.stopped_early = true;
      p.stopped_at_epoch = epoch;
    }
    return m;
  };

  HostBatch batch;
  for (; p.epoch < cfg_.trainer.epochs && !done; ++p.epoch) {
    if (!p.mid_epoch) {
      train.start_epoch(p.epoch);
      p.micro = 0;
      p.loss_sum = 0;
      p.correct = p.seen = 0;
    }
    p.mid_epoch = true;
    model_->train();
    double epoch_t0 = now();
    double last_log = epoch_t0;
    int64_t last_log_samples = 0, epoch_samples = 0;
    while (!done && train.next(batch)) {
      bool sync = (p.micro + 1) % acc == 0 || p.micro + 1 == bpe;
      int64_t correct = 0;
      double loss = train_micro_batch(batch, sync, &correct);
      p.micro++;
      p.loss_sum += loss * static_cast<double>(batch.size);
      p.correct += correct;
      p.seen += batch.size;
      epoch_samples += batch.size;
      p.window_loss += loss;
      p.window_batches++;
      if (!sync) continue;
      optimizer_->set_lr(schedule_->lr(p.step));
      if (!optimizer_step()) p.skipped_steps++;
      p.step++;
      if (cfg_.logging.every_steps > 0 && p.step % cfg_.logging.every_steps == 0) {
        double t = now();
        DataMetrics dm = train.metrics();
        ProgressInfo pi;
        pi.epoch = p.epoch;
        pi.epochs = cfg_.trainer.epochs;
        pi.step = p.step;
        pi.steps_per_epoch = steps_per_epoch;
        pi.step_in_epoch = (p.micro + acc - 1) / acc;
        pi.loss = p.window_loss / static_cast<double>(std::max<int64_t>(1, p.window_batches));
        pi.lr = optimizer_->lr();
        pi.samples_per_second = static_cast<double>(epoch_samples - last_log_samples) * comm_.size() /
                                std::max(1e-9, t - last_log);
        pi.data_wait_fraction = dm.wait_seconds / std::max(1e-9, t - epoch_t0);
        pi.loss_scale = scaler_.enabled() ? scaler_.scale() : 0.0;
        pi.eta_seconds = (t - epoch_t0) / std::max<int64_t>(1, pi.step_in_epoch) *
                         static_cast<double>(total_steps - p.step);
        log_->progress(pi);
        log_->record("train", p.step,
                     {{"loss", pi.loss},
                      {"lr", pi.lr},
                      {"samples_per_second", pi.samples_per_second},
                      {"data_wait_fraction", pi.data_wait_fraction},
                      {"loss_scale", scaler_.scale()}});
        p.window_loss = 0;
        p.window_batches = 0;
        last_log = t;
        last_log_samples = epoch_samples;
      }
      double metric = NAN;
      if (cfg_.trainer.eval_every_steps > 0 && p.step % cfg_.trainer.eval_every_steps == 0)
        metric = evaluate_and_track(p.epoch);
      if (cfg_.checkpoint.every_steps > 0 && p.step % cfg_.checkpoint.every_steps == 0)
        save(train, p, metric);
      if (cfg_.trainer.max_steps > 0 && p.step >= cfg_.trainer.max_steps) done = true;
      if ((stop_signal = stop_requested()) != 0) {
        save(train, p, NAN);
        log_->message("stopped by signal " + std::to_string(stop_signal) + " at step " +
                      std::to_string(p.step) +
                      "; checkpoint saved; continue with checkpoint.resume=auto --run-dir " + run_dir_);
        done = true;
      }
    }
    sync_buffers_if_trained();  // the epoch's end: buffers agree across ranks
    DataMetrics dm = train.metrics();
    p.train_seconds += now() - epoch_t0;
    p.wait_seconds += dm.wait_seconds;
    p.samples += epoch_samples * comm_.size();
    p.remote_requests += dm.remote_requests;
    p.remote_bytes += dm.remote_bytes;
    if (stop_signal) break;
    if (done && cfg_.trainer.max_steps > 0 && p.micro < bpe) {
      p.epoch++;  // counts as the epoch reached; max_steps ends the run
      break;
    }
    auto sums = allreduce_sums({p.loss_sum, static_cast<double>(p.correct), static_cast<double>(p.seen)});
    log_->record("epoch", p.step,
                 {{"epoch", double(p.epoch + 1)},
                  {"train_loss", sums[0] / std::max(1.0, sums[2])},
                  {"train_accuracy", sums[1] / std::max(1.0, sums[2])}});
    double metric = NAN;
    if (cfg_.trainer.eval_every_epochs > 0 && (p.epoch + 1) % cfg_.trainer.eval_every_epochs == 0)
      metric = evaluate_and_track(p.epoch);
    p.epochs_done = p.epoch + 1;
    p.mid_epoch = false;
    if (p.stopped_early) {
      log_->message("early stopping at epoch " + std::to_string(p.epoch + 1) + ": no improvement of " +
                    monitor + " for " + std::to_string(cfg_.early_stopping.patience) + " evaluations");
      done = true;
    }
    Progress next = p;  // the checkpoint resumes at the next epoch's start
    next.epoch = p.epoch + 1;
    if (cfg_.checkpoint.every_epochs > 0 && (p.epoch + 1) % cfg_.checkpoint.every_epochs == 0)
      save(train, next, metric);
  }
  if (!stop_signal && !p.best_weights.empty()) {
    NoGradGuard no_grad;
    NamedTensors all = model_->named_parameters();
    for (auto& b : model_->named_buffers()) all.push_back(b);
    for (auto& [n, t] : all)
      for (auto& [bn, bt] : p.best_weights)
        if (bn == n) t.copy_(bt);
    log_->message("restored the best weights (epoch " + std::to_string(p.best_epoch + 1) + ")");
  }

  TrainSummary s;
  if (test && !stop_signal) {
    EvalResult r = evaluate(*test);
    s.test_accuracy = r.accuracy;
    s.test_loss = r.loss;
    s.test_top5 = r.top5;
    DataMetrics tm = test->metrics();
    p.remote_requests += tm.remote_requests;
    p.remote_bytes += tm.remote_bytes;
  }
  s.best_metric = p.best_metric;
  s.best_metric_name = monitor;
  s.best_epoch = p.best_epoch >= 0 ? p.best_epoch + 1 : -1;
  s.epochs = p.epochs_done;
  s.steps = p.step;
  s.samples_per_second = static_cast<double>(p.samples) / std::max(1e-9, p.train_seconds);
  s.data_wait_fraction = p.wait_seconds / std::max(1e-9, p.train_seconds);
  s.world_size = comm_.size();
  s.precision = cfg_.precision.dtype;
  s.wall_seconds = now() - t_start;
  s.stopped_early = p.stopped_early;
  s.stopped_at_epoch = p.stopped_early ? p.stopped_at_epoch + 1 : -1;
  s.interrupted_by_signal = stop_signal;
  s.skipped_steps = p.skipped_steps;
  auto io = allreduce_sums({static_cast<double>(p.remote_requests), static_cast<double>(p.remote_bytes)});
  s.remote_requests = static_cast<int64_t>(io[0]);
  s.remote_bytes = static_cast<int64_t>(io[1]);
  const AllocatorStats mem = allocator_for(model_device()).stats();
  s.device = device_name(model_device());
  s.memory_in_use_bytes = static_cast<int64_t>(mem.in_use_bytes);
  s.memory_peak_bytes = static_cast<int64_t>(mem.peak_bytes);
  s.memory_cached_bytes = static_cast<int64_t>(mem.cached_bytes);
  s.memory_allocations = static_cast<int64_t>(mem.allocations);
  if (comm_.rank() == 0 && !stop_signal) {
    std::ofstream(std::filesystem::path(run_dir_) / "summary.json") << s.to_json() << "\n";
    log_->record("test", p.step, {{"loss", s.test_loss}, {"accuracy", s.test_accuracy}});
  }
  log_->flush();
  return s;
}

}  // namespace strata
