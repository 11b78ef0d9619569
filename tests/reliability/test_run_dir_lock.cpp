// A run directory is owned by one run: a second is refused with the holder's
// pid, and the lock of a run killed with SIGKILL is taken over by the next.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "base/error.h"
#include "train/trainer/run_dir_lock.h"

namespace strata {
namespace {
namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  fs::path d =
      fs::path(::testing::TempDir()) / ("strata-run-lock-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

std::string lock_file_text(const fs::path& dir) {
  std::ifstream in(dir / ".lock");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string refusal(const fs::path& dir) {
  try {
    RunDirLock second(dir);
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "a second run took " << dir;
  return "";
}

TEST(RunDirLock, CreatesTheDirectoryAndNamesItsHolder) {
  const fs::path dir = fresh_dir("new") / "nested";
  {
    RunDirLock lock(dir);
    EXPECT_TRUE(fs::is_directory(dir));
    EXPECT_EQ(lock.recovered_from(), "");
    EXPECT_NE(lock_file_text(dir).find("pid " + std::to_string(::getpid()) + " on host "), std::string::npos);
    // flock locks belong to the open file, so even this process is refused a second time
    const std::string msg = refusal(dir);
    EXPECT_NE(msg.find("run directory " + dir.string() + " is in use by another run"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("pid " + std::to_string(::getpid())), std::string::npos) << msg;
  }
  EXPECT_EQ(lock_file_text(dir), "") << "a run that ends normally leaves no holder named";
  RunDirLock again(dir);
  EXPECT_EQ(again.recovered_from(), "");
  fs::remove_all(dir.parent_path());
}

TEST(RunDirLock, AnotherProcessIsRefusedUntilItsHolderIsKilled) {
  const fs::path dir = fresh_dir("killed");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    RunDirLock lock(dir);
    char c = 'r';
    if (::write(ready[1], &c, 1) != 1) ::_exit(3);
    for (;;) ::pause();  // holds the lock until killed
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  const std::string msg = refusal(dir);
  EXPECT_NE(msg.find("pid " + std::to_string(child) + " on host "), std::string::npos) << msg;
  EXPECT_NE(msg.find("--run-dir"), std::string::npos) << msg;

  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  RunDirLock next(dir);  // the stale lock is recovered at once
  EXPECT_NE(next.recovered_from().find("pid " + std::to_string(child) + " on host "), std::string::npos)
      << next.recovered_from();
  ::close(ready[0]);
  ::close(ready[1]);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace strata
