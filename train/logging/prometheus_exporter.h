// PrometheusExporter: one rank's live training figures on an HTTP endpoint in
// Prometheus' text format (prometheus-cpp, Debian prometheus-cpp-dev), so that
// the operators of a pool see every job on one dashboard (docs/monitoring.md,
// docs/grafana-dashboard.json). Every series is labelled job (the run's name),
// rank and host. Updated once per logging interval by the trainer; scraping
// runs on the library's own HTTP threads and never waits for a step.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "train/logging/loader_metrics.h"

namespace strata {

struct PrometheusLabels {
  std::string job, rank, host;
};

// What the trainer knows at a logging interval (this rank's view).
struct TrainingFigures {
  int64_t step = 0, epoch = 0;
  int64_t steps = 0, samples = 0;  // done since the previous update
  double loss = 0, lr = 0;
  double steps_per_second = 0, samples_per_second = 0, data_wait_fraction = 0;
  // The model device's allocator (kernels/runtime/allocator.h): what is known on any device.
  int64_t memory_in_use_bytes = 0, memory_peak_bytes = 0;
};

// A GPU's utilisation and memory as the driver reports them (NVML's
// nvmlDeviceGetUtilizationRates / nvmlDeviceGetMemoryInfo). strata has no NVML
// code yet: whoever has it sets PrometheusExporter::set_gpu_probe, and the
// strata_gpu_* series appear; without a probe they are not exported at all.
struct GpuReading {
  double utilization = 0;  // in [0, 1]
  int64_t memory_used_bytes = 0, memory_total_bytes = 0;
};

class PrometheusExporter {
 public:
  // Listens on address:port (port 0 picks a free one); throws ConfigError when it cannot.
  PrometheusExporter(const std::string& address, int port, PrometheusLabels labels);
  ~PrometheusExporter();
  PrometheusExporter(const PrometheusExporter&) = delete;
  PrometheusExporter& operator=(const PrometheusExporter&) = delete;

  // Gauges take the figures; the step and sample counters advance by theirs.
  void update(const TrainingFigures& f);
  // The loader counters advance by this rank's loader over an interval.
  void add_loader(const LoaderCounters& loader);
  // strata_world_size and strata_world_size_changes_total (the run's starts on
  // another rank count than the start before, over all its starts).
  void set_world_size(int64_t world_size, int64_t changes);
  void set_gpu_probe(std::function<std::optional<GpuReading>()> probe);
  int port() const;  // the port it listens on

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata
