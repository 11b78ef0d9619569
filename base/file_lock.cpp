#include "base/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/error.h"

namespace strata {

FileLock::FileLock(const std::filesystem::path& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw IoError("cannot open lock file " + path.string() + ": " + std::strerror(errno));
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing drops the lock
}

FileLock::FileLock(FileLock&& o) noexcept : path_(std::move(o.path_)), fd_(o.fd_) { o.fd_ = -1; }

FileLock& FileLock::operator=(FileLock&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(o.path_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

bool FileLock::flock_op(int op, bool block) {
  if (fd_ < 0) throw IoError("lock file not open: " + path_.string());
  for (;;) {
    if (::flock(fd_, op | (block ? 0 : LOCK_NB)) == 0) return true;
    if (errno == EINTR) continue;
    if (!block && errno == EWOULDBLOCK) return false;
    throw IoError("flock on " + path_.string() + " failed: " + std::strerror(errno));
  }
}

void FileLock::lock_shared() { flock_op(LOCK_SH, true); }
void FileLock::lock_exclusive() { flock_op(LOCK_EX, true); }
bool FileLock::try_lock_shared() { return flock_op(LOCK_SH, false); }
bool FileLock::try_lock_exclusive() { return flock_op(LOCK_EX, false); }
void FileLock::unlock() { flock_op(LOCK_UN, true); }

}  // namespace strata
