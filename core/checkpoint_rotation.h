// CheckpointRotation: names checkpoints by step in one directory, keeps the last
// `keep_last` of them plus the best by /trainer/metric (mode min or max), and
// deletes the rest. It only ever deletes files named like its own
// (<prefix>-<step>.h5). find_latest_checkpoint serves `resume: auto`.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/checkpoint.h"

namespace strata {

struct RotationOptions {
  int64_t keep_last = 3;     // >= 1
  bool keep_best = true;     // also keep the best by /trainer/metric
  std::string mode = "min";  // "min" or "max"
  std::string prefix = "ckpt";
};

class CheckpointRotation {
 public:
  // Creates `dir` if needed and adopts the valid checkpoints already in it.
  CheckpointRotation(std::filesystem::path dir, RotationOptions opt = {});

  // Saves `ck` (its /trainer/step names the file) and prunes; returns the path.
  std::filesystem::path save(const Checkpoint& ck);
  std::filesystem::path path_for(int64_t step) const;

  // Deletes what the policy no longer keeps.
  void prune();
  const std::vector<CheckpointInfo>& entries() const { return entries_; }  // by step
  std::optional<CheckpointInfo> best() const;
  std::optional<CheckpointInfo> latest() const;

 private:
  void add(CheckpointInfo info);
  bool better(double a, double b) const;

  std::filesystem::path dir_;
  RotationOptions opt_;
  std::vector<CheckpointInfo> entries_;
};

// The valid checkpoint with the highest /trainer/step among the *.h5 files in
// `dir` (ties: the later file name), ignoring temporary files (*.tmp.*) and
// files that fail to open. nullopt when there is none or `dir` does not exist.
std::optional<std::filesystem::path> find_latest_checkpoint(const std::filesystem::path& dir);

}  // namespace strata
