#include "data/loader/shard_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "base/atomic_file.h"
#include "base/error.h"
#include "data/format/manifest_auth.h"
#include "data/format/shard_codec.h"
#include "data/format/shard_crypt.h"

namespace strata::data {
namespace fs = std::filesystem;

std::string escape_shard_name(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (c == '/')
      out += "%2F";
    else if (c == '%')
      out += "%25";
    else
      out += c;
  }
  return out;
}

std::string unescape_shard_name(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '%' && i + 2 < name.size() + 0 && name.compare(i, 3, "%2F") == 0) {
      out += '/';
      i += 2;
    } else if (name[i] == '%' && name.compare(i, 3, "%25") == 0) {
      out += '%';
      i += 2;
    } else
      out += name[i];
  }
  return out;
}

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw IoError("cannot read " + p.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Staged files need no fsync: after a crash, the first process of the next job
// re-verifies every cached shard (or empties a job cache) and re-fetches the
// manifest, so a file torn by a power loss is never used.
AtomicWriteOptions staging(const fs::path& cache_dir) {
  return {.temp_dir = cache_dir / ".tmp", .sync = false};
}

// The manifest's `bytes` is what the cache reserves and counts against its
// capacity; a file of another size would make that accounting a lie.
// `file` says which copy was measured (the cached file, or the download).
// `expected` is the stored object's size for a download, the shard file's
// (plain_bytes) for a cached file: they differ for an encrypted dataset.
[[noreturn]] void wrong_size(const ShardInfo& shard, const Manifest& m, const std::string& file, int64_t size,
                             int64_t expected) {
  throw IoError("shard cache: shard " + shard.name + " (" + file + ") has " + std::to_string(size) +
                " bytes, its entry in manifest " + m.origin + " says " + std::to_string(expected));
}

int64_t size_of(const fs::path& p) {
  std::error_code ec;
  auto n = fs::file_size(p, ec);
  if (ec) throw IoError("shard cache: cannot stat " + p.string() + ": " + ec.message());
  return static_cast<int64_t>(n);
}

}  // namespace

ShardCache::ShardCache(Source& source, ShardCacheOptions options)
    : source_(source), opts_(std::move(options)) {
  if (opts_.dir.empty()) throw ConfigError("shard cache: cache directory is empty");
  if (opts_.capacity_bytes <= 0)
    throw ConfigError("shard cache: capacity must be > 0 bytes, got " + std::to_string(opts_.capacity_bytes));
  for (const char* sub : {"shards", ".tmp", ".reserve", ".locks"}) {
    std::error_code ec;
    fs::create_directories(opts_.dir / sub, ec);
    if (ec) throw IoError("shard cache: cannot create " + (opts_.dir / sub).string() + ": " + ec.message());
  }
  FileLock maintenance(opts_.dir / ".locks" / "maintenance.lock");
  maintenance.lock_exclusive();
  users_ = FileLock(opts_.dir / ".locks" / "users.lock");
  // Nobody else holds users.lock SH -> we are the first process of this job on the node.
  // Holding maintenance.lock, nobody can become "first" concurrently.
  bool first = users_.try_lock_exclusive();
  start_of_job(first);
  if (first) users_.unlock();
  users_.lock_shared();
}

ShardCache::~ShardCache() {
  try {
    FileLock maintenance(opts_.dir / ".locks" / "maintenance.lock");
    maintenance.lock_exclusive();
    users_.unlock();
    if (opts_.lifetime == CacheLifetime::kJob && users_.try_lock_exclusive()) empty_directory();
  } catch (...) {
    // A destructor must not throw; a cache left behind is recovered by the next start.
  }
}

fs::path ShardCache::shard_path(const std::string& name) const {
  return opts_.dir / "shards" / escape_shard_name(name);
}
fs::path ShardCache::lock_path(const std::string& name) const {
  return opts_.dir / ".locks" / (escape_shard_name(name) + ".lock");
}

