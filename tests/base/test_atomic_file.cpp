// Atomic files: a destination appears whole and verified or not at all, no
// temporary outlives its writer's failure, and sweeping removes exactly the
// temporaries of writers that are gone.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/atomic_file.h"
#include "base/error.h"

namespace strata {
namespace {
namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("strata-atomic-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

std::set<std::string> files_in(const fs::path& dir) {
  std::set<std::string> out;
  for (auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw IoError("test: cannot write " + p.string());
}

// A pid that was alive a moment ago and is not now (its child has been reaped).
long dead_pid(const std::function<void()>& in_child = {}) {
  pid_t child = ::fork();
  if (child == 0) {
    if (in_child) in_child();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

TEST(AtomicFile, WritesToATemporaryVerifiesItThenRenamesIntoPlace) {
  TempDir dir;
  const fs::path dest = dir.path() / "model.h5";
  fs::path seen;
  write_file_atomically(
      dest, [&](const fs::path& tmp) { write(tmp, "weights"); },
      [&](const fs::path& tmp) {
        seen = tmp;
        EXPECT_EQ(read(tmp), "weights");
        EXPECT_FALSE(fs::exists(dest)) << "verified before it is renamed";
      });
  EXPECT_EQ(read(dest), "weights");
  EXPECT_EQ(files_in(dir.path()), std::set<std::string>{"model.h5"}) << "no temporary left";
  EXPECT_EQ(seen.parent_path(), dir.path()) << "the temporary lives beside its destination";
  const std::string name = seen.filename().string();
  EXPECT_EQ(name.rfind("model.h5.tmp.", 0), 0u) << name;
  EXPECT_NE(name.find("." + std::to_string(::getpid()) + "."), std::string::npos)
      << "carries the pid: " << name;
  EXPECT_TRUE(is_temporary_name(name));
}

TEST(AtomicFile, ReplacesAnExistingFileWhole) {
  TempDir dir;
  const fs::path dest = dir.path() / "manifest.json";
  write(dest, "old contents, longer than the new");
  write_file_atomically(dest, [&](const fs::path& tmp) { write(tmp, "new"); }, {}, {.sync = false});
  EXPECT_EQ(read(dest), "new");
  EXPECT_EQ(files_in(dir.path()).size(), 1u);
}

TEST(AtomicFile, AVerifyFailureLeavesNoFileAndNoTemporary) {
  TempDir dir;
  const fs::path dest = dir.path() / "shard-3.h5";
  try {
    write_file_atomically(
        dest, [&](const fs::path& tmp) { write(tmp, "corrupt"); },
        [&](const fs::path&) { throw IoError("checksum mismatch in shard-3.h5"); });
    FAIL() << "the verify error did not propagate";
  } catch (const IoError& e) {
    EXPECT_STREQ(e.what(), "checksum mismatch in shard-3.h5");
  }
  EXPECT_TRUE(files_in(dir.path()).empty());

  write(dest, "the good old one");  // a failed replacement keeps what was there
  EXPECT_THROW(
      write_file_atomically(
          dest, [&](const fs::path& tmp) { write(tmp, "bad"); }, [&](const fs::path&) { throw Error("no"); }),
      Error);
  EXPECT_EQ(read(dest), "the good old one");
  EXPECT_EQ(files_in(dir.path()).size(), 1u);
}

TEST(AtomicFile, AWriteFailureLeavesNoTemporary) {
  TempDir dir;
  EXPECT_THROW(write_file_atomically(dir.path() / "x",
                                     [&](const fs::path& tmp) {
                                       write(tmp, "half");
                                       throw IoError("disk full");
                                     }),
               IoError);
  EXPECT_TRUE(files_in(dir.path()).empty());
  // No directory to write into: the file system's error, nothing left behind.
  EXPECT_THROW(
      write_file_atomically(dir.path() / "missing" / "x", [&](const fs::path& tmp) { write(tmp, "a"); }),
      IoError);
  EXPECT_TRUE(files_in(dir.path()).empty());
}

TEST(AtomicFile, AnUncommittedFileIsRemovedAndATempDirIsHonoured) {
  TempDir dir;
  fs::create_directories(dir.path() / ".tmp");
  fs::create_directories(dir.path() / "shards");
  const fs::path dest = dir.path() / "shards" / "a.h5";
  {
    AtomicFile f(dest, {.temp_dir = dir.path() / ".tmp", .sync = false});
    EXPECT_EQ(f.temp_path().parent_path(), dir.path() / ".tmp");
    write(f.temp_path(), "abandoned");
    EXPECT_EQ(files_in(dir.path() / ".tmp").size(), 1u);
  }
  EXPECT_TRUE(files_in(dir.path() / ".tmp").empty()) << "dropped without commit: removed";
  AtomicFile f(dest, {.temp_dir = dir.path() / ".tmp"});
  write(f.temp_path(), "kept");
  f.commit();
  EXPECT_TRUE(f.committed());
  EXPECT_EQ(read(dest), "kept");
  EXPECT_TRUE(files_in(dir.path() / ".tmp").empty());
  EXPECT_THROW(f.commit(), IoError) << "a second commit";
  EXPECT_EQ(read(dest), "kept");
}

TEST(AtomicFile, TemporaryNamesAreUniqueAcrossThreadsAndStayLegal) {
  std::vector<std::vector<std::string>> names(4);
  std::vector<std::thread> threads;
  for (auto& v : names)
    threads.emplace_back([&v] {
      for (int i = 0; i < 500; ++i) v.push_back(temporary_name("ckpt-000000010.h5"));
    });
  for (auto& t : threads) t.join();
  std::set<std::string> all;
  for (auto& v : names)
    for (auto& n : v) {
      EXPECT_TRUE(is_temporary_name(n)) << n;
      EXPECT_TRUE(temporary_writer_alive(n)) << n;
      all.insert(n);
    }
  EXPECT_EQ(all.size(), 2000u);
  const std::string long_name = temporary_name(std::string(300, 'x'));
  EXPECT_LE(long_name.size(), 255u);
  EXPECT_TRUE(is_temporary_name(long_name));
  for (const char* not_temp : {"ckpt-000000020.h5", "ckpt-000000020.h5.tmp.", "a.tmp.host.12", "a.tmp..12.3",
                               ".tmp.host.12.3", "a.tmp.host.x.3", "a.tmp.host.12."})
    EXPECT_FALSE(is_temporary_name(not_temp)) << not_temp;
}

TEST(AtomicFile, EarlierCheckpointTemporariesAreThisHosts) {
  const std::string mine = "ckpt-000000020.h5.tmp." + std::to_string(::getpid());
  const std::string dead = "ckpt-000000020.h5.tmp." + std::to_string(dead_pid());
  EXPECT_TRUE(is_temporary_name(mine));
  EXPECT_TRUE(temporary_writer_alive(mine));
  EXPECT_TRUE(is_temporary_name(dead));
  EXPECT_FALSE(temporary_writer_alive(dead));
}

TEST(AtomicFile, ProcessAliveTellsTheLivingFromTheDead) {
  EXPECT_TRUE(process_alive(::getpid()));
  EXPECT_TRUE(process_alive(1)) << "init: alive, though not ours to signal";
  EXPECT_FALSE(process_alive(dead_pid()));
  EXPECT_FALSE(process_alive(0));
  EXPECT_FALSE(process_alive(-1));
}

TEST(AtomicFile, SweepRemovesADeadWritersTemporaryAndKeepsALiveOnes) {
  TempDir dir;
  // The dead writer names its own temporary and exits, as a crashed one would.
  fs::path dead_name_file = dir.path() / "dead-name";
  dead_pid([&] { write(dead_name_file, temporary_name("shard-1.h5")); });
  const std::string dead = read(dead_name_file);
  fs::remove(dead_name_file);
  ASSERT_TRUE(is_temporary_name(dead)) << dead;
  write(dir.path() / dead, "partial");

  AtomicFile live(dir.path() / "shard-2.h5", {.sync = false});
  write(live.temp_path(), "in progress");
  // Another host's writer cannot be checked from here, whatever its pid.
  const std::string other_host =
      "shard-4.h5.tmp.some-other-host." + dead.substr(dead.rfind('.', dead.rfind('.') - 1) + 1);
  write(dir.path() / other_host, "elsewhere");
  write(dir.path() / "shard-0.h5", "a finished file");
  fs::create_directories(dir.path() / (dead + "-dir.tmp.x.1.1"));

  EXPECT_FALSE(temporary_writer_alive(dead));
  EXPECT_EQ(sweep_dead_temporaries(dir.path()), 1u);
  EXPECT_EQ(files_in(dir.path()), (std::set<std::string>{live.temp_path().filename().string(), other_host,
                                                         "shard-0.h5", dead + "-dir.tmp.x.1.1"}));
  // A directory kept for temporaries only: a file that is no temporary goes too.
  EXPECT_EQ(sweep_dead_temporaries(dir.path(), /*only_temporaries=*/true), 1u);
  EXPECT_FALSE(fs::exists(dir.path() / "shard-0.h5"));
  EXPECT_TRUE(fs::exists(live.temp_path()));
  EXPECT_TRUE(fs::exists(dir.path() / other_host));
  EXPECT_EQ(sweep_dead_temporaries(dir.path() / "absent"), 0u);
}

}  // namespace
}  // namespace strata
