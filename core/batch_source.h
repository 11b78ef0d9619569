// BatchSource: what the trainer pulls host batches from. The staging loader in
// data/ implements it; tests and synthetic runs use in-memory sources.
// Header-only so that data/ implements it without linking core.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/error.h"

namespace strata {

// One named field of a batch, contiguous row-major on the host. shape[0] is the batch.
struct HostArray {
  std::string name;
  std::string dtype;  // "f32", "f16", "bf16", "i32", "i64", "u8"
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;

  int64_t numel() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(bytes.data());
  }
  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(bytes.data());
  }
};

struct HostBatch {
  std::vector<HostArray> fields;
  int64_t size = 0;  // samples in this batch
  // The first `valid` samples are real; the rest repeat earlier ones to pad the
  // last global batch (evaluation counts only the valid ones). -1 = all valid.
  int64_t valid = -1;
  int64_t valid_count() const { return valid < 0 ? size : valid; }

  const HostArray& field(const std::string& name) const {
    for (auto& f : fields)
      if (f.name == name) return f;
    throw Error("batch has no field '" + name + "'");
  }
  HostArray& field(const std::string& name) {
    return const_cast<HostArray&>(static_cast<const HostBatch*>(this)->field(name));
  }
};

// Per-epoch figures a source reports (the loader fills the remote/cache ones).
struct DataMetrics {
  double wait_seconds = 0;  // time the consumer spent blocked in next()
  int64_t batches = 0;
  int64_t samples = 0;
  int64_t sample_bytes = 0;
  int64_t shards_staged = 0;
  int64_t shard_uses = 0;  // shard uses in the epoch's staging plan: shards_staged's goal (0 = not known)
  int64_t cache_hits = 0;
  int64_t cache_misses = 0;
  int64_t remote_requests = 0;
  int64_t remote_bytes = 0;
  int64_t retries = 0;
  int64_t evictions = 0;
};

struct IoTotals {
  int64_t remote_requests = 0;
  int64_t remote_bytes = 0;
};

// The position of a source: a few integers that restore it exactly.
using SourcePosition = std::map<std::string, int64_t>;

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // Begin epoch `epoch` (0-based) from its first batch.
  virtual void start_epoch(int64_t epoch) = 0;
  // Fill `out` with the next batch of the current epoch; false at the end of the epoch.
  virtual bool next(HostBatch& out) = 0;
  // Batches this rank yields per epoch.
  virtual int64_t batches_per_epoch() const = 0;
  // Position after the last batch returned by next(); restore() continues from there.
  virtual SourcePosition position() const = 0;
  virtual void restore(const SourcePosition& pos) = 0;
  // Figures since the start of the current epoch.
  virtual DataMetrics metrics() const = 0;
  // Every request this source made of the object store, and the bytes they
  // brought, since it was created: the manifest's and evaluation's included,
  // which per-epoch metrics() leave out. What summary.json reports.
  virtual IoTotals io_totals() const { return {}; }
};

}  // namespace strata
