// Atomic files: a file appears at its destination whole and verified, or not at
// all. It is written under a temporary name in the same file system, fsynced,
// verified, renamed into place (rename replaces atomically) and its directory
// fsynced, so a crash at any point leaves the old file or the new one, never a
// torn one. Checkpoints, staged shards, the cached manifest and FileSource
// objects are written this way.
//
// A temporary is named "<name>.tmp.<host>.<pid>.<n>": the destination's file
// name, the writer's host and process id, and a per-process counter (two
// threads never share a name). A writer that dies leaves its temporary behind;
// sweep_dead_temporaries() removes those of writers that are gone. A process
// can only tell whether a pid is alive on its own host (and in its own pid
// namespace, which the host name of a container tells apart), so temporaries of
// other hosts are left alone. Names of the form "<name>.tmp.<pid>", written by
// earlier checkpoint writers, count as temporaries of this host.
#pragma once
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace strata {

struct AtomicWriteOptions {
  // Where the temporary is written; empty: the destination's directory. It must
  // be on the destination's file system, where a rename is atomic.
  std::filesystem::path temp_dir{};
  // fsync the file before the rename and the directory after it. Off where a
  // reader verifies the file anyway after a crash (the shard cache re-checks
  // every cached shard against the manifest at the start of a job).
  bool sync = true;
};

// A file being written under its temporary name. The destructor removes the
// temporary unless commit() has renamed it into place.
class AtomicFile {
 public:
  explicit AtomicFile(std::filesystem::path dest, AtomicWriteOptions options = {});
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  const std::filesystem::path& path() const { return dest_; }       // the destination
  const std::filesystem::path& temp_path() const { return temp_; }  // write here
  bool committed() const { return committed_; }

  // fsync (when options.sync), verify(temp_path()) when given, rename into place,
  // fsync the directory (when options.sync). verify may throw: then, as on any
  // failure, nothing is renamed, the temporary is removed and the error
  // propagates (strata::IoError for the file system's own failures).
  void commit(const std::function<void(const std::filesystem::path& temp)>& verify = {});

 private:
  std::filesystem::path dest_, temp_;
  AtomicWriteOptions opts_;
  bool committed_ = false;
};

// The usual case in one call: write(temp), then commit(verify).
void write_file_atomically(const std::filesystem::path& dest,
                           const std::function<void(const std::filesystem::path& temp)>& write,
                           const std::function<void(const std::filesystem::path& temp)>& verify = {},
                           AtomicWriteOptions options = {});

// A fresh temporary file name for a destination named `dest_name` (written by
// this process, on this host). Also for files that, like temporaries, belong to
// a live process and are swept when it dies (the shard cache's reservations).
std::string temporary_name(const std::string& dest_name);
// Whether `file_name` has the form of a temporary's name.
bool is_temporary_name(const std::string& file_name);
// Who writes a temporary, read from its name: the host and process id.
struct TemporaryWriter {
  std::string host;
  long pid = -1;
};
std::optional<TemporaryWriter> temporary_writer(const std::string& file_name);
// False for a temporary whose writer, on this host, is no longer alive, and for a
// name that is not a temporary's; true otherwise (including other hosts').
bool temporary_writer_alive(const std::string& file_name);
bool temporary_writer_alive(const TemporaryWriter& writer);  // the same, for a name already parsed
// Whether a process with this id exists on this host (pid <= 0: false).
bool process_alive(long pid);

// Removes the temporaries in `dir` (not below it) whose writer is gone; with
// only_temporaries (a directory that holds temporaries and nothing else), every
// regular file that is not a live writer's. Returns how many files it removed.
// A missing directory has nothing to sweep.
size_t sweep_dead_temporaries(const std::filesystem::path& dir, bool only_temporaries = false);

}  // namespace strata
