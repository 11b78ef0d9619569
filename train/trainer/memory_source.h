// MemoryBatchSource: a BatchSource over samples held in memory (synthetic data,
// tests, small embedded uses). Order: a seeded shuffle per epoch (or none);
// the last partial batch is dropped. Position = {epoch, batch}.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/batch_source.h"

namespace strata {

class MemoryBatchSource : public BatchSource {
 public:
  // inputs: n * sample_numel floats; labels: n values.
  MemoryBatchSource(std::vector<float> inputs, std::vector<int64_t> labels, std::vector<int64_t> sample_shape,
                    int64_t batch_size, uint64_t seed, bool shuffle = true);

  void start_epoch(int64_t epoch) override;
  bool next(HostBatch& out) override;
  int64_t batches_per_epoch() const override { return n_ / batch_; }
  SourcePosition position() const override { return {{"epoch", epoch_}, {"batch", batch_index_}}; }
  void restore(const SourcePosition& pos) override;
  DataMetrics metrics() const override { return metrics_; }

 private:
  std::vector<float> inputs_;
  std::vector<int64_t> labels_;
  std::vector<int64_t> sample_shape_;
  int64_t n_, sample_numel_, batch_;
  uint64_t seed_;
  bool shuffle_;
  int64_t epoch_ = 0, batch_index_ = 0;
  std::vector<int64_t> order_;
  DataMetrics metrics_;
};

}  // namespace strata
