#include "core/checkpoint_rotation.h"

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
  if (opt_.keep_last < 1)
    throw ConfigError("checkpoint rotation: keep_last must be >= 1, got " + std::to_string(opt_.keep_last));
  if (opt_.mode != "min" && opt_.mode != "max")
    throw ConfigError("checkpoint rotation: mode must be 'min' or 'max', got '" + opt_.mode + "'");
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec)
    throw IoError("checkpoint rotation: cannot create directory '" + dir_.string() + "': " + ec.message());
  const std::regex own(opt_.prefix + R"(-(\d+)\.h5)");
  for (auto& e : fs::directory_iterator(dir_, ec)) {
    std::string name = e.path().filename().string();
    if (!e.is_regular_file() || is_temp(e.path()) || !std::regex_match(name, own)) continue;
    try {
      add(read_checkpoint_info(e.path()));
    } catch (const IoError&) {
      // Not a valid checkpoint: neither adopted nor deleted.
    }
  }
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
  save_checkpoint(ck, info.path);
  fault_point("checkpoint.before_rotation", info.path.string());
  add(info);
  prune();
  return info.path;
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

void CheckpointRotation::prune() {
  auto b = opt_.keep_best ? best() : std::nullopt;
  const size_t n = entries_.size();
  const size_t keep_from =
      n > static_cast<size_t>(opt_.keep_last) ? n - static_cast<size_t>(opt_.keep_last) : 0;
  std::vector<CheckpointInfo> kept;
  for (size_t i = 0; i < n; ++i) {
    const auto& e = entries_[i];
    if (i >= keep_from || (b && e.path == b->path)) {
      kept.push_back(e);
      continue;
    }
    std::error_code ec;
    fs::remove(e.path, ec);
    if (ec) throw IoError("checkpoint rotation: cannot delete '" + e.path.string() + "': " + ec.message());
  }
  entries_ = std::move(kept);
}

std::optional<fs::path> find_latest_checkpoint(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  std::optional<CheckpointInfo> latest;
  for (auto& e : fs::directory_iterator(dir, ec)) {
    const fs::path& p = e.path();
    if (!e.is_regular_file() || is_temp(p) || p.extension() != ".h5") continue;
    try {
      CheckpointInfo info = read_checkpoint_info(p);
      if (!latest || info.step > latest->step ||
          (info.step == latest->step && p.filename() > latest->path.filename()))
        latest = std::move(info);
    } catch (const IoError&) {
      // A truncated or foreign file is not a resume candidate.
    }
  }
  if (!latest) return std::nullopt;
  return latest->path;
}

}  // namespace strata