void ShardCache::set_next_use(NextUse fn) { next_use_ = std::move(fn); }

void ShardCache::start_of_job(bool first) {
  if (first) remove_dead_temps();
  if (first && opts_.lifetime == CacheLifetime::kJob) {
    // Left behind by a job that crashed before its last process could empty it:
    // a job cache starts empty, never with shards nobody re-verified.
    std::error_code ec;
    for (auto& e : fs::directory_iterator(opts_.dir / "shards", ec)) fs::remove(e.path(), ec);
  }
  load_manifest(first);
  if (first && opts_.lifetime == CacheLifetime::kPersistent) verify_cached();
}

void ShardCache::load_manifest(bool refresh) {
  fs::path local = opts_.dir / "manifest.json";
  FileLock lock(opts_.dir / ".locks" / "manifest.lock");
  lock.lock_exclusive();
  if (refresh || !fs::exists(local)) {
    auto bytes = source_.get(opts_.manifest_key);
    stats_.manifest_fetches++;
    std::string text(bytes.begin(), bytes.end());
    manifest_ = Manifest::from_json(text, source_.url() + "/" + opts_.manifest_key);
    write_file_atomically(
        local,
        [&](const fs::path& tmp) {
          std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
          out.write(text.data(), static_cast<std::streamsize>(text.size()));
          out.close();
          if (!out) throw IoError("cannot write " + tmp.string());
        },
        {}, staging(opts_.dir));
  } else {
    manifest_ = Manifest::from_json(read_text(local), local.string());
  }
  check_dataset_key(manifest_, opts_.key.get());  // before any shard is staged or trusted
}

size_t ShardCache::index_of(const ShardInfo& shard) const {
  for (size_t i = 0; i < manifest_.shards.size(); ++i)
    if (manifest_.shards[i].name == shard.name) return i;
  throw IoError("shard cache: shard " + shard.name + " is not in manifest " + manifest_.origin);
}

void ShardCache::remove_dead_temps() {
  // Both directories hold only files named as temporaries (reservations too).
  for (const char* sub : {".tmp", ".reserve"})
    sweep_dead_temporaries(opts_.dir / sub, /*only_temporaries=*/true);
}

void ShardCache::verify_cached() {
  for (auto& e : fs::directory_iterator(opts_.dir / "shards")) {
    std::string name = unescape_shard_name(e.path().filename().string());
    const ShardInfo* info = nullptr;
    for (auto& s : manifest_.shards)
      if (s.name == name) info = &s;
    FileLock lock(lock_path(name));
    if (!lock.try_lock_exclusive()) continue;  // in use by a live process that verified it
    if (!info || checksum_file(e.path().string()) != info->staged_checksum()) {
      std::error_code ec;
      fs::remove(e.path(), ec);  // damaged or stale: fetched again when needed
    } else if (const int64_t size = size_of(e.path()); size != info->staged_bytes()) {
      // The right bytes, and a manifest that lies about how many there are.
      wrong_size(*info, manifest_, e.path().string(), size, info->staged_bytes());
    }
  }
}

void ShardCache::empty_directory() {
  std::error_code ec;
  for (const char* sub : {"shards", ".tmp", ".reserve"})
    for (auto& e : fs::directory_iterator(opts_.dir / sub, ec)) fs::remove(e.path(), ec);
  fs::remove(opts_.dir / "manifest.json", ec);
}

int64_t ShardCache::scan_usage() {
  // A download killed mid-way leaves its partial file in .tmp/. Only the first
  // process of a job swept those, so a cache that jobs keep using (never
  // without a user) kept every killed download's bytes, uncounted by the
  // capacity. Each scan (before every download) removes the dead ones.
  sweep_dead_temporaries(opts_.dir / ".tmp", /*only_temporaries=*/false);
  int64_t used = 0;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(opts_.dir / "shards", ec))
    used += static_cast<int64_t>(e.file_size(ec));
  for (auto& e : fs::directory_iterator(opts_.dir / ".reserve", ec)) {
    if (!temporary_writer_alive(e.path().filename().string())) {
      fs::remove(e.path(), ec);  // a crashed process's reservation frees its bytes
      continue;
    }
    used += static_cast<int64_t>(e.file_size(ec));
  }
  return used;
}

