#include "train/checkpoint/checkpoint_rotation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <regex>

#include "base/error.h"
#include "base/fault_point.h"

namespace strata {
namespace fs = std::filesystem;

namespace {
bool is_temp(const fs::path& p) { return p.filename().string().find(".tmp.") != std::string::npos; }
}  // namespace

CheckpointRotation::CheckpointRotation(fs::path dir, RotationOptions opt)
    : dir_(std::move(dir)), opt_(std::move(opt)) {
  if (opt_.keep_last < 0)
    throw ConfigError("checkpoint rotation: keep_last must be >= 0 (0 keeps all), got " +
                      std::to_string(opt_.keep_last));
  if (opt_.mode != "min" && opt_.mode != "max")
    throw ConfigError("checkpoint rotation: mode must be 'min' or 'max', got '" + opt_.mode + "'");
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec)
    throw IoError("checkpoint rotation: cannot create directory '" + dir_.string() + "': " + ec.message());
  // Only checkpoints it can read and named like its own are adopted, so only
  // those are ever deleted.
  const std::regex own(opt_.prefix + R"(-(\d+)\.h5)");
  for (CheckpointInfo& info : scan_checkpoints(dir_).readable)
    if (std::regex_match(info.path.filename().string(), own) &&
        std::find(opt_.not_adopted.begin(), opt_.not_adopted.end(), info.path) == opt_.not_adopted.end())
      add(std::move(info));
}

fs::path CheckpointRotation::path_for(int64_t step) const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "-%09lld.h5", static_cast<long long>(step));
  return dir_ / (opt_.prefix + buf);
}

void CheckpointRotation::add(CheckpointInfo info) {
  std::erase_if(entries_, [&](const CheckpointInfo& e) { return e.path == info.path; });
  entries_.push_back(std::move(info));
  std::stable_sort(entries_.begin(), entries_.end(),
                   [](const CheckpointInfo& a, const CheckpointInfo& b) { return a.step < b.step; });
}

fs::path CheckpointRotation::save(const Checkpoint& ck) {
  CheckpointInfo info;
  info.step = ck.int_value(ckpt_key::step);
  if (auto it = ck.scalars.find(ckpt_key::metric); it != ck.scalars.end() && std::isfinite(it->second))
    info.metric = it->second;
  info.path = path_for(info.step);
  move_aside_unadopted(info.path);
  save_checkpoint(ck, info.path);
  fault_point("checkpoint.before_rotation", info.path.string());
  add(info);
  prune(info.path);  // a save into a directory of newer checkpoints keeps what it saved
  return info.path;
}

void CheckpointRotation::move_aside_unadopted(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return;
  for (auto& e : entries_)
    if (e.path == path) return;  // its own checkpoint of this step: saved over, as a resumed run does
  std::string reason = "not a checkpoint this run adopted";
  try {
    read_checkpoint_info(path);
    if (std::find(opt_.not_adopted.begin(), opt_.not_adopted.end(), path) != opt_.not_adopted.end())
      reason = "resume could not load it";
  } catch (const IoError& e) {
    reason = "it cannot be read: " + checkpoint_error_reason(path, e.what());
  }
  fs::path aside = path;
  aside += ".unreadable";
  for (int n = 1; fs::exists(aside, ec); ++n) {
    aside = path;
    aside += ".unreadable." + std::to_string(n);
  }
  fs::rename(path, aside, ec);
  if (ec)
    throw IoError("checkpoint rotation: cannot rename '" + path.string() + "' aside to '" + aside.string() +
                  "' before saving over its name: " + ec.message());
  if (opt_.notify)
    opt_.notify("checkpoint: renamed " + path.string() + " to " + aside.filename().string() + " (" + reason +
                ") to save a new checkpoint under its name");
}

bool CheckpointRotation::better(double a, double b) const { return opt_.mode == "min" ? a < b : a > b; }

std::optional<CheckpointInfo> CheckpointRotation::best() const {
  std::optional<CheckpointInfo> b;
  for (auto& e : entries_)
    if (e.metric && (!b || better(*e.metric, *b->metric))) b = e;  // ties: the earlier one
  return b;
}

std::optional<CheckpointInfo> CheckpointRotation::latest() const {
  if (entries_.empty()) return std::nullopt;
  return entries_.back();
}

void CheckpointRotation::prune(const fs::path& keep) {
  if (opt_.keep_last == 0) return;  // keeps every checkpoint
  auto b = opt_.keep_best ? best() : std::nullopt;
  const size_t n = entries_.size();
  const size_t keep_from =
      n > static_cast<size_t>(opt_.keep_last) ? n - static_cast<size_t>(opt_.keep_last) : 0;
  std::vector<CheckpointInfo> kept;
  for (size_t i = 0; i < n; ++i) {
    const auto& e = entries_[i];
    if (i >= keep_from || (b && e.path == b->path) || e.path == keep) {
      kept.push_back(e);
      continue;
    }
    std::error_code ec;
    fs::remove(e.path, ec);
    if (ec) throw IoError("checkpoint rotation: cannot delete '" + e.path.string() + "': " + ec.message());
  }
  entries_ = std::move(kept);
}

CheckpointScan scan_checkpoints(const fs::path& dir) {
  CheckpointScan scan;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return scan;
  for (auto& e : fs::directory_iterator(dir, ec)) {
    const fs::path& p = e.path();
    if (!e.is_regular_file() || is_temp(p) || p.extension() != ".h5") continue;
    try {
      scan.readable.push_back(read_checkpoint_info(p));
    } catch (const IoError& err) {
      scan.unreadable.push_back({p, checkpoint_error_reason(p, err.what())});
    }
  }
  std::sort(scan.readable.begin(), scan.readable.end(), [](const CheckpointInfo& a, const CheckpointInfo& b) {
    return a.step != b.step ? a.step < b.step : a.path.filename() < b.path.filename();
  });
  std::sort(scan.unreadable.begin(), scan.unreadable.end(),
            [](const UnreadableCheckpoint& a, const UnreadableCheckpoint& b) { return a.path < b.path; });
  return scan;
}

std::optional<fs::path> find_latest_checkpoint(const fs::path& dir) {
  CheckpointScan scan = scan_checkpoints(dir);
  if (scan.readable.empty()) return std::nullopt;
  return scan.readable.back().path;
}

std::string checkpoint_error_reason(const fs::path& path, const std::string& what) {
  const std::string prefix = "checkpoint '" + path.string() + "': ";
  return what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what;
}

}  // namespace strata
