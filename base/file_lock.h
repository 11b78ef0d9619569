// FileLock: an flock(2) lock on a lock file. Used for the node-local shard cache,
// where several processes of one job share a directory, and for the run
// directory, which one run owns: flock locks belong to the open file
// description, so two FileLocks conflict even inside one process, and a lock
// dies with its process (a crash never leaves a lock behind).
#pragma once
#include <filesystem>
#include <string>

namespace strata {

class FileLock {
 public:
  FileLock() = default;
  // Opens (creating) the lock file; takes no lock yet.
  explicit FileLock(const std::filesystem::path& path);
  ~FileLock();
  FileLock(FileLock&& o) noexcept;
  FileLock& operator=(FileLock&& o) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  void lock_shared();     // blocks
  void lock_exclusive();  // blocks
  bool try_lock_shared();
  bool try_lock_exclusive();
  // Converts the held lock; EX -> SH never lets another holder in between on Linux.
  void unlock();
  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }  // to read or write the lock file's contents
  const std::filesystem::path& path() const { return path_; }

 private:
  bool flock_op(int op, bool block);
  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace strata
