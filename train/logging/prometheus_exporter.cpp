#include "train/logging/prometheus_exporter.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <exception>
#include <mutex>

#include "base/error.h"
#include "train/logging/metrics_endpoint.h"

namespace strata {
namespace pm = prometheus;

struct PrometheusExporter::Impl {
  std::shared_ptr<pm::Registry> registry = std::make_shared<pm::Registry>();
  std::unique_ptr<MetricsEndpoint> endpoint;
  pm::Labels labels;
  pm::Gauge *world_size, *step, *epoch, *loss, *lr, *step_rate, *sample_rate, *data_wait, *mem_in_use,
      *mem_peak;
  pm::Counter *world_size_changes, *steps, *samples, *hits, *misses, *retries, *evictions, *staged, *requests,
      *bytes, *wait, *bad_images;
  pm::Gauge *gpu_util = nullptr, *gpu_used = nullptr, *gpu_total = nullptr;
  std::function<std::optional<GpuReading>()> gpu_probe;
  std::mutex mu;  // update() against set_gpu_probe()

  pm::Gauge* gauge(const std::string& name, const std::string& help) {
    return &pm::BuildGauge().Name(name).Help(help).Register(*registry).Add(labels);
  }
  pm::Counter* counter(const std::string& name, const std::string& help) {
    return &pm::BuildCounter().Name(name).Help(help).Register(*registry).Add(labels);
  }
};

PrometheusExporter::PrometheusExporter(const std::string& address, int port, PrometheusLabels labels)
    : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  m.labels = {{"job", labels.job}, {"rank", labels.rank}, {"host", labels.host}};
  m.step = m.gauge("strata_step", "Optimizer steps done");
  m.world_size = m.gauge("strata_world_size", "Ranks of this start of the run");
  m.world_size_changes = m.counter("strata_world_size_changes_total",
                                   "Starts of the run on another rank count than the start before");
  m.epoch = m.gauge("strata_epoch", "The epoch being trained (1-based)");
  m.loss = m.gauge("strata_loss", "Training loss, mean over the last logging interval");
  m.lr = m.gauge("strata_learning_rate", "Learning rate of the last step");
  m.step_rate = m.gauge("strata_steps_per_second", "Optimizer steps per second over the last interval");
  m.sample_rate = m.gauge("strata_samples_per_second", "Samples per second of all ranks, last interval");
  m.data_wait = m.gauge("strata_data_wait_ratio", "Fraction of the last interval spent waiting for data");
  m.mem_in_use = m.gauge("strata_device_memory_in_use_bytes", "Bytes the model device's allocator holds");
  m.mem_peak = m.gauge("strata_device_memory_peak_bytes", "Most bytes the allocator has held");
  m.steps = m.counter("strata_steps_total", "Optimizer steps done by this process");
  m.samples = m.counter("strata_samples_total", "Samples trained on by this rank");
  m.hits = m.counter("strata_loader_cache_hits_total", "Shards the loader found in the node cache");
  m.misses = m.counter("strata_loader_cache_misses_total", "Shards the loader fetched from the store");
  m.retries = m.counter("strata_loader_retries_total", "Store requests retried (checksum refetches too)");
  m.evictions = m.counter("strata_loader_evictions_total", "Shards evicted from the node cache");
  m.staged = m.counter("strata_loader_shards_staged_total", "Shard uses staged for training");
  m.requests = m.counter("strata_store_requests_total", "Requests the training loader made of the store");
  m.bytes = m.counter("strata_store_bytes_total", "Bytes the training loader read from the store");
  m.wait = m.counter("strata_data_wait_seconds_total", "Seconds the trainer waited for batches");
  m.bad_images = m.counter("strata_loader_bad_images_total",
                           "Images that did not decode, replaced by zeros (data.skip_bad_images)");
  m.endpoint = std::make_unique<MetricsEndpoint>(
      address, port, [registry = m.registry] { return pm::TextSerializer().Serialize(registry->Collect()); });
}

PrometheusExporter::~PrometheusExporter() = default;

int PrometheusExporter::port() const { return impl_->endpoint->port(); }

void PrometheusExporter::set_gpu_probe(std::function<std::optional<GpuReading>()> probe) {
  auto& m = *impl_;
  std::lock_guard<std::mutex> lk(m.mu);
  m.gpu_probe = std::move(probe);
  if (m.gpu_probe && !m.gpu_util) {
    m.gpu_util = m.gauge("strata_gpu_utilization_ratio", "GPU utilisation as the driver reports it");
    m.gpu_used = m.gauge("strata_gpu_memory_used_bytes", "GPU memory in use as the driver reports it");
    m.gpu_total = m.gauge("strata_gpu_memory_total_bytes", "GPU memory in all");
  }
}

namespace {

// A counter only goes up: a negative interval (never expected) is dropped.
void advance(prometheus::Counter* c, double v) {
  if (v > 0) c->Increment(v);
}

}  // namespace

void PrometheusExporter::update(const TrainingFigures& f) {
  auto& m = *impl_;
  std::lock_guard<std::mutex> lk(m.mu);
  m.step->Set(static_cast<double>(f.step));
  m.epoch->Set(static_cast<double>(f.epoch + 1));
  m.loss->Set(f.loss);
  m.lr->Set(f.lr);
  m.step_rate->Set(f.steps_per_second);
  m.sample_rate->Set(f.samples_per_second);
  m.data_wait->Set(f.data_wait_fraction);
  m.mem_in_use->Set(static_cast<double>(f.memory_in_use_bytes));
  m.mem_peak->Set(static_cast<double>(f.memory_peak_bytes));
  advance(m.steps, static_cast<double>(f.steps));
  advance(m.samples, static_cast<double>(f.samples));
  if (m.gpu_probe)
    if (auto g = m.gpu_probe()) {
      m.gpu_util->Set(g->utilization);
      m.gpu_used->Set(static_cast<double>(g->memory_used_bytes));
      m.gpu_total->Set(static_cast<double>(g->memory_total_bytes));
    }
}

void PrometheusExporter::set_world_size(int64_t world_size, int64_t changes) {
  auto& m = *impl_;
  std::lock_guard<std::mutex> lk(m.mu);
  m.world_size->Set(static_cast<double>(world_size));
  advance(m.world_size_changes, static_cast<double>(changes) - m.world_size_changes->Value());
}

void PrometheusExporter::add_loader(const LoaderCounters& l) {
  auto& m = *impl_;
  std::lock_guard<std::mutex> lk(m.mu);
  advance(m.hits, static_cast<double>(l.cache_hits));
  advance(m.misses, static_cast<double>(l.cache_misses));
  advance(m.retries, static_cast<double>(l.retries));
  advance(m.evictions, static_cast<double>(l.evictions));
  advance(m.staged, static_cast<double>(l.shards_staged));
  advance(m.requests, static_cast<double>(l.store_requests));
  advance(m.bytes, static_cast<double>(l.store_bytes));
  advance(m.wait, l.data_wait_seconds);
  advance(m.bad_images, static_cast<double>(l.bad_images));
}

}  // namespace strata
