#include "train/trainer/run_dir_lock.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "base/error.h"

namespace strata {
namespace fs = std::filesystem;
namespace {

std::string read_holder(int fd) {
  char buf[256] = {};
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string s = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string this_holder() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "?");
  char since[32] = {};
  std::time_t t = std::time(nullptr);
  std::strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return "pid " + std::to_string(::getpid()) + " on host " + host + " since " + since;
}

}  // namespace

RunDirLock::RunDirLock(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw IoError("cannot create the run directory " + dir.string() + ": " + ec.message());
  lock_ = FileLock(dir / ".lock");
  if (!lock_.try_lock_exclusive()) {
    const std::string holder = read_holder(lock_.fd());
    throw ConfigError("run directory " + dir.string() + " is in use by another run (" +
                      (holder.empty() ? "holder unknown" : holder) +
                      "): give this run another --run-dir, or stop that one first");
  }
  recovered_from_ = read_holder(lock_.fd());
  const std::string me = this_holder() + "\n";
  if (::ftruncate(lock_.fd(), 0) != 0 || ::pwrite(lock_.fd(), me.data(), me.size(), 0) < 0)
    throw IoError("cannot write the run directory's lock file " + (dir / ".lock").string() + ": " +
                  std::strerror(errno));
}

RunDirLock::~RunDirLock() {
  // Emptied while still held: a holder named in the file is one that died holding it.
  if (lock_.valid()) [[maybe_unused]]
    int rc = ::ftruncate(lock_.fd(), 0);
}

}  // namespace strata
