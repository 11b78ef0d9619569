// Whole-file writes and copies (see file_write.h).
#include "base/file_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/atomic_file.h"
#include "base/error.h"

namespace strata {
namespace fs = std::filesystem;
namespace {

// Closes a file descriptor on every path; close() errors of a written file are
// checked by finish() instead, since NFS and some FUSE stores report ENOSPC there.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int finish() {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

int create(const fs::path& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError(write_failure(path, errno, 0, 0));
  return fd;
}

// Writes all of [data, data + size) at the file's offset; the file is to hold
// `total` bytes and has `written` before this call (for the message).
void write_all(const Fd& fd, const fs::path& path, const char* data, size_t size, uint64_t total,
               uint64_t written) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd.get(), data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw IoError(write_failure(path, n < 0 ? errno : ENOSPC, total, written + done));
    done += static_cast<size_t>(n);
  }
}

void finish(Fd& fd, const fs::path& path, uint64_t size) {
  if (fd.finish() != 0) throw IoError(write_failure(path, errno, size, size));
}

}  // namespace

std::string write_failure(const fs::path& path, int err, uint64_t total, uint64_t written) {
  if (err != ENOSPC && err != EDQUOT) return "cannot write '" + path.string() + "': " + std::strerror(err);
  const int64_t free = free_bytes(path);
  return std::string(err == EDQUOT ? "disk quota exceeded" : "no space left on device") + " writing '" +
         path.string() + "': the file needs " + std::to_string(total) + " bytes, " + std::to_string(written) +
         " were written, " + (free < 0 ? std::string("unknown") : std::to_string(free)) + " bytes are free";
}

int64_t free_bytes(const fs::path& path) {
  fs::path p = path;
  struct statvfs st {};
  while (::statvfs(p.c_str(), &st) != 0) {
    if (!p.has_parent_path() || p.parent_path() == p) return -1;
    p = p.parent_path();
  }
  return static_cast<int64_t>(st.f_bavail) * static_cast<int64_t>(st.f_frsize);
}

void write_bytes(const fs::path& path, const void* data, size_t size) {
  Fd fd(create(path));
  write_all(fd, path, static_cast<const char*>(data), size, size, 0);
  finish(fd, path, size);
}

uint64_t copy_file_bytes(const fs::path& src, const fs::path& dest) {
  Fd in(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.get() < 0) throw IoError("cannot open '" + src.string() + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode))
    throw IoError("cannot copy '" + src.string() + "': not a regular file");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  Fd out(create(dest));
  std::vector<char> buf(4 << 20);
  uint64_t copied = 0;
  for (;;) {
    ssize_t n = ::read(in.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw IoError("cannot read '" + src.string() + "': " + std::strerror(errno));
    if (n == 0) break;
    write_all(out, dest, buf.data(), static_cast<size_t>(n), size, copied);
    copied += static_cast<uint64_t>(n);
  }
  finish(out, dest, size);
  return copied;
}

void write_text_atomically(const std::filesystem::path& path, const std::string& text) {
  write_file_atomically(
      path, [&](const std::filesystem::path& tmp) { write_bytes(tmp, text.data(), text.size()); });
}

}  // namespace strata
