// TokenLoader: the BatchSource for causal language modelling. It serves the
// (input, target) windows of a token dataset (strata-pack tokens,
// docs/data-format.md) from any URL the image loader reads (a directory, s3://,
// http(s)://), in the order TokenWindows plans: batches of two i64 fields,
// "input" and "target", each [B, T], target = input shifted by one token.
//
// Staging: every shard goes through the node-local ShardCache (one GET per shard
// per node, checksums verified, shared by the node's ranks) and is read from
// there through a read-only memory map, without being read into memory: the
// page cache holds what is in use, so a multi-GB dataset needs disk, not RAM.
// A dataset that fits cache_bytes is cached whole: windows of the whole stream,
// shards staged when a batch first needs them. A larger one streams through
// the cache in shard windows (token_windows.h): W shards, W the most that fit
// with one more shard staged ahead; the loader pins and maps one shard window
// at a time, stages the next one's first shard in the background, and unpins
// (unmaps) a shard window's shards when it moves on, so the cache can evict
// them (farthest next use first). An unshuffled (evaluation) one larger than
// the cache keeps stream order and maps only the shards of the batch being
// read. See docs/loader.md (token datasets).
#pragma once
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/batch_source.h"
#include "data/loader/shard_cache.h"
#include "data/loader/staging_counters.h"
#include "data/loader/token_windows.h"
#include "data/store/source.h"

namespace strata::data {

struct TokenLoaderOptions {
  std::string url;  // token dataset: manifest.json + shards
  SourceOptions source;
  std::filesystem::path cache_dir;  // node-local root; the dataset gets dataset_cache_dir(cache_dir, url)
  int64_t cache_bytes = 0;          // capacity of the dataset's cache: at least its two largest shards
  CacheLifetime lifetime = CacheLifetime::kJob;
  // The key of an encrypted dataset (data/format/data_key.h); null for a plain one.
  std::shared_ptr<const DataKey> key;
  uint64_t seed = 0;
  int rank = 0;
  int world_size = 1;
  // Processes of the job sharing cache_dir. They share one copy of the dataset,
  // so unlike the image loader's capacity need this one does not grow with it.
  int local_ranks = 1;
  int64_t batch_size = 1;  // windows per rank; the global batch is batch_size * world_size
  int64_t context = 0;     // T: tokens per window (>= 1)
  bool shuffle = true;     // training; false (evaluation): windows in stream order
  // kDrop for training; kPad for evaluation (HostBatch::valid counts the real windows).
  Remainder remainder = Remainder::kDrop;
  int staging_threads = 4;                // parallel downloads of the shards a batch is missing
  double download_stall_timeout_s = 120;  // ShardCacheOptions: another process's stalled download is redone
  // Where the batches' bytes live: null = plain host memory; core's
  // batch_memory_for(Device::cuda) for page-locked memory the GPU copies from.
  HostBufferResource* batch_memory = nullptr;
};

class TokenStream;

class TokenLoader : public strata::BatchSource {
 public:
  explicit TokenLoader(TokenLoaderOptions options);
  // With a source the caller opened (options.url/source are then only for messages).
  TokenLoader(TokenLoaderOptions options, std::unique_ptr<Source> source);
  ~TokenLoader() override;

  void start_epoch(int64_t epoch) override;
  bool next(HostBatch& out) override;
  int64_t batches_per_epoch() const override { return windows_.global_batches(); }
  // {"epoch", "step" (next global batch of the epoch), "seed", "global_batch",
  // "context", "window_shards" (0: the whole stream)}; "world_size" and "rank"
  // are informational: restore() accepts any world size with the same global
  // batch, and keeps the saved window_shards (the order's) when the cache holds it.
  SourcePosition position() const override;
  // Throws ConfigError naming the key when seed, context or global batch differ.
  void restore(const SourcePosition& pos) override;
  DataMetrics metrics() const override;
  IoTotals io_totals() const override;

  const Manifest& manifest() const { return cache_->manifest(); }
  int64_t vocab_size() const { return manifest().vocab_size; }
  const TokenWindows& windows() const { return windows_; }
  int64_t global_batch() const { return opts_.batch_size * opts_.world_size; }
  // Shards per shard window: 0 when the dataset is cached whole.
  int64_t window_shards() const { return window_shards_; }
  // Bytes the cache must hold for shard windows of `w` shards: the w + 1 largest
  // shards (one window in use, one shard staged ahead).
  int64_t window_need(int64_t w) const;
  // The least cache capacity this dataset runs with (all local ranks share it):
  // the dataset, or less when it can stream: shuffled, the two largest shards;
  // in stream order (evaluation), those or the shards one global batch reads.
  int64_t min_cache_bytes() const;
  ShardCache& cache() { return *cache_; }
  Source& source() { return *source_; }

 private:
  void init();
  void start_at(int64_t epoch, int64_t step);
  void reset_metrics();
  void validate_manifest() const;
  void make_windows();
  void enter_window(int64_t w);
  ShardCache::Pin join_ahead();
  int64_t next_use(const std::string& shard) const;
  int64_t span_bytes(int64_t first, int64_t n) const;
  int64_t in_order_need() const;

  TokenLoaderOptions opts_;
  std::unique_ptr<Source> source_;
  std::unique_ptr<ShardCache> cache_;
  std::unique_ptr<TokenStream> stream_;
  TokenWindows windows_{0, 1, {}};
  int64_t step_ = 0;  // next global step of the epoch
  bool started_ = false;
  std::vector<int64_t> row_starts_;  // scratch: the first tokens of the batch's windows

  // Shard windows (window_shards_ > 0).
  int64_t window_shards_ = 0;
  std::vector<int64_t> shard_tokens_, shard_bytes_desc_;
  std::unordered_map<std::string, int32_t> shard_index_;
  std::vector<int64_t> window_of_shard_;  // this epoch's; only changed with no look-ahead running
  std::atomic<int64_t> current_window_{-1};
  std::future<ShardCache::Pin> ahead_;  // the next shard window's first shard, staging
  int32_t ahead_shard_ = -1;
  // Unshuffled (evaluation) and larger than the cache: stream order, only the
  // shards of the batch being read mapped and pinned.
  bool in_order_ = false;

  // Metrics baselines at the start of the epoch.
  double wait_s_ = 0;
  int64_t batches_ = 0;
  StagingCounters base_;
  int64_t base_staged_ = 0;
};

}  // namespace strata::data
