// Trainer::fit: the epoch/step loop, periodic evaluation, early stopping,
// checkpoints (make, restore, save and rotate; resume is trainer_resume.cpp)
// and the summary.
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/error.h"
#include "core/autograd.h"
#include "core/random.h"
#include "nn/modules/dropout.h"
#include "train/config/config.h"
#include "train/config/config_diff.h"
#include "train/config/to_yaml.h"
#include "train/make_schedule.h"
#include "train/trainer/stop_signal.h"
#include "train/trainer/trainer.h"
#include "train/trainer/trainer_progress.h"

namespace strata {
namespace fs = std::filesystem;

namespace {

void collect_dropouts(const Module& m, const std::string& prefix,
                      std::vector<std::pair<std::string, Dropout*>>& out) {
  for (auto& [name, child] : m.named_children()) {
    std::string path = prefix.empty() ? name : prefix + "." + name;
    if (auto* d = dynamic_cast<Dropout*>(child.get())) out.push_back({path, d});
    collect_dropouts(*child, path, out);
  }
}

}  // namespace

Checkpoint Trainer::make_checkpoint(const BatchSource& train, const Progress& p) const {
  Checkpoint ck;
  for (auto& [n, t] : model_->named_parameters()) ck.model[n] = t.to(DType::f32);
  for (auto& [n, t] : model_->named_buffers()) ck.model[n] = t.to(DType::f32);
  auto os = optimizer_->state();
  for (auto& [n, t] : os.tensors) ck.optimizer[n] = t;
  ck.ints[ckpt_key::optimizer_step] = os.step;
  ck.ints[ckpt_key::step] = p.step;
  ck.ints[ckpt_key::epoch] = p.epoch;
  ck.ints["mid_epoch"] = p.mid_epoch ? 1 : 0;
  ck.ints["micro"] = p.micro;
  ck.ints["skipped_steps"] = p.skipped_steps;
  // the epoch's training sums by the task's names: "epoch_sum.loss_sum", ...
  const auto sum_names = task_->sum_names();
  const std::vector<double> sums = p.sums.read();  // empty before the epoch's first batch
  for (size_t i = 0; i < sums.size() && i < sum_names.size(); ++i)
    ck.scalars["epoch_sum." + sum_names[i]] = sums[i];
  ck.ints["epochs_done"] = p.epochs_done;
  ck.ints[ckpt_key::best_epoch] = p.best_epoch;
  ck.ints["have_best"] = p.have_best ? 1 : 0;
  ck.ints[ckpt_key::patience_counter] = p.early.bad_epochs();
  ck.ints["early_best_epoch"] = p.early.best_epoch();
  ck.scalars["early_best"] = p.early.best();
  ck.scalars[ckpt_key::best_metric] = p.best_metric;
  ck.scalars[ckpt_key::scaler_scale] = scaler_.scale();
  ck.ints[ckpt_key::scaler_growth_tracker] = scaler_.growth_tracker();
  ck.rng["default"] = default_generator().state();
  std::vector<std::pair<std::string, Dropout*>> drops;
  collect_dropouts(*model_, "", drops);
  for (auto& [n, d] : drops) ck.rng["dropout." + n] = d->generator().state();
  ck.resolved_yaml = to_yaml(cfg_);
  const bool fed = feeder_ && &feeder_->source() == &train;  // the loader is a batch ahead of the step
  for (auto& [k, v] : fed ? feeder_->position() : train.position()) ck.loader[k] = v;
  ck.schedule = schedule_->state();
  return ck;
}

// A checkpoint of another model is refused before anything is copied, naming
// the checkpoint, the first tensor that does not fit and the config keys that
// differ from the run that saved it (its resolved config is in the file).
void Trainer::check_checkpoint_fits(const Checkpoint& ck) const {
  std::string problem;
  auto check = [&](const NamedTensors& tensors, const std::map<std::string, Tensor>& saved,
                   const char* group) {
    for (auto& [n, t] : tensors) {
      if (!problem.empty()) return;
      auto it = saved.find(n);
      if (it == saved.end())
        problem = "this model's " + std::string(group) + " '" + n + "' is not in it";
      else if (it->second.shape() != t.shape())
        problem = std::string(group) + " '" + n + "' is " + shape_str(it->second.shape()) + " there and " +
                  shape_str(t.shape()) + " in this model";
    }
  };
  check(model_->named_parameters(), ck.model, "parameter");
  check(model_->named_buffers(), ck.model, "buffer");
  if (problem.empty()) return;
  std::string changed;
  try {
    const TrainConfig saved = parse_config(ck.resolved_yaml, "the checkpoint's resolved config");
    for (const std::string& d : config_differences(saved, cfg_, {"checkpoint", "logging"}))
      changed += (changed.empty() ? "" : "; ") + d;
  } catch (const Error&) {
    changed = "";  // written by another strata version: no key to name
  }
  throw ConfigError("checkpoint '" + ck.source + "' does not fit this model: " + problem +
                    (changed.empty()
                         ? std::string(" (the config keys match; was it saved by another model?)")
                         : "; config keys changed since it was saved (checkpoint -> now): " + changed));
}

void Trainer::restore_checkpoint(const Checkpoint& ck, BatchSource& train, Progress& p) {
  check_checkpoint_fits(ck);
  // Every entry is looked up before anything is set: a checkpoint that lacks
  // one (IoError) leaves the trainer as it was, and resume=auto tries an older one.
  OptimizerState os;
  os.step = ck.int_value(ckpt_key::optimizer_step);
  os.tensors = ck.optimizer;
  const int64_t step = ck.int_value(ckpt_key::step), epoch = ck.int_value(ckpt_key::epoch);
  const bool mid_epoch = ck.int_value("mid_epoch") != 0;
  const int64_t micro = ck.int_value("micro"), skipped_steps = ck.int_value("skipped_steps");
  const int64_t epochs_done = ck.int_value("epochs_done"), best_epoch = ck.int_value(ckpt_key::best_epoch);
  const bool have_best = ck.int_value("have_best") != 0;
  const EarlyStoppingState early{ck.scalar_value("early_best"), ck.int_value("early_best_epoch"),
                                 ck.int_value(ckpt_key::patience_counter)};
  const double best_metric = ck.scalar_value(ckpt_key::best_metric);
  const LossScalerState scaler{ck.scalar_value(ckpt_key::scaler_scale),
                               ck.int_value(ckpt_key::scaler_growth_tracker)};
  const std::string& default_rng = ck.rng_state("default");
  std::vector<std::pair<std::string, Dropout*>> drops;
  collect_dropouts(*model_, "", drops);
  std::vector<const std::string*> drop_rngs;
  for (auto& [n, d] : drops) drop_rngs.push_back(&ck.rng_state("dropout." + n));
  std::vector<double> sums;
  for (auto& name : task_->sum_names()) {
    auto it = ck.scalars.find("epoch_sum." + name);
    if (it == ck.scalars.end()) break;  // saved before the epoch's first batch
    sums.push_back(it->second);
  }

  {
    NoGradGuard no_grad;
    for (auto& [n, t] : model_->named_parameters()) t.copy_(ck.model_tensor(n));
    for (auto& [n, t] : model_->named_buffers()) t.copy_(ck.model_tensor(n));
  }
  optimizer_->load_state(os);
  p.step = step;
  p.epoch = epoch;
  p.mid_epoch = mid_epoch;
  p.micro = micro;
  p.skipped_steps = skipped_steps;
  p.sums = TaskSums();
  if (sums.size() == task_->sum_names().size()) {
    p.sums = TaskSums(sums.size(), model_device());
    p.sums.assign(sums);
  }
  p.epochs_done = epochs_done;
  p.best_epoch = best_epoch;
  p.have_best = have_best;
  p.early.load_state(early);
  p.best_metric = best_metric;
  scaler_.load_state(scaler);
  default_generator().set_state(default_rng);
  for (size_t i = 0; i < drops.size(); ++i) drops[i].second->generator().set_state(*drop_rngs[i]);
  schedule_->load_state(ck.schedule);
  if (p.mid_epoch) {
    SourcePosition pos(ck.loader.begin(), ck.loader.end());
    train.restore(pos);
  }
}

void Trainer::save(const BatchSource& train, const Progress& p, double metric) {
  sync_buffers_if_trained();  // collective: before rank 0 alone goes on
  if (comm_.rank() != 0) return;
  fs::path dir = fs::path(run_dir_) / "checkpoints";
  fs::create_directories(dir);
  sweep_dead_temporaries(dir);  // left by writers killed while saving (a live writer's stays)
  Checkpoint ck = make_checkpoint(train, p);
  if (std::isfinite(metric)) ck.scalars[ckpt_key::metric] = metric;
  if (!rotation_) {  // adopts the checkpoints already there (a resumed run)
    RotationOptions ro;
    ro.keep_last = cfg_.checkpoint.keep_last;  // 0 keeps every checkpoint
    ro.not_adopted = resume_skipped_;
    ro.notify = [this](const std::string& line) { log_->message(line); };
    ro.keep_best = cfg_.checkpoint.keep_best;
    ro.mode = cfg_.early_stopping.mode;  // the monitored metric's direction
    ro.prefix = "step";
    rotation_ = std::make_unique<CheckpointRotation>(dir, ro);
  }
  rotation_->save(ck);
}

std::string TrainSummary::to_json() const {
  nlohmann::json j = nlohmann::json::parse(run.to_json());  // run.json's fields, then the figures
  j["task"] = task;
  nlohmann::json test = nlohmann::json::object();
  for (auto& [name, value] : test_metrics)
    test[name] = std::isfinite(value) ? nlohmann::json(value) : nullptr;
  j["test"] = test;
  j["test_accuracy"] = test_accuracy;
  j["test_loss"] = test_loss;
  j["test_top5"] = test_top5;
  j["best_metric"] = best_metric;
  j["best_metric_name"] = best_metric_name;
  j["best_epoch"] = best_epoch;
  j["epochs"] = epochs;
  j["steps"] = steps;
  j["samples_per_second"] = samples_per_second;
  j["item_unit"] = item_unit;
  j["items_per_second"] = items_per_second;
  j["flops_per_item"] = flops_per_item;
  j["flops_per_second"] = flops_per_second;
  j["mfu"] = mfu;
  j["data_wait_fraction"] = data_wait_fraction;
  j["world_size"] = world_size;
  j["precision"] = precision;
  j["wall_seconds"] = wall_seconds;
  j["stopped_early"] = stopped_early;
  j["stopped_at_epoch"] = stopped_at_epoch;
  j["interrupted_by_signal"] = interrupted_by_signal;
  j["skipped_steps"] = skipped_steps;
  j["remote_requests"] = remote_requests;
  j["remote_bytes"] = remote_bytes;
  const LoaderCounters& l = train_loader;
  j["train_loader"] = {{"cache_hits", l.cache_hits},
                       {"cache_misses", l.cache_misses},
                       {"retries", l.retries},
                       {"evictions", l.evictions},
                       {"shards_staged", l.shards_staged},
                       {"store_requests", l.store_requests},
                       {"store_bytes", l.store_bytes},
                       {"data_wait_seconds", l.data_wait_seconds}};
  j["device"] = device;
  j["memory_in_use_bytes"] = memory_in_use_bytes;
  j["memory_peak_bytes"] = memory_peak_bytes;
  j["memory_cached_bytes"] = memory_cached_bytes;
  j["memory_allocations"] = memory_allocations;
  j["host_syncs_per_step_max"] = host_syncs_per_step_max;
  j["host_syncs_per_step_mean"] = host_syncs_per_step_mean;
  auto finite_or_null = [](double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
  };
  if (gpu)
    j["gpu"] = {{"name", gpu->name},
                {"index", gpu->index},
                {"samples", gpu->samples},
                {"peak_memory_used_bytes", gpu->peak_memory_used_bytes},
                {"memory_total_bytes", gpu->memory_total_bytes},
                {"mean_utilization", finite_or_null(gpu->mean_utilization)},
                {"mean_power_watts", finite_or_null(gpu->mean_power_watts)},
                {"max_temperature_c", gpu->max_temperature_c}};
  else
    j["gpu"] = nullptr;
  return j.dump(2);
}

}  // namespace strata