int64_t ShardCache::usage_bytes() {
  FileLock lock(opts_.dir / ".locks" / "cache.lock");
  lock.lock_exclusive();
  return scan_usage();
}

fs::path ShardCache::reserve(const ShardInfo& shard) {
  // The shard file as staged: a compressed object decodes to more bytes than it has.
  const int64_t need = std::max(shard.bytes, shard.staged_bytes());
  if (need > opts_.capacity_bytes)
    throw ConfigError("shard cache: shard " + shard.name + " (" + std::to_string(need) +
                      " bytes) is larger than the cache capacity (" + std::to_string(opts_.capacity_bytes) +
                      " bytes)");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(opts_.full_wait_timeout_s);
  FileLock cache_lock(opts_.dir / ".locks" / "cache.lock");
  for (;;) {
    cache_lock.lock_exclusive();
    int64_t used = scan_usage();
    if (used + need > opts_.capacity_bytes) {
      // Belady: drop the unpinned shard used farthest in the future first.
      std::vector<std::pair<int64_t, fs::path>> candidates;
      std::error_code ec;
      for (auto& e : fs::directory_iterator(opts_.dir / "shards", ec)) {
        std::string name = unescape_shard_name(e.path().filename().string());
        candidates.emplace_back(next_use_ ? next_use_(name) : kNever, e.path());
      }
      std::stable_sort(candidates.begin(), candidates.end(),
                       [](auto& a, auto& b) { return a.first > b.first; });
      for (auto& [use, path] : candidates) {
        if (used + need <= opts_.capacity_bytes) break;
        FileLock victim(lock_path(unescape_shard_name(path.filename().string())));
        if (!victim.try_lock_exclusive()) continue;  // pinned or being downloaded
        int64_t size = static_cast<int64_t>(fs::file_size(path, ec));
        if (ec || !fs::remove(path, ec)) continue;
        used -= size;
        stats_.evictions++;
      }
    }
    if (used + need <= opts_.capacity_bytes) {
      fs::path r = opts_.dir / ".reserve" / temporary_name(escape_shard_name(shard.name));
      int fd = ::open(r.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0 || ::ftruncate(fd, need) != 0) {
        if (fd >= 0) ::close(fd);
        throw IoError("shard cache: cannot create reservation " + r.string() + ": " + std::strerror(errno));
      }
      ::close(fd);
      return r;
    }
    cache_lock.unlock();
    if (std::chrono::steady_clock::now() > deadline)
      throw IoError("shard cache " + opts_.dir.string() + ": no room for shard " + shard.name + " (" +
                    std::to_string(need) + " bytes): " + std::to_string(used) + " of " +
                    std::to_string(opts_.capacity_bytes) + " bytes are pinned by running processes");
    // Every cached shard is pinned (by other processes of the job): wait for a release.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void ShardCache::download_verified(const ShardInfo& shard) {
  fs::path reservation = reserve(shard);
  struct Unreserve {
    fs::path p;
    ~Unreserve() {
      std::error_code ec;
      fs::remove(p, ec);
    }
  } unreserve{reservation};
  std::string got;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (attempt > 0) stats_.refetches++;
    AtomicFile staged(shard_path(shard.name), staging(opts_.dir));  // removed unless committed
    source_.get_to_file(shard.name, staged.temp_path());
    // A compressed object of the manifest's size moves into memory (its
    // temporary removed) and is checksummed and decoded there: read once, and
    // the disk never holds the frame and the decoded shard at once, so the
    // reservation (the larger of the two) covers all that this download puts on
    // disk; the price is the frame's bytes in memory while it decodes. Anything
    // else is checksummed as the file it is (a wrong size fails there).
    std::vector<uint8_t> frame;
    if (manifest_.object_compressed() && size_of(staged.temp_path()) == shard.bytes) {
      frame.resize(static_cast<size_t>(shard.bytes));
      std::ifstream in(staged.temp_path(), std::ios::binary);
      if (!in.read(reinterpret_cast<char*>(frame.data()), static_cast<std::streamsize>(frame.size())))
        throw IoError("shard cache: cannot read the downloaded object " + staged.temp_path().string());
      in.close();
      std::error_code ec;
      fs::remove(staged.temp_path(), ec);
      got = checksum_bytes(frame.data(), frame.size());
    } else {
      got = checksum_file(staged.temp_path().string());
    }
    if (got == shard.checksum) {
      // Not committed: the AtomicFile removes the temporary as the error leaves.
      if (frame.empty())
        if (const int64_t size = size_of(staged.temp_path()); size != shard.bytes)
          wrong_size(shard, manifest_, "as downloaded from " + source_.url(), size, shard.bytes);
      // Verified ciphertext becomes plaintext in the same temporary; a tag that
      // does not match throws, and the temporary is removed, never renamed.
      if (manifest_.encrypted())
        decrypt_shard_in_place(staged.temp_path(), *opts_.key, manifest_, index_of(shard));
      // A verified frame decodes into a second temporary, committed once its
      // size and checksum are the manifest's.
      std::optional<AtomicFile> plain;
      if (!frame.empty()) {
        plain.emplace(shard_path(shard.name), staging(opts_.dir));
        decompress_staged(shard, frame, plain->temp_path());
      }
      AtomicFile& done = plain ? *plain : staged;
      // Admit and drop the reservation in one step under the cache lock, so a
      // concurrent scan never counts the shard twice (and evicts for nothing).
      FileLock cache_lock(opts_.dir / ".locks" / "cache.lock");
      cache_lock.lock_exclusive();
      done.commit();  // atomic: a shard file is always whole and verified
      std::error_code ec;
      fs::remove(reservation, ec);
      return;
    }
  }
  throw IoError("shard cache: shard " + shard.name + " from " + source_.url() +
                " failed its checksum twice: manifest says " + shard.checksum + ", download has " + got);
}

