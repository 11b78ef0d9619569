// PrefetchPipeline: one epoch (or the rest of one) of one rank's order, run by
//   - staging threads: pin the shards of the plan's uses in order, running ahead of
//     the batches being collated by at most `lookahead_bytes` (0: stage only what a
//     batch being collated needs);
//   - decode threads: map each use's shard (MappedShard; ShardData::read when it is
//     chunked or compressed), then collate a batch into a slot of a ring of
//     `ring` reusable batch buffers, applying the field transforms (augmented
//     fields keyed by seed, epoch and sample); a use's shard and pin are dropped
//     once its last sample is in;
//   - the consumer: next() takes the batches in order, swapping buffers with the
//     caller's HostBatch (no copy, no allocation in steady state). Slot buffers
//     come from `memory` (page-locked for a GPU); a caller's buffer from another
//     resource (its first batch) is replaced in the slot, not reused.
// Memory: at most `ring` batches plus the shards of the uses overlapping them.
// The first error of any thread is rethrown by next(); the destructor stops and joins.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/batch_source.h"
#include "data/format/mapped_shard.h"
#include "data/loader/shard_cache.h"
#include "data/loader/staging_plan.h"
#include "data/loader/transforms.h"

namespace strata::data {

struct PipelineConfig {
  int64_t batch = 1;  // samples per batch (the rank's share of a global step)
  int64_t lookahead_bytes = 0;
  int staging_threads = 2;
  int decode_threads = 2;
  int ring = 4;  // batch buffers
  // Per shard, its first position in the next epoch's order (-1: unused): lets
  // eviction see past the end of this epoch.
  std::vector<int64_t> next_epoch_first_use;
  // What seeds augmented fields (augment.h): each sample's key is
  // augment_key(seed, epoch, shard_first_sample[shard] + index in the shard).
  uint64_t seed = 0;
  int64_t epoch = 0;
  std::vector<int64_t> shard_first_sample;  // per shard; needed only when a transform augments
  HostBufferResource* memory = nullptr;     // the batch buffers' memory; null = plain host memory
};

class PrefetchPipeline {
 public:
  PrefetchPipeline(ShardCache& cache, const std::vector<FieldSpec>& schema,
                   const std::vector<FieldTransform>& transforms, std::vector<SampleRef> order,
                   StagingPlan plan, PipelineConfig cfg);
  ~PrefetchPipeline();
  PrefetchPipeline(const PrefetchPipeline&) = delete;
  PrefetchPipeline& operator=(const PrefetchPipeline&) = delete;

  // Next batch into `out`; false after the last. Adds the time spent blocked to *wait_s.
  bool next(HostBatch& out, double* wait_s);
  int64_t batches() const { return nbatches_; }
  int64_t consumed() const;
  int64_t uses_staged() const;
  const StagingPlan& plan() const { return plan_; }
  // Positions before this one are collated already (the eviction clock).
  int64_t frontier() const;
  // Images that could not be decoded and were replaced (ImageDecodeOptions::skip_bad).
  int64_t bad_images() const;

 private:
  enum class UseState { kIdle, kStaging, kStaged, kLoading, kLoaded, kReleased };
  struct Use {
    UseState state = UseState::kIdle;
    ShardCache::Pin pin;
    std::shared_ptr<const MappedShard> data;
    int64_t remaining = 0;
    bool counted_ahead = false;
  };
  struct Slot {
    std::vector<HostBytes> fields;
    bool ready = false;
  };

  void stage_loop();
  void decode_loop();
  void collate(int64_t k, Slot& slot, std::unique_lock<std::mutex>& lk);
  void decode_image(const FieldTransform& t, size_t f, const MappedShard& sd, const SampleRef& ref,
                    uint8_t* dst, uint64_t key, uint8_t* scratch);
  void raise_demand(int64_t end);
  void fail(std::exception_ptr e);

  ShardCache& cache_;
  std::vector<FieldSpec> schema_;
  std::vector<FieldTransform> transforms_;
  std::vector<SampleRef> order_;
  StagingPlan plan_;
  PipelineConfig cfg_;
  int64_t nbatches_ = 0;

  mutable std::mutex mu_;
  // Separate wake-ups so a finished batch does not wake every stager, and so on.
  std::condition_variable cv_stage_, cv_decode_, cv_consumer_;
  std::unordered_map<std::string, int32_t> shard_index_;
  std::vector<Use> uses_;
  std::vector<Slot> slots_;
  size_t next_stage_ = 0;
  size_t demand_uses_ = 0;   // uses with first < demand_end_
  int64_t demand_end_ = 0;   // positions of batches handed to decoders
  int64_t ahead_bytes_ = 0;  // staged beyond demand_end_
  int64_t staged_ = 0;
  int64_t next_batch_ = 0;
  int64_t consumed_ = 0;
  int64_t bad_images_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> threads_;
};

}  // namespace strata::data
