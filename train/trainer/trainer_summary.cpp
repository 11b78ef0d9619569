// The run's summary: summary.json (rank 0, written whole or not at all) and
// the TrainSummary fit() returns, from the TrainState, the Reporter's RunStats,
// the test set's evaluation and the allocator's and the GPU's figures.
#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/file_write.h"
#include "kernels/runtime/allocator.h"
#include "train/trainer/collective_sums.h"
#include "train/trainer/trainer.h"

namespace strata {

namespace {

// 2026-12-05T01:02:03Z
std::string iso8601_utc(int64_t unix_time) {
  const std::time_t t = static_cast<std::time_t>(unix_time);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return b;
}

}  // namespace

TrainSummary Trainer::summarize(const TrainState& st, BatchSource* test) {
  const RunStats& stats = reporter_.stats();
  TrainSummary s;
  s.run = run_record_;
  s.task = task_->name();
  if (test && !stop_signal_) {
    EvalResult r = evaluate(*test);
    s.test_metrics = r.metrics;
    s.test_accuracy = r.accuracy;
    s.test_loss = r.loss;
    s.test_top5 = r.top5;
  }
  s.best_metric = st.best.best_metric;
  s.best_metric_name = cfg_.early_stopping.monitor;
  s.best_epoch = st.best.best_epoch >= 0 ? st.best.best_epoch + 1 : -1;
  s.epochs = st.epochs_done;
  s.steps = st.step;
  const double seconds = std::max(1e-9, stats.train_seconds);
  s.samples_per_second = static_cast<double>(stats.samples) / seconds;
  s.item_unit = task_->item_unit();
  s.items_per_second = stats.items / seconds;
  s.flops_per_item = flops_per_item_;
  s.flops_per_second = s.items_per_second * flops_per_item_;
  if (cfg_.trainer.peak_flops > 0 && flops_per_item_ > 0)
    s.mfu = s.flops_per_second / (cfg_.trainer.peak_flops * comm_.size());
  s.data_wait_fraction = stats.wait_seconds / seconds;
  s.world_size = comm_.size();
  s.world_size_history = st.world_sizes;
  s.precision = cfg_.precision.dtype;
  s.wall_seconds = steady_seconds() - t_start_;
  s.stopped_early = evaluator_.stopped_early();
  s.stopped_at_epoch = s.stopped_early ? evaluator_.stopped_at_epoch() + 1 : -1;
  s.interrupted_by_signal = stop_signal_;
  s.skipped_steps = st.skipped_steps;
  s.checkpoint_saves = checkpointer_.save_times().saves;
  s.checkpoint_blocked_seconds = checkpointer_.save_times().blocked_seconds;
  s.checkpoint_waited_seconds = checkpointer_.save_times().waited_seconds;
  IoTotals mine = setup_io_;  // every request of this process's sources, manifests included
  std::vector<const BatchSource*> sources;
  for (const BatchSource* src : {train_, val_, test})
    if (src && std::find(sources.begin(), sources.end(), src) == sources.end()) sources.push_back(src);
  for (const BatchSource* src : sources) {
    const IoTotals t = src->io_totals();
    mine.remote_requests += t.remote_requests;
    mine.remote_bytes += t.remote_bytes;
  }
  auto io = allreduce_sums(
      comm_, {static_cast<double>(mine.remote_requests), static_cast<double>(mine.remote_bytes)});
  s.remote_requests = static_cast<int64_t>(io[0]);
  s.remote_bytes = static_cast<int64_t>(io[1]);
  s.train_loader = stats.loader_totals;
  const AllocatorStats mem = allocator_for(model_device()).stats();
  s.device = device_name(model_device());
  s.memory_in_use_bytes = static_cast<int64_t>(mem.in_use_bytes);
  s.memory_peak_bytes = static_cast<int64_t>(mem.peak_bytes);
  s.memory_cached_bytes = static_cast<int64_t>(mem.cached_bytes);
  s.memory_allocations = static_cast<int64_t>(mem.allocations);
  s.host_syncs_per_step_max = stats.step_syncs_max;
  s.host_syncs_per_step_mean = stats.synced_steps > 0 ? static_cast<double>(stats.step_syncs_total) /
                                                            static_cast<double>(stats.synced_steps)
                                                      : 0.0;
  if (NvmlSampler* gpu = reporter_.gpu_sampler()) s.gpu = gpu->summary();
  RunLog& log = reporter_.log();
  if (comm_.rank() == 0 && !stop_signal_) {
    write_text_atomically(std::filesystem::path(run_dir_) / "summary.json", s.to_json() + "\n");
    std::map<std::string, double> record;
    for (auto& [name, value] : s.test_metrics) record[name] = value;
    if (!record.empty()) log.record("test", st.step, record);
  }
  log.flush();
  log.end_console();  // the caller's result line starts a line of its own
  return s;
}

std::string TrainSummary::to_json() const {
  nlohmann::json j = nlohmann::json::parse(run.to_json());  // run.json's fields, then the figures
  j["task"] = task;
  auto finite_or_null = [](double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
  };
  // Only what applies to the run: no test figures without a test set, no
  // accuracy for a task that reports none (a language model), no best_* before
  // an evaluation, no epochs before one was completed.
  if (!test_metrics.empty()) {
    nlohmann::json test = nlohmann::json::object();
    for (auto& [name, value] : test_metrics) test[name] = finite_or_null(value);
    j["test"] = test;
    if (test.contains("loss")) j["test_loss"] = test["loss"];
    if (test.contains("accuracy")) j["test_accuracy"] = test["accuracy"];
    if (test.contains("top5")) j["test_top5"] = test["top5"];
  }
  if (best_epoch >= 1) {
    j["best_metric"] = finite_or_null(best_metric);
    j["best_metric_name"] = best_metric_name;
    j["best_epoch"] = best_epoch;
  }
  if (epochs > 0) j["epochs"] = epochs;
  j["steps"] = steps;
  j["samples_per_second"] = samples_per_second;
  j["item_unit"] = item_unit;
  j["items_per_second"] = items_per_second;
  // null when the model's FLOPs per item were not given, mfu also without trainer.peak_flops
  j["flops_per_item"] = flops_per_item > 0 ? nlohmann::json(flops_per_item) : nlohmann::json(nullptr);
  j["flops_per_second"] = flops_per_item > 0 ? nlohmann::json(flops_per_second) : nlohmann::json(nullptr);
  j["mfu"] = mfu ? nlohmann::json(*mfu) : nlohmann::json(nullptr);
  j["data_wait_fraction"] = data_wait_fraction;
  j["world_size"] = world_size;
  nlohmann::json history = nlohmann::json::array();
  for (const WorldSizeStart& w : world_size_history)
    history.push_back({{"world_size", w.world_size}, {"step", w.step}, {"time", iso8601_utc(w.unix_time)}});
  j["world_size_history"] = history;
  j["precision"] = precision;
  j["wall_seconds"] = wall_seconds;
  j["stopped_early"] = stopped_early;
  if (stopped_early) j["stopped_at_epoch"] = stopped_at_epoch;
  j["interrupted_by_signal"] = interrupted_by_signal;
  j["skipped_steps"] = skipped_steps;
  j["checkpoint_saves"] = checkpoint_saves;
  j["checkpoint_blocked_seconds"] = checkpoint_blocked_seconds;
  j["checkpoint_waited_seconds"] = checkpoint_waited_seconds;
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
                       {"data_wait_seconds", l.data_wait_seconds},
                       {"bad_images", l.bad_images}};
  j["device"] = device;
  j["memory_in_use_bytes"] = memory_in_use_bytes;
  j["memory_peak_bytes"] = memory_peak_bytes;
  j["memory_cached_bytes"] = memory_cached_bytes;
  j["memory_allocations"] = memory_allocations;
  j["host_syncs_per_step_max"] = host_syncs_per_step_max;
  j["host_syncs_per_step_mean"] = host_syncs_per_step_mean;
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
