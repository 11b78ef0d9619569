// Loader: the staging loader behind strata::BatchSource. It opens the dataset's
// source, joins the node-local shard cache, plans each epoch's order (pure
// function of seed, epoch, world size, rank) and runs a PrefetchPipeline over
// this rank's share. See docs/loader.md.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/batch_source.h"
#include "data/loader/order_planner.h"
#include "data/loader/shard_cache.h"
#include "data/loader/staging_counters.h"
#include "data/loader/transforms.h"
#include "data/store/source.h"

namespace strata::data {

struct LoaderOptions {
  std::string url;  // dataset: directory holding manifest.json + shards
  SourceOptions source;
  std::filesystem::path cache_dir;  // node-local; shared by the job's processes on the node
  int64_t cache_bytes = 0;          // capacity of this dataset's directory under cache_dir
  CacheLifetime lifetime = CacheLifetime::kJob;
  // The key of an encrypted dataset (data/format/data_key.h); null for a plain one.
  std::shared_ptr<const DataKey> key;
  uint64_t seed = 0;
  int rank = 0;
  int world_size = 1;
  int local_ranks = 1;     // processes of the job sharing cache_dir (capacity check)
  int64_t batch_size = 1;  // per rank; the global batch is batch_size * world_size
  bool shuffle = true;
  // Shards whose samples are shuffled together (the order planner's window).
  // 0: the widest window the cache holds (shuffle_block.h): the whole epoch when
  // the dataset fits cache_bytes. Without `shuffle` 0 means 1.
  int64_t shuffle_window = 0;
  Remainder remainder = Remainder::kDrop;
  int64_t lookahead_bytes = 256ll << 20;  // staged ahead of the batches being collated
  int staging_threads = 4;
  double download_stall_timeout_s = 120;  // ShardCacheOptions: another process's stalled download is redone
  int decode_threads = 2;
  int ring_batches = 0;                // batch buffers; 0 = decode_threads + 2
  std::vector<NormalizeU8> normalize;  // fields not named here are copied as they are
  // Random crop / flip of u8 image fields before normalising (data/loader/augment.h),
  // seeded per sample by (seed, epoch, the sample's index in the dataset).
  // Meant for the training split; fields not named here are not augmented.
  std::vector<AugmentU8> augment;
  // Encoded images (strata-pack files): the variable-size field image->field is
  // decoded into the u8 [C, S, S] batch field image->out_field (image_decode.h),
  // which `normalize` then names. Unset: a variable-size field is left out of batches.
  std::optional<ImageDecodeOptions> image;
  // Where the ring slots' and so the batches' bytes live: null = plain host
  // memory; core's batch_memory_for(Device::cuda) for page-locked memory.
  HostBufferResource* batch_memory = nullptr;
};

// The cache directory of one dataset under the node's cache root. Datasets get
// their own directories because shard names repeat across datasets
// (shard-00000.h5), and a cached file must never stand in for another dataset's;
// cache_bytes is therefore a capacity per dataset. strata-train splits
// data.cache_bytes between a job's datasets (node_budget.h) so that their caps
// together stay within it.
std::filesystem::path dataset_cache_dir(const std::filesystem::path& root, const std::string& url);

class PrefetchPipeline;
class StagingPlan;

class Loader : public strata::BatchSource {
 public:
  explicit Loader(LoaderOptions options);
  // With a source the caller opened (options.url/source are then only for messages).
  Loader(LoaderOptions options, std::unique_ptr<Source> source);
  ~Loader() override;

  void start_epoch(int64_t epoch) override;
  bool next(HostBatch& out) override;
  int64_t batches_per_epoch() const override;
  // {"epoch", "step" (next global batch of the epoch), "seed", "global_batch",
  // "shuffle_window"}. "world_size" and "rank" are informational: restore()
  // accepts any world size whose global batch is the same, and keeps the saved
  // window (the order's), also for the epochs after it.
  SourcePosition position() const override;
  void restore(const SourcePosition& pos) override;
  DataMetrics metrics() const override;
  IoTotals io_totals() const override;

  const Manifest& manifest() const { return cache_->manifest(); }
  ShardCache& cache() { return *cache_; }
  Source& source() { return *source_; }
  int64_t global_batch() const { return opts_.batch_size * opts_.world_size; }
  // The shuffle window the order uses: options.shuffle_window, or the one 0 resolved
  // to, or the one a restored position was saved with.
  int64_t shuffle_window() const { return window_; }
  // Bytes that must fit in the cache at once: the look-ahead plus the shards
  // pinned by the batches being collated, times local_ranks.
  int64_t required_cache_bytes(int64_t epoch) const;

 private:
  void init();
  void reset_metrics();
  void start_at(int64_t epoch, int64_t step);
  void check_capacity(int64_t need, int64_t epoch) const;
  OrderOptions order_options() const;
  std::vector<SampleRef> rank_order_of(int64_t epoch, int64_t first_step) const;
  int ring() const;
  int64_t node_cache_need(const StagingPlan& plan) const;
  int64_t resolve_window() const;

  LoaderOptions opts_;
  std::unique_ptr<Source> source_;
  std::unique_ptr<ShardCache> cache_;
  std::vector<FieldTransform> transforms_;
  std::vector<int64_t> shard_samples_;
  std::vector<int64_t> shard_first_sample_;  // global index of each shard's first sample
  int64_t window_ = 1;                       // resolved shuffle window
  std::unique_ptr<PrefetchPipeline> pipeline_;
  std::vector<int64_t> next_epoch_first_use_;  // per shard, -1 = unused
  std::vector<SampleRef> next_order_;          // rank order of epoch next_order_epoch_, kept for reuse
  int64_t next_order_epoch_ = -1;
  int64_t epoch_ = 0;
  int64_t start_step_ = 0;
  bool started_ = false;

  // Metrics baselines at the start of the epoch.
  double wait_s_ = 0;
  StagingCounters base_;
};

}  // namespace strata::data
