// Atomic files (see atomic_file.h): temporary names, fsync, rename, sweeping.
#include "base/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>

#include "base/error.h"
#include "base/fault_point.h"

namespace strata {
namespace fs = std::filesystem;
namespace {

constexpr const char* kMarker = ".tmp.";
constexpr size_t kMaxFileName = 255;  // NAME_MAX on Linux file systems

// This host's name as it appears in temporary names: no '.' (the name is split
// on dots), nothing but letters, digits, '-' and '_'.
const std::string& this_host() {
  static const std::string host = [] {
    char buf[256] = {};
    std::string h = ::gethostname(buf, sizeof buf - 1) == 0 ? buf : "";
    for (char& c : h)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
    return h.empty() ? std::string("localhost") : h;
  }();
  return host;
}

bool all_digits(const std::string& s, size_t from, size_t to) {
  if (from >= to) return false;
  return std::all_of(s.begin() + static_cast<long>(from), s.begin() + static_cast<long>(to),
                     [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

// "<name>.tmp.<host>.<pid>.<n>" -> host and pid; also the form earlier
// checkpoint writers used on this host, "<name>.tmp.<pid>".
std::optional<TemporaryWriter> temporary_writer(const std::string& f) {
  const size_t last = f.rfind('.');
  if (last == std::string::npos || last == 0 || !all_digits(f, last + 1, f.size())) return std::nullopt;
  if (f.size() - last - 1 <= 9 && last > 4 && f.compare(last - 4, 4, ".tmp") == 0)  // "<name>.tmp.<pid>"
    return TemporaryWriter{this_host(), std::stol(f.substr(last + 1))};
  const size_t prev = f.rfind('.', last - 1);
  if (prev == std::string::npos || prev == 0 || !all_digits(f, prev + 1, last)) return std::nullopt;
  const size_t marker = f.rfind(kMarker, prev - 1);
  const size_t host_at = marker + std::strlen(kMarker);
  if (marker == std::string::npos || marker == 0 || host_at >= prev) return std::nullopt;
  if (last - prev - 1 > 9) return std::nullopt;  // not a pid (pid_max is at most 2^22)
  return TemporaryWriter{f.substr(host_at, prev - host_at), std::stol(f.substr(prev + 1, last - prev - 1))};
}

namespace {

void fsync_path(const fs::path& p, bool directory) {
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0));
  if (fd < 0) throw IoError("cannot open '" + p.string() + "' to fsync it: " + std::strerror(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) throw IoError("fsync of '" + p.string() + "' failed: " + std::strerror(err));
}

}  // namespace

std::string temporary_name(const std::string& dest_name) {
  static std::atomic<uint64_t> counter{0};
  const std::string suffix = std::string(kMarker) + this_host() + "." + std::to_string(::getpid()) + "." +
                             std::to_string(counter.fetch_add(1));
  // A long destination name is cut so that the temporary's name stays legal.
  const size_t keep = suffix.size() < kMaxFileName ? kMaxFileName - suffix.size() : 1;
  return dest_name.substr(0, std::max<size_t>(1, keep)) + suffix;
}

bool is_temporary_name(const std::string& file_name) { return temporary_writer(file_name).has_value(); }

bool process_alive(long pid) {
  if (pid <= 0 || pid > INT_MAX) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH;  // EPERM: alive, not ours
}

bool temporary_writer_alive(const std::string& file_name) {
  auto w = temporary_writer(file_name);
  return w && temporary_writer_alive(*w);
}

bool temporary_writer_alive(const TemporaryWriter& w) {
  if (w.host != this_host()) return true;  // cannot be checked from here
  return process_alive(w.pid);
}

size_t sweep_dead_temporaries(const fs::path& dir, bool only_temporaries) {
  size_t removed = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code fe;
    if (!it->is_regular_file(fe)) continue;
    const std::string name = it->path().filename().string();
    const bool dead = is_temporary_name(name) ? !temporary_writer_alive(name) : only_temporaries;
    if (dead && fs::remove(it->path(), fe)) ++removed;
  }
  return removed;
}

AtomicFile::AtomicFile(fs::path dest, AtomicWriteOptions options)
    : dest_(std::move(dest)), opts_(std::move(options)) {
  if (dest_.filename().empty()) throw IoError("atomic write: '" + dest_.string() + "' names no file");
  const fs::path dir = opts_.temp_dir.empty() ? dest_.parent_path() : opts_.temp_dir;
  temp_ = dir / temporary_name(dest_.filename().string());
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  std::error_code ec;
  fs::remove(temp_, ec);
}

void AtomicFile::commit(const std::function<void(const fs::path&)>& verify) {
  if (committed_) throw IoError("atomic write of '" + dest_.string() + "': already committed");
  try {
    fault_point("atomic.before_fsync", dest_.string());
    if (opts_.sync) fsync_path(temp_, false);
    if (verify) verify(temp_);
    fault_point("atomic.before_rename", dest_.string());
    std::error_code ec;
    fs::rename(temp_, dest_, ec);
    if (ec)
      throw IoError("cannot rename '" + temp_.string() + "' into place as '" + dest_.string() +
                    "': " + ec.message());
    committed_ = true;
  } catch (...) {
    std::error_code ec;
    fs::remove(temp_, ec);
    throw;
  }
  fault_point("atomic.before_dir_fsync", dest_.string());
  // The rename is durable once the directory entry is.
  if (opts_.sync) fsync_path(dest_.parent_path().empty() ? fs::path(".") : dest_.parent_path(), true);
}

void write_file_atomically(const fs::path& dest, const std::function<void(const fs::path&)>& write,
                           const std::function<void(const fs::path&)>& verify, AtomicWriteOptions options) {
  AtomicFile f(dest, std::move(options));
  write(f.temp_path());
  f.commit(verify);
}

}  // namespace strata
