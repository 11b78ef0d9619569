// StagingCounters: a snapshot of the counters a loader reads from its source and
// its shard cache, taken at the start of an epoch, so that metrics() reports
// what the epoch alone cost (both loaders share it).
#pragma once
#include <cstdint>

#include "core/batch_source.h"
#include "data/loader/shard_cache.h"
#include "data/store/source.h"

namespace strata::data {

struct StagingCounters {
  int64_t requests = 0, bytes = 0, retries = 0;                // the source's
  int64_t hits = 0, misses = 0, evictions = 0, refetches = 0;  // the cache's

  static StagingCounters read(Source& source, ShardCache& cache) {
    const SourceStats& s = source.stats();
    const CacheStats& c = cache.stats();
    return {s.requests, s.bytes, s.retries, c.hits, c.misses, c.evictions, c.refetches};
  }
  // The remote and cache fields of `m`: counts now (this) minus at `base`. A
  // checksum refetch counts as a retry.
  void fill_since(const StagingCounters& base, DataMetrics& m) const {
    m.cache_hits = hits - base.hits;
    m.cache_misses = misses - base.misses;
    m.remote_requests = requests - base.requests;
    m.remote_bytes = bytes - base.bytes;
    m.retries = (retries - base.retries) + (refetches - base.refetches);
    m.evictions = evictions - base.evictions;
  }
};

}  // namespace strata::data