void ShardCache::decompress_staged(const ShardInfo& shard, const std::vector<uint8_t>& frame,
                                   const fs::path& out) {
  const std::string what = "shard cache: shard " + shard.name + " from " + source_.url() + " (" +
                           manifest_.object_compression + " object of " + std::to_string(shard.bytes) +
                           " bytes)";
  const int64_t n = decompress_shard_bytes(frame.data(), frame.size(), out, manifest_.object_compression,
                                           shard.plain_bytes, what);
  if (n != shard.plain_bytes)
    throw IoError(what + ": decodes to " + std::to_string(n) + " bytes, its entry in manifest " +
                  manifest_.origin + " says plain_bytes " + std::to_string(shard.plain_bytes));
  if (const std::string got = checksum_file(out.string()); got != shard.plain_checksum)
    throw IoError(what + ": decodes to a shard file of checksum " + got + ", its entry in manifest " +
                  manifest_.origin + " says plain_checksum " + shard.plain_checksum);
}

namespace {

// A download in progress as seen from outside: its temporaries' bytes and
// latest write, and who writes them (read from their names). Any change is
// progress (a retried GET truncates and rewrites).
struct DownloadProgress {
  int64_t bytes = 0;
  fs::file_time_type written = fs::file_time_type::min();  // libstdc++'s file clock: today is negative
  std::string writer;                                      // "pid P on host H" of a live writer; "" if none
  bool operator==(const DownloadProgress&) const = default;
};

DownloadProgress progress_of(const fs::path& tmp_dir, const std::string& escaped_name) {
  DownloadProgress p;
  const std::string prefix = escaped_name + ".tmp.";
  std::error_code ec;
  for (auto& e : fs::directory_iterator(tmp_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const auto w = temporary_writer(name);
    if (!w || !temporary_writer_alive(*w)) continue;
    p.bytes += static_cast<int64_t>(e.file_size(ec));
    p.written = std::max(p.written, e.last_write_time(ec));
    p.writer = "pid " + std::to_string(w->pid) + " on host " + w->host;
  }
  return p;
}

}  // namespace

ShardCache::Waited ShardCache::wait_for_download(FileLock& download, const ShardInfo& shard,
                                                 const std::function<bool()>& cached) {
  using clock = std::chrono::steady_clock;
  if (download.try_lock_exclusive()) return Waited::kLocked;  // nobody downloads it: this process does
  const std::string escaped = escape_shard_name(shard.name);
  DownloadProgress last = progress_of(opts_.dir / ".tmp", escaped);
  auto last_change = clock::now();
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (download.try_lock_exclusive()) return Waited::kLocked;
    if (cached()) return Waited::kCached;  // the holder committed it (a rename: whole or absent)
    DownloadProgress now = progress_of(opts_.dir / ".tmp", escaped);
    if (!(now == last)) {
      last = now;
      last_change = clock::now();
      continue;
    }
    if (std::chrono::duration<double>(clock::now() - last_change).count() < opts_.download_stall_timeout_s)
      continue;
    stats_.stalled_takeovers++;
    const std::string msg = "shard cache " + opts_.dir.string() + ": the download of " + shard.name + " by " +
                            (now.writer.empty() ? std::string("another process") : now.writer) +
                            " has made no progress for " +
                            std::to_string(static_cast<int64_t>(opts_.download_stall_timeout_s)) +
                            " s (stopped or stuck): downloading it here too";
    if (opts_.warn)
      opts_.warn(msg);
    else
      std::fprintf(stderr, "strata: warning: %s\n", msg.c_str());
    return Waited::kStalled;
  }
}

