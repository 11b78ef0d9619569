// A run directory kept in an object store (strata-train --run-dir s3://B/P).
// The run writes into a node-local staging directory as it would into a local
// run directory; RunStore makes the store hold the run:
// - checkpoints: publish() uploads checkpoints/NAME (multipart beyond the part
//   size), then the commit record checkpoints/NAME.commit (the name, size, SHA-256
//   and step, as JSON), then checkpoints/latest.json (a copy of that record); a
//   checkpoint exists for a resume only once its commit record does, so an
//   upload killed midway is never picked up. Rotation follows in the store
//   (commit records deleted first, then the objects, in batches) and never
//   deletes the checkpoint just committed.
// - resume: fetch_latest() walks the commit records newest first, downloads the
//   checkpoint into staging/checkpoints (ranged parallel GETs), checks its size
//   and SHA-256 and keeps the first that verifies, saying which it skipped and why.
// - every other file of the staging directory (train.log, metrics.jsonl,
//   TensorBoard events, resolved.yaml, run.json, plots): sync() uploads the ones
//   whose size or modification time changed since their last upload, one PUT
//   per file, and uploads the files named `last` after the others (summary.json).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "data/store/source.h"

namespace strata::data {

// What the store keeps of the checkpoints: the newest keep_last (0: all) and,
// with keep_best, the best by metric ("min" or "max").
struct StoreRotation {
  int64_t keep_last = 3;
  bool keep_best = true;
  std::string mode = "min";
};

// One commit record: the checkpoint it commits and how to verify it.
struct CheckpointCommit {
  std::string name;  // e.g. step-00000120.h5, under checkpoints/
  int64_t bytes = 0;
  std::string sha256;
  int64_t step = 0;
  std::optional<double> metric;
  std::string to_json() const;
  static CheckpointCommit from_json(const std::string& text, const std::string& what);
};

class RunStore {
 public:
  using Log = std::function<void(const std::string&)>;
  // `store` is opened at the run's URL; `staging` is the local run directory.
  RunStore(std::unique_ptr<Source> store, std::filesystem::path staging, StoreRotation rotation, Log log);

  const std::filesystem::path& staging() const { return staging_; }
  std::string url() const { return store_->url(); }

  // Aborts the multipart uploads a killed process left open under the run,
  // and deletes checkpoint objects that have no commit record (uploads that
  // completed just before a kill). Returns how many of each it removed.
  std::pair<int, int> clean_up_after_a_crash();

  // Uploads `file` (a checkpoint in staging/checkpoints) and commits it;
  // applies the rotation. Returns the commit record and the upload's seconds
  // (the object's upload alone: the commit record and rotation are not in it).
  struct Published {
    CheckpointCommit commit;
    double upload_seconds = 0;
  };
  Published publish(const std::filesystem::path& file, int64_t step, std::optional<double> metric);

  // The newest committed checkpoint that verifies, downloaded into
  // staging/checkpoints (kept when already there and verified); every other
  // step-*.h5 there that the store has not committed is deleted (the store is
  // the run: a local file it lacks is from a process killed before its upload
  // committed). nullopt when the store commits none.
  std::optional<std::filesystem::path> fetch_latest();

  // The run's logs named in `names` (train.log, metrics.jsonl: files a run
  // appends to) downloaded into staging where staging lacks them, so that a
  // process on a fresh node appends to the run's logs, as a local run directory
  // does, instead of replacing them at its first sync. Returns how many it fetched.
  int fetch_logs(const std::vector<std::string>& names);

  // Uploads the changed files of the staging directory (not checkpoints/),
  // those named in `last` after all others. Thread-safe.
  void sync(const std::vector<std::string>& last = {});

  // sync() every `seconds` on a background thread until finish(); a sync that
  // fails is reported through the log and tried again at the next interval.
  void start_periodic_sync(double seconds);
  // Stops that thread, then sync(last) (throws when it fails).
  void finish(const std::vector<std::string>& last);
  ~RunStore();

  // Bytes sent to and received from the store so far.
  int64_t bytes_transferred() const { return store_->stats().bytes; }

 private:
  std::vector<CheckpointCommit> commits();  // by step, oldest first
  void rotate(const std::string& just_committed);

  std::unique_ptr<Source> store_;
  std::filesystem::path staging_;
  StoreRotation rotation_;
  Log log_;
  std::mutex sync_mu_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread syncer_;
  std::map<std::string, std::pair<int64_t, int64_t>> synced_;  // file -> (size, mtime ns) last uploaded
};

}  // namespace strata::data
