#include "train/logging/loader_metrics.h"

#include <algorithm>

namespace strata {

LoaderCounters LoaderCounters::between(const DataMetrics& before, const DataMetrics& now) {
  LoaderCounters c;
  c.cache_hits = now.cache_hits - before.cache_hits;
  c.cache_misses = now.cache_misses - before.cache_misses;
  c.retries = now.retries - before.retries;
  c.evictions = now.evictions - before.evictions;
  c.shards_staged = now.shards_staged - before.shards_staged;
  c.store_requests = now.remote_requests - before.remote_requests;
  c.store_bytes = now.remote_bytes - before.remote_bytes;
  c.data_wait_seconds = now.wait_seconds - before.wait_seconds;
  c.bad_images = now.bad_images - before.bad_images;
  return c;
}

LoaderCounters& LoaderCounters::operator+=(const LoaderCounters& o) {
  cache_hits += o.cache_hits;
  cache_misses += o.cache_misses;
  retries += o.retries;
  evictions += o.evictions;
  shards_staged += o.shards_staged;
  store_requests += o.store_requests;
  store_bytes += o.store_bytes;
  data_wait_seconds += o.data_wait_seconds;
  bad_images += o.bad_images;
  return *this;
}

std::vector<double> LoaderCounters::to_vector() const {
  return {static_cast<double>(cache_hits),    static_cast<double>(cache_misses),
          static_cast<double>(retries),       static_cast<double>(evictions),
          static_cast<double>(shards_staged), static_cast<double>(store_requests),
          static_cast<double>(store_bytes),   data_wait_seconds,
          static_cast<double>(bad_images)};
}

LoaderCounters LoaderCounters::from_vector(const std::vector<double>& v) {
  auto at = [&](size_t i) { return static_cast<int64_t>(v.at(i)); };
  LoaderCounters c;
  c.cache_hits = at(0);
  c.cache_misses = at(1);
  c.retries = at(2);
  c.evictions = at(3);
  c.shards_staged = at(4);
  c.store_requests = at(5);
  c.store_bytes = at(6);
  c.data_wait_seconds = v.at(7);
  c.bad_images = at(8);
  return c;
}

std::map<std::string, double> LoaderCounters::interval_values(double seconds, int ranks) const {
  const double s = std::max(1e-9, seconds);
  return {{"cache_hits", static_cast<double>(cache_hits)},
          {"cache_misses", static_cast<double>(cache_misses)},
          {"retries", static_cast<double>(retries)},
          {"evictions", static_cast<double>(evictions)},
          {"shards_staged", static_cast<double>(shards_staged)},
          {"store_requests", static_cast<double>(store_requests)},
          {"store_bytes", static_cast<double>(store_bytes)},
          {"staging_mb_per_second", static_cast<double>(store_bytes) / 1e6 / s},
          {"data_wait_seconds", data_wait_seconds},
          {"data_wait_fraction", data_wait_seconds / std::max(1, ranks) / s},
          {"bad_images", static_cast<double>(bad_images)},
          {"seconds", seconds}};
}

}  // namespace strata
