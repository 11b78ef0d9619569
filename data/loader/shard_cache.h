// ShardCache: node-local staging of whole shards from a Source, shared by every
// process of a job on the node through the cache directory alone.
//
// Layout of <dir>:
//   manifest.json            the dataset manifest, fetched once per node
//   shards/<name>            verified shards (only ever created by rename)
//   .tmp/<name>.tmp.<host>.<pid>.<n>  downloads in progress (pid: who downloads)
//   .reserve/<name>.tmp.<host>.<pid>.<n> sparse files whose size is bytes reserved for a download
//   .locks/<name>.lock       per shard: SH = in use (pinned), EX = evicting/re-verifying
//   .locks/<name>.download   per shard: EX while one process downloads it
//   .locks/cache.lock        accounting + eviction (usage = shards/ + .reserve/)
//   .locks/users.lock        SH while a ShardCache is open on the directory
//   .locks/maintenance.lock  serialises start-of-job and end-of-job work
// Temp/reserve files of dead pids are removed by every accounting scan, so
// processes still using the cache clean up after a killed one. The first
// process of a job (users.lock free) removes them too, refreshes the manifest,
// and under `persistent` re-verifies cached shards; the last one out under
// `job` empties the directory (and the first one of a `job` cache removes
// shards a crashed job left behind).
#pragma once
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <string>

#include "base/file_lock.h"
#include "data/format/data_key.h"
#include "data/format/manifest.h"
#include "data/store/source.h"

namespace strata::data {

enum class CacheLifetime { kJob, kPersistent };

struct ShardCacheOptions {
  std::filesystem::path dir;
  int64_t capacity_bytes = 0;  // shards/ + reservations never exceed this
  CacheLifetime lifetime = CacheLifetime::kJob;
  double full_wait_timeout_s = 600;  // how long to wait for other processes to unpin
  // A process waiting for another's download of a shard downloads it itself
  // once that download has made no progress (its temporary neither grew nor was
  // written) for this long: the holder is stopped (SIGSTOP, a suspended job) or
  // stuck, and its lock would otherwise hold every job on the node forever.
  double download_stall_timeout_s = 120;
  // Where such a take-over is reported (one line); empty: standard error.
  std::function<void(const std::string&)> warn = {};
  std::string manifest_key = "manifest.json";
  // The data key of an encrypted dataset (null for a plain one): staged shards
  // are decrypted in the cache, so the cache holds plaintext (docs/loader.md).
  std::shared_ptr<const DataKey> key;
};

struct CacheStats {
  std::atomic<int64_t> hits{0};    // acquire() found the shard already cached
  std::atomic<int64_t> misses{0};  // acquire() downloaded it
  std::atomic<int64_t> evictions{0};
  std::atomic<int64_t> refetches{0};  // downloads repeated after a checksum mismatch
  std::atomic<int64_t> manifest_fetches{0};
  std::atomic<int64_t> stalled_takeovers{0};  // downloads done beside a stalled holder's
};

class ShardCache {
 public:
  // Creates the directory, joins the job's users and loads the manifest.
  ShardCache(Source& source, ShardCacheOptions options);
  ~ShardCache();
  ShardCache(const ShardCache&) = delete;
  ShardCache& operator=(const ShardCache&) = delete;

  const Manifest& manifest() const { return manifest_; }
  const ShardCacheOptions& options() const { return opts_; }

  // A cached shard held in use: it cannot be evicted while the Pin lives.
  class Pin {
   public:
    Pin() = default;
    const std::filesystem::path& path() const { return path_; }
    bool valid() const { return lock_.valid(); }

   private:
    friend class ShardCache;
    std::filesystem::path path_;
    FileLock lock_;
  };

  // Blocks until shard `shard` (a manifest entry) is in the cache, downloading it
  // (once per node) if needed; returns it pinned.
  Pin acquire(const ShardInfo& shard);

  // Eviction order: larger = used later. Called under the cache lock with the
  // shard's name; shards the function does not know should return max().
  using NextUse = std::function<int64_t(const std::string& shard)>;
  void set_next_use(NextUse fn);
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

  // Bytes counted against the capacity right now (cached shards + reservations).
  int64_t usage_bytes();
  CacheStats& stats() { return stats_; }
  std::filesystem::path shard_path(const std::string& name) const;

 private:
  std::filesystem::path lock_path(const std::string& name) const;
  void start_of_job(bool first);
  void load_manifest(bool refresh);
  void remove_dead_temps();
  void verify_cached();
  void empty_directory();
  int64_t scan_usage();
  std::filesystem::path reserve(const ShardInfo& shard);
  void download_verified(const ShardInfo& shard);
  // Decodes the verified frame of a compressed dataset's shard into `out` and
  // checks its size and checksum; IoError naming the shard and the dataset.
  void decompress_staged(const ShardInfo& shard, const std::vector<uint8_t>& frame,
                         const std::filesystem::path& out);
  // kLocked: this process holds the download lock; kCached: the holder's download
  // landed; kStalled: the holder's download made no progress, fetch beside it.
  enum class Waited { kCached, kLocked, kStalled };
  Waited wait_for_download(FileLock& download, const ShardInfo& shard, const std::function<bool()>& cached);
  size_t index_of(const ShardInfo& shard) const;

  Source& source_;
  ShardCacheOptions opts_;
  Manifest manifest_;
  FileLock users_;
  NextUse next_use_;
  CacheStats stats_;
};

// Shard names may contain '/'; the cache stores them flat ('/' -> "%2F", '%' -> "%25").
std::string escape_shard_name(const std::string& name);
std::string unescape_shard_name(const std::string& name);

}  // namespace strata::data
