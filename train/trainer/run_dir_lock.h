// A run directory belongs to one run at a time. Two runs started with the same
// --run-dir would interleave their logs and overwrite each other's checkpoints,
// so the owner holds an flock on <run>/.lock for its lifetime and writes who it
// is into the file; a second run is refused with the holder's pid, host and
// start time. flock dies with its process, so the lock of a killed run is free
// again at once: the next run takes it and says whose stale lock it recovered.
// (On NFS and Lustre, flock works where the file system is mounted with it.)
#pragma once
#include <filesystem>
#include <string>

#include "base/file_lock.h"

namespace strata {

class RunDirLock {
 public:
  // Creates `dir` if needed and takes its lock, or throws strata::ConfigError
  // naming the run directory and the run that holds it.
  explicit RunDirLock(const std::filesystem::path& dir);
  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

  // "pid 123 on host h since 2026-12-01T10:00:00Z" of a run that died holding
  // the lock, "" when the directory was new or its last run ended normally
  // (the destructor empties the file).
  const std::string& recovered_from() const { return recovered_from_; }

 private:
  FileLock lock_;
  std::string recovered_from_;
};

}  // namespace strata
