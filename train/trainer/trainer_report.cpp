// What the trainer reports at a logging interval: the progress line and its
// "train" row (with the allocator's memory), the training loader's counters as
// a "data" row (with their run totals for summary.json), the GPU's "gpu" row,
// the staging bar, and this rank's Prometheus endpoint. See docs/training.md
// and docs/monitoring.md.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "kernels/cuda/pci_bus_id.h"
#include "train/trainer/trainer.h"
#include "train/trainer/trainer_progress.h"

namespace strata {
namespace {

double now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// The run's name: its directory's last component ("runs/mlp-0412/" -> "mlp-0412").
std::string run_name(const std::string& run_dir) {
  std::filesystem::path p(run_dir);
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

// The GPU the model is on: the current CUDA device, named to NVML by its PCI bus
// id. Where the runtime gives none, STRATA_DEVICE, else the local rank
// (NvmlSampler wraps it modulo the GPUs).
NvmlDeviceChoice rank_gpu(int local_rank) {
  NvmlDeviceChoice c;
  c.pci_bus_id = cuda::current_device_pci_bus_id();
  c.index = local_rank;
  if (const char* d = std::getenv("STRATA_DEVICE"); d && *d) {
    char* end = nullptr;
    const long v = std::strtol(d, &end, 10);
    if (*end != '\0' || v < 0)
      throw ConfigError("STRATA_DEVICE='" + std::string(d) + "' is not a GPU index (0, 1, ...)");
    c.index = static_cast<int>(v);
  }
  return c;
}

}  // namespace

void Trainer::start_gpu_sampler() {
  if (!gpu_sampler_ && model_device() == Device::cuda)
    gpu_sampler_ = std::make_unique<NvmlSampler>(rank_gpu(comm_.local_rank()));
  if (!gpu_sampler_) return;  // a model on the host: no GPU to read
  if (!gpu_sampler_->available()) {
    log_->message("nvml: not available (" + gpu_sampler_->unavailable_reason() + ")");
    gpu_sampler_.reset();
    return;
  }
  const GpuSummary g = gpu_sampler_->summary();
  log_->message("nvml: GPU " + std::to_string(g.index) + " (" + g.name + ") read at every logging interval");
  if (prometheus_)
    prometheus_->set_gpu_probe([this]() -> std::optional<GpuReading> {
      if (!gpu_last_ || !std::isfinite(gpu_last_->utilization)) return std::nullopt;
      return GpuReading{gpu_last_->utilization, gpu_last_->memory_used_bytes, gpu_last_->memory_total_bytes};
    });
}

void Trainer::log_gpu(int64_t step) {
  if (!gpu_sampler_ || !gpu_sampler_->available()) return;
  gpu_last_ = gpu_sampler_->sample();
  if (gpu_last_)
    log_->record("gpu", step, gpu_row(*gpu_last_));
  else
    log_->message("nvml: stopped reading the GPU (" + gpu_sampler_->unavailable_reason() + ")");
}

void Trainer::start_prometheus() {
  if (cfg_.logging.prometheus_port <= 0 || prometheus_) return;
  const int port = static_cast<int>(cfg_.logging.prometheus_port) + comm_.local_rank();
  prometheus_ = std::make_unique<PrometheusExporter>(
      cfg_.logging.prometheus_address, port,
      PrometheusLabels{run_name(run_dir_), std::to_string(comm_.rank()), host_name()});
}

void Trainer::show_console(const BatchSource& train, const Run& run, const Progress& p) {
  if (comm_.rank() != 0) return;
  log_->advance(p.epoch, p.step, (p.micro + run.accumulate - 1) / run.accumulate);
  const DataMetrics dm = train.metrics();
  StagingInfo s;
  s.shards_staged = dm.shards_staged;
  s.shard_uses = dm.shard_uses;
  s.cache_hits = dm.cache_hits;
  s.cache_misses = dm.cache_misses;
  s.store_bytes = dm.remote_bytes;
  // a rough rate for the console: the epoch's bytes over its time so far
  s.mb_per_second = static_cast<double>(dm.remote_bytes) / 1e6 / std::max(1e-9, now() - run.epoch_t0);
  log_->staging(s);
}

LoaderCounters Trainer::log_loader(BatchSource& train, Run& run, Progress& p) {
  const double t = now();
  const DataMetrics dm = train.metrics();
  const LoaderCounters mine = LoaderCounters::between(run.last_data, dm);
  const LoaderCounters all = LoaderCounters::from_vector(allreduce_sums(mine.to_vector()));
  std::map<std::string, double> values = all.interval_values(t - run.last_data_t, comm_.size());
  values["epoch"] = static_cast<double>(p.epoch + 1);
  log_->record("data", p.step, values);
  p.loader_totals += all;
  run.last_data = dm;
  run.last_data_t = t;
  if (prometheus_) prometheus_->add_loader(mine);
  return mine;
}

void Trainer::log_progress(BatchSource& train, Run& run, Progress& p) {
  const double t = now(), dt = std::max(1e-9, t - run.last_log);
  DataMetrics dm = train.metrics();
  ProgressInfo pi;
  pi.epoch = p.epoch;
  pi.epochs = cfg_.trainer.epochs;
  pi.step = p.step;
  pi.steps_per_epoch = run.steps_per_epoch;
  pi.step_in_epoch = (p.micro + run.accumulate - 1) / run.accumulate;
  pi.total_steps = run.total_steps;
  pi.bounded_by_steps = run.total_steps < cfg_.trainer.epochs * run.steps_per_epoch;
  const double window_loss = p.window_loss.empty() ? 0.0 : p.window_loss.read()[0];
  pi.loss = window_loss / static_cast<double>(std::max<int64_t>(1, p.window_batches));
  pi.lr = optimizer_->lr();
  pi.samples_per_second = static_cast<double>(run.epoch_samples - run.last_log_samples) * comm_.size() / dt;
  pi.item_unit = task_->item_unit();
  pi.items_per_second = (run.epoch_items - run.last_log_items) * comm_.size() / dt;
  if (cfg_.trainer.peak_flops > 0)
    pi.mfu = pi.items_per_second * flops_per_item_ / (cfg_.trainer.peak_flops * comm_.size());
  pi.data_wait_fraction = dm.wait_seconds / std::max(1e-9, t - run.epoch_t0);
  pi.loss_scale = scaler_.enabled() ? scaler_.scale() : 0.0;
  pi.eta_seconds = (t - run.epoch_t0) / static_cast<double>(std::max<int64_t>(1, pi.step_in_epoch)) *
                   static_cast<double>(run.total_steps - p.step);
  log_->progress(pi);
  std::map<std::string, double> values = {{"loss", pi.loss},
                                          {"lr", pi.lr},
                                          {"samples_per_second", pi.samples_per_second},
                                          {pi.item_unit + "s_per_second", pi.items_per_second},
                                          {"data_wait_fraction", pi.data_wait_fraction},
                                          {"loss_scale", scaler_.scale()}};
  if (pi.mfu > 0) values["mfu"] = pi.mfu;
  // the model device's allocator over time: a leak shows as a rising peak
  const AllocatorStats mem = allocator_for(model_device()).stats();
  values["memory_in_use_bytes"] = static_cast<double>(mem.in_use_bytes);
  values["memory_peak_bytes"] = static_cast<double>(mem.peak_bytes);
  values["memory_cached_bytes"] = static_cast<double>(mem.cached_bytes);
  log_->record("train", p.step, values);
  const LoaderCounters loader = log_loader(train, run, p);
  log_gpu(p.step);
  if (prometheus_) {
    TrainingFigures f;
    f.step = p.step;
    f.epoch = p.epoch;
    f.steps = p.step - run.last_log_step;
    f.samples = run.epoch_samples - run.last_log_samples;
    f.loss = pi.loss;
    f.lr = pi.lr;
    f.steps_per_second = static_cast<double>(f.steps) / dt;
    f.samples_per_second = pi.samples_per_second;
    f.data_wait_fraction = loader.data_wait_seconds / dt;  // this rank's, over the interval
    f.memory_in_use_bytes = static_cast<int64_t>(mem.in_use_bytes);
    f.memory_peak_bytes = static_cast<int64_t>(mem.peak_bytes);
    prometheus_->update(f);
  }
  p.window_loss.zero();
  p.window_batches = 0;
  run.last_log = t;
  run.last_log_step = p.step;
  run.last_log_samples = run.epoch_samples;
  run.last_log_items = run.epoch_items;
}

}  // namespace strata
