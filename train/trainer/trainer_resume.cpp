// Trainer: checkpoint.resume. "" starts fresh; a path resumes from that file;
// auto resumes from the newest checkpoint in <run-dir>/checkpoints that loads,
// naming each one it skips and why. When there are checkpoints and none of them
// loads, auto stops the run: starting fresh would save new checkpoints over
// their names and rotate away the run the user meant to continue.
#include <filesystem>

#include "base/error.h"
#include "train/checkpoint/checkpoint_rotation.h"
#include "train/trainer/trainer.h"
#include "train/trainer/trainer_progress.h"

namespace strata {
namespace fs = std::filesystem;

void Trainer::check_resume_path() const {
  const std::string& r = cfg_.checkpoint.resume;
  if (r.empty() || r == "auto") return;
  std::error_code ec;
  if (!fs::is_regular_file(r, ec))
    throw ConfigError("checkpoint.resume: no checkpoint file at '" + r + "'" +
                      (fs::is_directory(r, ec) ? " (a directory: name a step-*.h5 file, or use auto)" : ""));
}

void Trainer::maybe_resume(BatchSource& train, Progress& p) {
  const std::string& r = cfg_.checkpoint.resume;
  if (r.empty()) return;
  auto resumed = [&](const fs::path& path) {
    log_->message("resumed from " + path.string() + " at step " + std::to_string(p.step) + ", epoch " +
                  std::to_string(p.epoch + 1));
  };
  if (r != "auto") {
    restore_checkpoint(load_checkpoint(r), train, p);
    resumed(r);
    return;
  }
  const fs::path dir = fs::path(run_dir_) / "checkpoints";
  CheckpointScan scan = scan_checkpoints(dir);
  std::vector<UnreadableCheckpoint> skipped;
  auto skip = [&](UnreadableCheckpoint u) {
    log_->message("resume: auto: skipped " + u.path.string() + ": " + u.reason);
    resume_skipped_.push_back(u.path);  // never adopted by the rotation, so never deleted
    skipped.push_back(std::move(u));
  };
  for (UnreadableCheckpoint& u : scan.unreadable) skip(std::move(u));
  // Newest first. A file that opens may still lack an entry the trainer needs
  // (IoError: another version's, or one written by hand); restore_checkpoint
  // looks every entry up before it sets anything, so the next one can be tried.
  for (auto it = scan.readable.rbegin(); it != scan.readable.rend(); ++it) {
    try {
      restore_checkpoint(load_checkpoint(it->path), train, p);
    } catch (const IoError& e) {
      skip({it->path, checkpoint_error_reason(it->path, e.what())});
      continue;
    }
    resumed(it->path);
    return;
  }
  if (skipped.empty()) {
    log_->message("resume: auto: no checkpoint in " + dir.string() + ", starting fresh");
    return;
  }
  std::string list;
  for (const UnreadableCheckpoint& u : skipped)
    list += (list.empty() ? "" : "; ") + u.path.string() + ": " + u.reason;
  throw IoError("resume: auto: no checkpoint in " + dir.string() +
                " can be read, so the run stops instead of starting fresh over them (nothing was changed "
                "there): " +
                list +
                ". To go on, set checkpoint.resume to a checkpoint file that loads, or "
                "checkpoint.resume=\"\" to start fresh (a file that cannot be read is then renamed aside "
                "when a save needs its name, never deleted)");
}

}  // namespace strata
