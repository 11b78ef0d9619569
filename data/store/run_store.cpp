#include "data/store/run_store.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "base/error.h"
#include "data/store/payload_hash.h"
#include "data/store/s3_source.h"

namespace strata::data {
namespace fs = std::filesystem;

namespace {

constexpr const char* kCommitSuffix = ".commit";

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// A checkpoint file's name as the trainer writes it: step-<digits>.h5.
bool is_checkpoint_name(const std::string& name) {
  return name.rfind("step-", 0) == 0 && ends_with(name, ".h5") && name.find('/') == std::string::npos;
}

std::pair<int64_t, int64_t> size_and_mtime(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return {-1, -1};
  return {static_cast<int64_t>(st.st_size),
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

}  // namespace

std::string CheckpointCommit::to_json() const {
  nlohmann::json j = {{"checkpoint", name}, {"bytes", bytes}, {"sha256", sha256}, {"step", step}};
  j["metric"] = metric ? nlohmann::json(*metric) : nlohmann::json(nullptr);
  return j.dump() + "\n";
}

CheckpointCommit CheckpointCommit::from_json(const std::string& text, const std::string& what) {
  try {
    const auto j = nlohmann::json::parse(text);
    CheckpointCommit c;
    c.name = j.at("checkpoint").get<std::string>();
    c.bytes = j.at("bytes").get<int64_t>();
    c.sha256 = j.at("sha256").get<std::string>();
    c.step = j.at("step").get<int64_t>();
    if (j.contains("metric") && !j["metric"].is_null()) c.metric = j["metric"].get<double>();
    if (!is_checkpoint_name(c.name) || c.bytes < 0 || c.sha256.size() != 64)
      throw IoError("it names no checkpoint of this run (step-N.h5, a size and a SHA-256)");
    return c;
  } catch (const nlohmann::json::exception& e) {
    throw IoError(what + " is not a commit record: " + e.what());
  } catch (const IoError& e) {
    throw IoError(what + ": " + e.what());
  }
}

RunStore::RunStore(std::unique_ptr<Source> store, fs::path staging, StoreRotation rotation, Log log)
    : store_(std::move(store)),
      staging_(std::move(staging)),
      rotation_(std::move(rotation)),
      log_(std::move(log)) {
  if (!log_) log_ = [](const std::string&) {};
}

std::vector<CheckpointCommit> RunStore::commits() {
  std::vector<CheckpointCommit> out;
  for (const ObjectInfo& o : store_->list("checkpoints/")) {
    if (!ends_with(o.key, kCommitSuffix)) continue;
    const auto bytes = store_->get(o.key);
    try {
      CheckpointCommit c =
          CheckpointCommit::from_json(std::string(bytes.begin(), bytes.end()), url() + o.key);
      if ("checkpoints/" + c.name + kCommitSuffix != o.key)
        throw IoError(url() + o.key + " commits " + c.name + ", not the checkpoint of its own name");
      out.push_back(std::move(c));
    } catch (const IoError& e) {
      log_(std::string("run store: ignored ") + e.what());
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
  return out;
}

std::pair<int, int> RunStore::clean_up_after_a_crash() {
  int aborted = 0;
  if (auto* s3 = dynamic_cast<S3Source*>(store_.get()))
    for (const OpenUpload& u : s3->open_uploads("")) {
      s3->abort_upload(u);
      log_("run store: aborted the upload of " + url() + u.key + " left open since " + u.initiated);
      ++aborted;
    }
  std::set<std::string> committed;
  std::vector<std::string> orphans;
  const auto listed = store_->list("checkpoints/");
  for (const ObjectInfo& o : listed)
    if (ends_with(o.key, kCommitSuffix)) committed.insert(o.key.substr(0, o.key.size() - 7));
  for (const ObjectInfo& o : listed)
    if (is_checkpoint_name(o.key.substr(12)) && !committed.count(o.key)) orphans.push_back(o.key);
  for (const std::string& k : orphans)
    log_("run store: deleted " + url() + k + ": uploaded but never committed (its writer was stopped)");
  store_->remove(orphans);
  return {aborted, static_cast<int>(orphans.size())};
}

RunStore::Published RunStore::publish(const fs::path& file, int64_t step, std::optional<double> metric) {
  CheckpointCommit c;
  c.name = file.filename().string();
  if (!is_checkpoint_name(c.name))
    throw IoError("run store: '" + file.string() + "' is not a step-N.h5 checkpoint");
  std::error_code ec;
  c.bytes = static_cast<int64_t>(fs::file_size(file, ec));
  if (ec) throw IoError("run store: cannot read " + file.string() + ": " + ec.message());
  c.sha256 = sha256_hex_of_file(file);
  c.step = step;
  c.metric = metric;
  const std::string key = "checkpoints/" + c.name, record = c.to_json();
  const auto t0 = std::chrono::steady_clock::now();
  store_->put_file(key, file);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();      // 1. the object
  store_->put(key + kCommitSuffix, std::vector<uint8_t>(record.begin(), record.end()));  // 2. its commit
  store_->put("checkpoints/latest.json", std::vector<uint8_t>(record.begin(), record.end()));
  rotate(c.name);  // 3. only now may older ones go
  char rate[160];
  std::snprintf(rate, sizeof rate, "run store: committed %s (%.1f MB uploaded in %.2f s, %.0f MB/s)",
                c.name.c_str(), c.bytes / 1e6, seconds, seconds > 0 ? c.bytes / 1e6 / seconds : 0.0);
  log_(rate);
  return {c, seconds};
}

void RunStore::rotate(const std::string& just_committed) {
  const auto all = commits();
  std::set<std::string> keep = {just_committed};
  if (rotation_.keep_last <= 0) return;
  for (size_t i = all.size() > static_cast<size_t>(rotation_.keep_last) ? all.size() - rotation_.keep_last
                                                                        : 0;
       i < all.size(); ++i)
    keep.insert(all[i].name);
  if (rotation_.keep_best) {
    const CheckpointCommit* best = nullptr;
    for (const auto& c : all)
      if (c.metric &&
          (!best || (rotation_.mode == "max" ? *c.metric > *best->metric : *c.metric < *best->metric)))
        best = &c;
    if (best) keep.insert(best->name);
  }
  std::vector<std::string> records, objects;
  for (const auto& c : all)
    if (!keep.count(c.name)) {
      records.push_back("checkpoints/" + c.name + kCommitSuffix);
      objects.push_back("checkpoints/" + c.name);
    }
  store_->remove(records);  // uncommitted first: a resume never reaches for a deleted object
  store_->remove(objects);
}

std::optional<fs::path> RunStore::fetch_latest() {
  const auto all = commits();
  const fs::path dir = staging_ / "checkpoints";
  fs::create_directories(dir);
  std::optional<fs::path> chosen;
  for (auto it = all.rbegin(); it != all.rend() && !chosen; ++it) {
    const fs::path local = dir / it->name;
    const std::string where = url() + "checkpoints/" + it->name;
    auto verified = [&](const fs::path& p) -> std::string {  // "" when whole, else why not
      std::error_code ec;
      const auto size = static_cast<int64_t>(fs::file_size(p, ec));
      if (ec) return ec.message();
      if (size != it->bytes)
        return std::to_string(size) + " bytes where its commit record says " + std::to_string(it->bytes);
      if (sha256_hex_of_file(p) != it->sha256) return "its SHA-256 differs from its commit record's";
      return "";
    };
    if (fs::exists(local) && verified(local).empty()) {
      chosen = local;
      break;
    }
    const fs::path tmp = dir / (it->name + ".download");
    std::string why;
    try {
      store_->get_to_file("checkpoints/" + it->name, tmp);
      why = verified(tmp);
    } catch (const Error& e) {
      why = e.what();
    }
    if (why.empty()) {
      fs::rename(tmp, local);
      log_("run store: fetched " + where + " (" + std::to_string(it->bytes) + " bytes, SHA-256 verified)");
      chosen = local;
    } else {
      fs::remove(tmp);
      log_("run store: skipped " + where + " (step " + std::to_string(it->step) + "): " + why);
    }
  }
  // The store is the run: a local checkpoint it does not commit was never published.
  std::set<std::string> committed;
  for (const auto& c : all) committed.insert(c.name);
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (is_checkpoint_name(n) && !committed.count(n)) {
      log_("run store: deleted the local " + e.path().string() + ": the store never committed it");
      fs::remove(e.path());
    }
  }
  return chosen;
}

int RunStore::fetch_logs(const std::vector<std::string>& names) {
  int fetched = 0;
  for (const std::string& name : names) {
    const fs::path local = staging_ / name;
    if (fs::exists(local)) continue;  // this node's copy is the newer one
    bool stored = false;
    for (const ObjectInfo& o : store_->list(name)) stored = stored || o.key == name;
    if (!stored) continue;
    fs::create_directories(local.parent_path());
    const fs::path tmp = staging_ / (name + ".download");
    store_->get_to_file(name, tmp);
    fs::rename(tmp, local);
    std::lock_guard<std::mutex> lock(sync_mu_);
    synced_[name] = size_and_mtime(local);  // the store has these bytes already
    log_("run store: fetched " + url() + name + " (" + std::to_string(fs::file_size(local)) +
         " bytes): this process appends to it");
    ++fetched;
  }
  return fetched;
}

void RunStore::start_periodic_sync(double seconds) {
  syncer_ = std::thread([this, seconds] {
    std::unique_lock<std::mutex> lock(stop_mu_);
    while (!stop_cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return stop_; })) {
      lock.unlock();
      try {
        sync();
      } catch (const std::exception& e) {
        log_(std::string("run store: this sync failed, the next one tries again: ") + e.what());
      }
      lock.lock();
    }
  });
}

void RunStore::finish(const std::vector<std::string>& last) {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (syncer_.joinable()) syncer_.join();
  sync(last);
}

RunStore::~RunStore() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (syncer_.joinable()) syncer_.join();
}

void RunStore::sync(const std::vector<std::string>& last) {
  std::lock_guard<std::mutex> lock(sync_mu_);
  std::vector<fs::path> files, lasts;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(staging_, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path rel = fs::relative(it->path(), staging_);
    if (it->is_directory() && rel == "checkpoints") {
      it.disable_recursion_pending();
      continue;
    }
    const std::string name = it->path().filename().string();
    if (!it->is_regular_file() || name == ".lock" || name.find(".tmp") != std::string::npos) continue;
    (std::find(last.begin(), last.end(), rel.generic_string()) != last.end() ? lasts : files).push_back(rel);
  }
  if (ec) throw IoError("run store: cannot list " + staging_.string() + ": " + ec.message());
  files.insert(files.end(), lasts.begin(), lasts.end());
  for (const fs::path& rel : files) {
    const auto now = size_and_mtime(staging_ / rel);
    auto& seen = synced_[rel.generic_string()];
    if (now == seen || now.first < 0) continue;
    store_->put_file(rel.generic_string(), staging_ / rel);
    seen = now;
  }
}

}  // namespace strata::data
