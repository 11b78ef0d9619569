#include "train/trainer/reporter.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "base/error.h"
#include "base/file_write.h"
#include "kernels/cuda/pci_bus_id.h"
#include "kernels/runtime/allocator.h"
#include "train/config/to_yaml.h"
#include "train/trainer/collective_sums.h"

namespace strata {
namespace {

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

double steady_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

Reporter::Reporter(const TrainConfig& cfg, std::string run_dir, Communicator& comm, std::string item_unit)
    : cfg_(cfg), run_dir_(std::move(run_dir)), comm_(comm), item_unit_(std::move(item_unit)) {}

Reporter::~Reporter() = default;

void Reporter::open(RunRecord& record, Device model_device) {
  if (log_) return;  // a second fit() of this trainer
  // Every rank's Prometheus port first: a port in use stops the run, on all
  // ranks, before there is a run directory.
  std::string port_refused;
  try {
    start_prometheus();
  } catch (const Error& e) {
    port_refused = e.what();
  }
  if (allreduce_sums(comm_, {port_refused.empty() ? 0.0 : 1.0})[0] != 0.0)
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
  if (allreduce_sums(comm_, {refused.empty() ? 0.0 : 1.0})[0] != 0.0)
    throw ConfigError(comm_.rank() == 0 ? refused : "rank 0 could not take the run directory " + run_dir_);
  ConsoleMode console = cfg_.logging.console == "off"     ? ConsoleMode::off
                        : cfg_.logging.console == "plain" ? ConsoleMode::plain
                                                          : ConsoleMode::automatic;
  log_ = std::make_unique<RunLog>(run_dir_, comm_.rank() == 0, console, cfg_.logging.tensorboard);
  if (run_lock_ && !run_lock_->recovered_from().empty())
    log_->message("run directory " + run_dir_ +
                  ": took over the lock of a run that ended without releasing it (" +
                  run_lock_->recovered_from() + ")");
  record.fill_from_this_process(comm_.size());
  if (comm_.rank() == 0) {
    write_text_atomically(std::filesystem::path(run_dir_) / "resolved.yaml", to_yaml(cfg_));
    write_text_atomically(std::filesystem::path(run_dir_) / "run.json", record.to_json() + "\n");
  }
  if (prometheus_)
    log_->message("prometheus: rank 0 serves metrics on http://" + cfg_.logging.prometheus_address + ":" +
                  std::to_string(prometheus_->port()) + "/metrics (rank r on port + its local rank)");
  start_gpu_sampler(model_device);
}

void Reporter::start_gpu_sampler(Device model_device) {
  if (!gpu_sampler_ && model_device == Device::cuda)
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

void Reporter::log_gpu(int64_t step) {
  if (!gpu_sampler_ || !gpu_sampler_->available()) return;
  gpu_last_ = gpu_sampler_->sample();
  if (gpu_last_)
    log_->record("gpu", step, gpu_row(*gpu_last_));
  else
    log_->message("nvml: stopped reading the GPU (" + gpu_sampler_->unavailable_reason() + ")");
}

void Reporter::start_prometheus() {
  if (cfg_.logging.prometheus_port <= 0 || prometheus_) return;
  const int port = static_cast<int>(cfg_.logging.prometheus_port) + comm_.local_rank();
  prometheus_ = std::make_unique<PrometheusExporter>(
      cfg_.logging.prometheus_address, port,
      PrometheusLabels{run_name(run_dir_), std::to_string(comm_.rank()), host_name()});
}

void Reporter::start_run(const RunShape& shape, int64_t step) {
  shape_ = shape;
  stats_ = RunStats{};  // this fit()'s
  window_loss_ = TaskSums();
  window_batches_ = 0;
  last_log_step_ = step;
}

void Reporter::note_world_sizes(const std::vector<WorldSizeStart>& starts) {
  if (starts.empty()) return;
  int64_t changes = 0;
  std::string line = "world size " + std::to_string(starts.back().world_size) + " at step " +
                     std::to_string(starts.back().step) + "; the run's starts:";
  for (size_t i = 0; i < starts.size(); ++i) {
    if (i > 0 && starts[i].world_size != starts[i - 1].world_size) changes++;
    line += " " + std::to_string(starts[i].world_size) + "@" + std::to_string(starts[i].step);
  }
  if (starts.size() > 1) log_->message(line);
  if (prometheus_) prometheus_->set_world_size(starts.back().world_size, changes);
}

void Reporter::start_epoch() {
  epoch_t0_ = last_log_ = steady_seconds();
  epoch_samples_ = last_log_samples_ = 0;
  epoch_items_ = last_log_items_ = 0;
  last_data_ = DataMetrics{};  // the source's figures restart with the epoch (or the resumed part)
  last_data_t_ = epoch_t0_;
}

TaskSums& Reporter::loss_window(Device device) {
  if (window_loss_.empty()) window_loss_ = TaskSums(1, device);
  return window_loss_;
}

void Reporter::count_micro_batches(int64_t batches, int64_t samples, double items) {
  window_batches_ += batches;
  epoch_samples_ += samples;
  epoch_items_ += items;
}

void Reporter::show_console(const BatchSource& train, const TrainState& s) {
  if (comm_.rank() != 0) return;
  log_->advance(s.epoch, s.step, shape_.steps_in_epoch(s.micro));
  const DataMetrics dm = train.metrics();
  StagingInfo st;
  st.shards_staged = dm.shards_staged;
  st.shard_uses = dm.shard_uses;
  st.cache_hits = dm.cache_hits;
  st.cache_misses = dm.cache_misses;
  st.store_bytes = dm.remote_bytes;
  // a rough rate for the console: the epoch's bytes over its time so far
  st.mb_per_second =
      static_cast<double>(dm.remote_bytes) / 1e6 / std::max(1e-9, steady_seconds() - epoch_t0_);
  log_->staging(st);
}

LoaderCounters Reporter::log_loader(BatchSource& train, const TrainState& s) {
  const double t = steady_seconds();
  const DataMetrics dm = train.metrics();
  const LoaderCounters mine = LoaderCounters::between(last_data_, dm);
  // The epoch's store bytes so far ride along: the bytes-per-epoch figure of a
  // corpus streamed through a smaller cache (docs/cache-sizing.md).
  std::vector<double> sums = mine.to_vector();
  sums.push_back(static_cast<double>(dm.remote_bytes));
  sums = allreduce_sums(comm_, std::move(sums));
  const double epoch_bytes = sums.back();
  sums.pop_back();
  const LoaderCounters all = LoaderCounters::from_vector(sums);
  std::map<std::string, double> values = all.interval_values(t - last_data_t_, comm_.size());
  values["epoch"] = static_cast<double>(s.epoch + 1);
  values["epoch_store_bytes"] = epoch_bytes;
  log_->record("data", s.step, values);
  stats_.loader_totals += all;
  last_data_ = dm;
  last_data_t_ = t;
  if (prometheus_) prometheus_->add_loader(mine);
  return mine;
}

void Reporter::log_progress(BatchSource& train, const TrainState& s, const StepFigures& f) {
  const double t = steady_seconds(), dt = std::max(1e-9, t - last_log_);
  DataMetrics dm = train.metrics();
  ProgressInfo pi;
  pi.epoch = s.epoch;
  pi.epochs = cfg_.trainer.epochs;
  pi.step = s.step;
  pi.steps_per_epoch = shape_.steps_per_epoch;
  pi.step_in_epoch = shape_.steps_in_epoch(s.micro);
  pi.total_steps = shape_.total_steps;
  pi.bounded_by_steps = shape_.total_steps < cfg_.trainer.epochs * shape_.steps_per_epoch;
  const double window_loss = window_loss_.empty() ? 0.0 : window_loss_.read()[0];
  pi.loss = window_loss / static_cast<double>(std::max<int64_t>(1, window_batches_));
  pi.lr = f.lr;
  pi.samples_per_second = static_cast<double>(epoch_samples_ - last_log_samples_) * comm_.size() / dt;
  pi.item_unit = item_unit_;
  pi.items_per_second = (epoch_items_ - last_log_items_) * comm_.size() / dt;
  if (cfg_.trainer.peak_flops > 0)
    pi.mfu = pi.items_per_second * flops_per_item_ / (cfg_.trainer.peak_flops * comm_.size());
  pi.data_wait_fraction = dm.wait_seconds / std::max(1e-9, t - epoch_t0_);
  pi.loss_scale = f.loss_scale;
  pi.eta_seconds = (t - epoch_t0_) / static_cast<double>(std::max<int64_t>(1, pi.step_in_epoch)) *
                   static_cast<double>(shape_.total_steps - s.step);
  log_->progress(pi);
  std::map<std::string, double> values = {{"loss", pi.loss},
                                          {"lr", pi.lr},
                                          {"samples_per_second", pi.samples_per_second},
                                          {pi.item_unit + "s_per_second", pi.items_per_second},
                                          {"data_wait_fraction", pi.data_wait_fraction},
                                          {"loss_scale", f.raw_loss_scale}};
  if (pi.mfu > 0) values["mfu"] = pi.mfu;
  // the model device's allocator over time: a leak shows as a rising peak
  const AllocatorStats mem = allocator_for(f.device).stats();
  values["memory_in_use_bytes"] = static_cast<double>(mem.in_use_bytes);
  values["memory_peak_bytes"] = static_cast<double>(mem.peak_bytes);
  values["memory_cached_bytes"] = static_cast<double>(mem.cached_bytes);
  log_->record("train", s.step, values);
  const LoaderCounters loader = log_loader(train, s);
  log_gpu(s.step);
  if (prometheus_) {
    TrainingFigures tf;
    tf.step = s.step;
    tf.epoch = s.epoch;
    tf.steps = s.step - last_log_step_;
    tf.samples = epoch_samples_ - last_log_samples_;
    tf.loss = pi.loss;
    tf.lr = pi.lr;
    tf.steps_per_second = static_cast<double>(tf.steps) / dt;
    tf.samples_per_second = pi.samples_per_second;
    tf.data_wait_fraction = loader.data_wait_seconds / dt;  // this rank's, over the interval
    tf.memory_in_use_bytes = static_cast<int64_t>(mem.in_use_bytes);
    tf.memory_peak_bytes = static_cast<int64_t>(mem.peak_bytes);
    prometheus_->update(tf);
  }
  window_loss_.zero();
  window_batches_ = 0;
  last_log_ = t;
  last_log_step_ = s.step;
  last_log_samples_ = epoch_samples_;
  last_log_items_ = epoch_items_;
}

void Reporter::end_epoch(BatchSource& train, const TrainState& s) {
  log_loader(train, s);  // the epoch's tail since the last logging interval
  log_->end_epoch(s.epoch, s.step, shape_.steps_in_epoch(s.micro), steady_seconds() - epoch_t0_);
  const DataMetrics dm = train.metrics();
  stats_.train_seconds += steady_seconds() - epoch_t0_;
  stats_.wait_seconds += dm.wait_seconds;
  stats_.samples += epoch_samples_ * comm_.size();
  stats_.items += epoch_items_ * comm_.size();
}

}  // namespace strata
