// LoaderCounters: what the training loader did over a stretch of the run (one
// logging interval, or the whole run): cache hits and misses, retries,
// evictions, shards staged, requests and bytes to the object store, time the
// trainer waited for data. The per-interval figures go to metrics.jsonl
// ("data" rows), TensorBoard and Prometheus; their sum to summary.json.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/batch_source.h"

namespace strata {

struct LoaderCounters {
  int64_t cache_hits = 0, cache_misses = 0, retries = 0, evictions = 0, shards_staged = 0;
  int64_t store_requests = 0, store_bytes = 0;
  double data_wait_seconds = 0;
  int64_t bad_images = 0;  // undecodable images replaced (data.skip_bad_images)

  // `now` minus `before`: two readings of one epoch's DataMetrics.
  static LoaderCounters between(const DataMetrics& before, const DataMetrics& now);
  LoaderCounters& operator+=(const LoaderCounters& o);
  // As doubles in a fixed order and back: for an allreduce over the ranks.
  std::vector<double> to_vector() const;
  static LoaderCounters from_vector(const std::vector<double>& v);
  // metrics.jsonl / TensorBoard values of an interval of `seconds`: the counts,
  // plus staging_mb_per_second and data_wait_fraction (wait over `seconds`,
  // averaged over `ranks` when the counters are the ranks' sum).
  std::map<std::string, double> interval_values(double seconds, int ranks) const;
  bool operator==(const LoaderCounters&) const = default;
};

}  // namespace strata