ShardCache::Pin ShardCache::acquire(const ShardInfo& shard) {
  // Two locks per shard. The pin lock is held shared for as long as the shard is
  // in use (an evictor needs it exclusively). The download lock is held
  // exclusively only while downloading, so one process per node downloads and the
  // others wait for that download -- never for another process's pin. (Waiting
  // for an exclusive pin lock instead deadlocks data-parallel ranks: a rank that
  // holds a pin while it waits in an allreduce for the rank that wants the lock.)
  Pin pin;
  pin.path_ = shard_path(shard.name);
  pin.lock_ = FileLock(lock_path(shard.name));
  pin.lock_.lock_shared();
  // A cached file found of a size other than the manifest's (one stat) is either
  // damaged or described by a manifest that lies: both are errors naming the two.
  auto hit = [&] {
    if (!fs::exists(pin.path_)) return false;
    if (const int64_t size = size_of(pin.path_); size != shard.staged_bytes())
      wrong_size(shard, manifest_, pin.path_.string(), size, shard.staged_bytes());
    stats_.hits++;
    return true;
  };
  if (hit()) return pin;
  FileLock download(opts_.dir / ".locks" / (escape_shard_name(shard.name) + ".download"));
  // Held: one process per node downloads. Busy: wait for that download, unless
  // it stalls; then this process fetches the shard too (both copies are
  // verified, and whichever rename lands last replaces a whole file by another).
  const Waited waited = wait_for_download(download, shard, hit);
  if (waited == Waited::kCached) return pin;
  if (waited == Waited::kLocked && hit()) return pin;  // another process downloaded it meanwhile
  stats_.misses++;
  download_verified(shard);
  if (!fs::exists(pin.path_))
    throw IoError("shard cache: " + shard.name + " is missing from " + pin.path_.parent_path().string() +
                  " right after it was downloaded and verified");
  return pin;
}

}  // namespace strata::data
