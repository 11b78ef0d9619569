// CheckpointRotation: names checkpoints by step in one directory, keeps the last
// `keep_last` of them (0: all) plus the best by /trainer/metric (mode min or
// max), and deletes the rest. It only ever deletes checkpoints it could read,
// named like its own (<prefix>-<step>.h5); a file it cannot read is never
// deleted, and a save of its step renames it aside first. scan_checkpoints and
// find_latest_checkpoint serve `resume: auto`.
#pragma once
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "train/checkpoint/checkpoint.h"

namespace strata {

struct RotationOptions {
  int64_t keep_last = 3;     // >= 0; 0 keeps every checkpoint
  bool keep_best = true;     // also keep the best by /trainer/metric
  std::string mode = "min";  // "min" or "max"
  std::string prefix = "ckpt";
  // Files never adopted though they open (resume could not load them), so
  // never deleted: a save of their step renames them aside like unreadable ones.
  std::vector<std::filesystem::path> not_adopted = {};
  // Told when a file is renamed aside (the trainer's log); unset: said nowhere.
  std::function<void(const std::string&)> notify = nullptr;
};

class CheckpointRotation {
 public:
  // Creates `dir` if needed and adopts the valid checkpoints already in it.
  CheckpointRotation(std::filesystem::path dir, RotationOptions opt = {});

  // Saves `ck` (its /trainer/step names the file) and prunes; returns the path.
  std::filesystem::path save(const Checkpoint& ck);
  std::filesystem::path path_for(int64_t step) const;

  // Deletes what the policy no longer keeps, never `keep` (save() passes the
  // checkpoint it just wrote: newer ones already there must not rotate it away,
  // as a run that publishes each save reads it back).
  void prune(const std::filesystem::path& keep = {});
  const std::vector<CheckpointInfo>& entries() const { return entries_; }  // by step
  std::optional<CheckpointInfo> best() const;
  std::optional<CheckpointInfo> latest() const;

 private:
  void add(CheckpointInfo info);
  bool better(double a, double b) const;
  // A file at `path` that is not an adopted checkpoint is renamed to
  // "<name>.unreadable" (or ".unreadable.N"), which no scan takes for a checkpoint.
  void move_aside_unadopted(const std::filesystem::path& path);

  std::filesystem::path dir_;
  RotationOptions opt_;
  std::vector<CheckpointInfo> entries_;
};

// A *.h5 file in a checkpoint directory that could not be read, and why.
struct UnreadableCheckpoint {
  std::filesystem::path path;
  std::string reason;  // e.g. "cannot open as HDF5: truncated: 4096 bytes of the 9216 ..."
};

// The *.h5 files in `dir` (temporaries, *.tmp.*, aside): those that open as
// checkpoints, by /trainer/step (ties: by file name), and those that do not,
// by file name. Both empty when `dir` does not exist.
struct CheckpointScan {
  std::vector<CheckpointInfo> readable;
  std::vector<UnreadableCheckpoint> unreadable;
};
CheckpointScan scan_checkpoints(const std::filesystem::path& dir);

// The valid checkpoint with the highest /trainer/step among the *.h5 files in
// `dir` (ties: the later file name), ignoring temporary files (*.tmp.*) and
// files that fail to open. nullopt when there is none or `dir` does not exist.
std::optional<std::filesystem::path> find_latest_checkpoint(const std::filesystem::path& dir);

// A checkpoint IoError's message without its "checkpoint '<path>': " prefix.
std::string checkpoint_error_reason(const std::filesystem::path& path, const std::string& what);

}  // namespace strata
