// A shard that fails to open gives strata's one message and nothing else: HDF5's
// own error stack ("HDF5-DIAG ...") must not reach stderr, on any thread. HDF5
// built thread-safe keeps one error stack, and one printing switch, per thread, so
// the loader's decode and staging threads need the switch off as much as the main
// thread does. Its own binary: which threads HDF5 has silenced is process state.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <functional>
#include <thread>

#include "base/error.h"
#include "data/format/mapped_shard.h"
#include "data/format/shard.h"
#include "test_util.h"

namespace strata::data {
namespace {

const std::vector<FieldSpec> kSchema = {{"x", "u8", {16}, false}, {"y", "i64", {}, false}};

void write_shard(const std::string& path, int n) {
  ShardWriter w(path, kSchema);
  for (int i = 0; i < n; ++i) {
    uint8_t x[16] = {};
    int64_t y = i;
    w.add({{x, sizeof x}, {&y, sizeof y}});
  }
  w.finish();
}

// Runs `fn` with fd 2 redirected to a file; returns what was written there.
std::string stderr_of(const std::filesystem::path& capture, const std::function<void()>& fn) {
  std::fflush(stderr);
  const int saved = ::dup(2);
  const int fd = ::open(capture.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  EXPECT_GE(fd, 0);
  ::dup2(fd, 2);
  ::close(fd);
  fn();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  return testing::read_file(capture);
}

// Opens `path` with `open` on a new thread and expects an IoError naming it, with
// nothing on stderr.
void expect_quiet_failure(const std::filesystem::path& dir, const std::string& path,
                          const std::function<void(const std::string&)>& open) {
  std::string what;
  const std::string err = stderr_of(dir / "stderr.txt", [&] {
    std::thread t([&] {
      try {
        open(path);
      } catch (const IoError& e) {
        what = e.what();
      }
    });
    t.join();
  });
  EXPECT_NE(what.find(path), std::string::npos) << "no strata error naming " << path << ": '" << what << "'";
  EXPECT_EQ(err.find("HDF5-DIAG"), std::string::npos) << "HDF5's error stack reached stderr:\n" << err;
}

TEST(ShardStderr, OpenErrorsOnAnyThreadPrintNoHdf5Stack) {
  auto dir = testing::scratch_dir("shard-stderr");
  const std::string good = (dir / "good.h5").string();
  write_shard(good, 200);
  // The main thread opens a shard first, as a process does before its loader starts.
  ASSERT_EQ(ShardData::read(good, kSchema).samples(), 200);
  const std::string bytes = testing::read_file(good);
  const std::string truncated = (dir / "truncated.h5").string();
  testing::write_file(truncated, bytes.substr(0, bytes.size() / 2));
  const std::string garbage = (dir / "garbage.h5").string();
  testing::write_file(garbage, std::string(4096, 'z'));
  const std::string missing = (dir / "missing.h5").string();

  for (const std::string& p : {truncated, garbage, missing}) {
    SCOPED_TRACE(p);
    expect_quiet_failure(dir, p, [](const std::string& path) { ShardData::read(path, kSchema); });
    expect_quiet_failure(dir, p, [](const std::string& path) { MappedShard::open(path, kSchema); });
  }
}

}  // namespace
}  // namespace strata::data
