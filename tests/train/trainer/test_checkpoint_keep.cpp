// Checkpoints a user keeps are kept (issue 27): checkpoint.keep_last 0 keeps
// every checkpoint; resume=auto names a checkpoint it cannot read and why, and
// goes on from the newest one it can; when none can be read the run stops and
// leaves checkpoints/ as it was, instead of starting fresh over it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "base/error.h"
#include "core/communicator.h"
#include "train/checkpoint/checkpoint.h"
#include "train/trainer/trainer.h"
#include "trainer_fixture.h"

namespace strata::testing {
namespace {
namespace fs = std::filesystem;

constexpr int64_t kDim = 16, kClasses = 4;

// 640 samples in batches of 32: 20 steps an epoch.
TrainSummary train(const TrainConfig& c, const std::string& dir) {
  std::vector<float> x;
  std::vector<int64_t> y;
  synthetic_data(640, kDim, kClasses, 7, x, y);
  MemoryBatchSource src(x, y, {kDim}, 32, 3, /*shuffle=*/false);
  SingleProcessCommunicator comm;
  auto model = build(c, {kDim});
  Trainer t(c, dir, model, {kDim}, comm);
  return t.fit(src, nullptr, nullptr);
}

// A checkpoint every 10 steps until `max_steps`, keeping the last `keep_last`.
TrainConfig every_10_steps(int64_t max_steps, int64_t keep_last) {
  TrainConfig c = quiet_config();
  c.trainer.epochs = 10;
  c.trainer.max_steps = max_steps;
  c.checkpoint.every_steps = 10;
  c.checkpoint.keep_last = keep_last;
  c.checkpoint.keep_best = false;
  return c;
}

// Every file in `dir` by name, with its size.
std::map<std::string, uintmax_t> listing(const fs::path& dir) {
  std::map<std::string, uintmax_t> files;
  for (auto& e : fs::directory_iterator(dir)) files[e.path().filename().string()] = fs::file_size(e.path());
  return files;
}

std::string read_text(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string ckpt_name(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%09lld.h5", static_cast<long long>(step));
  return buf;
}

// Ways a copy of a checkpoint goes wrong, and what the message must say of each.
struct Damage {
  const char* what;
  std::function<void(const fs::path&)> apply;
  std::vector<std::string> said;  // each appears in the message
};

std::vector<Damage> damages(const fs::path& ckpt) {
  const auto size = fs::file_size(ckpt);
  const auto half = size / 2;
  return {
      {"truncated",
       [=](const fs::path& p) { fs::resize_file(p, half); },
       {"truncated", std::to_string(half) + " bytes", std::to_string(size)}},
      {"not HDF5",
       [](const fs::path& p) { std::ofstream(p, std::ios::trunc) << "a text file, not HDF5\n"; },
       {"not an HDF5 file"}},
      {"missing entries",
       [](const fs::path& p) {
         Checkpoint ck = load_checkpoint(p);
         ck.ints.erase(ckpt_key::epoch);
         save_checkpoint(ck, p);
       },
       {"missing /trainer/epoch"}},
  };
}

TEST(CheckpointKeep, KeepLastZeroKeepsEveryCheckpoint) {
  const std::string dir = temp_dir("keep-all");
  train(every_10_steps(30, /*keep_last=*/0), dir);
  std::vector<std::string> names;
  for (auto& [name, size] : listing(fs::path(dir) / "checkpoints")) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{ckpt_name(10), ckpt_name(20), ckpt_name(30)}));
  fs::remove_all(dir);
}

// The newest checkpoint cannot be read: the run says which and why, resumes
// from the one before, and the damaged file's bytes are still in checkpoints/.
TEST(CheckpointKeep, AutoResumeSkipsADamagedLatestAndSaysWhy) {
  const std::string probe = temp_dir("probe");
  train(every_10_steps(10, 0), probe);
  const auto kinds = damages(fs::path(probe) / "checkpoints" / ckpt_name(10));
  fs::remove_all(probe);
  for (const Damage& d : kinds) {
    SCOPED_TRACE(d.what);
    const std::string dir = temp_dir("damaged-latest");
    const fs::path ckpts = fs::path(dir) / "checkpoints";
    train(every_10_steps(30, /*keep_last=*/2), dir);
    const fs::path latest = ckpts / ckpt_name(30);
    d.apply(latest);
    const uintmax_t damaged_size = fs::file_size(latest);

    TrainConfig c = every_10_steps(40, 2);
    c.checkpoint.resume = "auto";
    const TrainSummary s = train(c, dir);
    EXPECT_EQ(s.steps, 40);
    const std::string log = read_text(fs::path(dir) / "train.log");
    const std::string skipped = "resume: auto: skipped " + latest.string() + ": ";
    const auto at = log.find(skipped);
    ASSERT_NE(at, std::string::npos) << log;
    const std::string line = log.substr(at, log.find('\n', at) - at);
    for (const std::string& s : d.said) EXPECT_NE(line.find(s), std::string::npos) << s << " in: " << line;
    EXPECT_NE(log.find("resumed from " + (ckpts / ckpt_name(20)).string() + " at step 20"), std::string::npos)
        << log;
    // the step-30 save of the resumed run did not overwrite the damaged file
    bool kept = false;
    for (auto& [name, size] : listing(ckpts))
      kept |= name.rfind(ckpt_name(30), 0) == 0 && size == damaged_size && name != ckpt_name(30);
    EXPECT_TRUE(kept) << "the damaged step-30 file is gone";
    fs::remove_all(dir);
  }
}

// No checkpoint can be read: the run stops, naming each file and why, and
// checkpoints/ is left as it was.
TEST(CheckpointKeep, AutoResumeRefusesWhenNoCheckpointCanBeRead) {
  const std::string dir = temp_dir("all-damaged");
  const fs::path ckpts = fs::path(dir) / "checkpoints";
  train(every_10_steps(20, /*keep_last=*/2), dir);
  fs::resize_file(ckpts / ckpt_name(20), fs::file_size(ckpts / ckpt_name(20)) / 2);
  std::ofstream(ckpts / ckpt_name(10), std::ios::trunc) << "a text file, not HDF5\n";
  const auto before = listing(ckpts);

  TrainConfig c = every_10_steps(40, 2);
  c.checkpoint.resume = "auto";
  std::string error;
  try {
    train(c, dir);
  } catch (const Error& e) {
    error = e.what();
  }
  ASSERT_FALSE(error.empty()) << "the run started fresh over damaged checkpoints";
  for (const std::string& s : {(ckpts / ckpt_name(20)).string() + ": cannot open as HDF5: truncated",
                               (ckpts / ckpt_name(10)).string() + ": cannot open as HDF5: not an HDF5 file",
                               std::string("checkpoint.resume")})
    EXPECT_NE(error.find(s), std::string::npos) << s << " in: " << error;
  EXPECT_EQ(listing(ckpts), before) << "checkpoints/ changed";
  EXPECT_NE(read_text(fs::path(dir) / "train.log").find("error: " + error), std::string::npos);

  // An explicit fresh start still starts fresh, and keeps the damaged files' bytes.
  c.checkpoint.resume = "";
  EXPECT_EQ(train(c, dir).steps, 40);
  const auto after = listing(ckpts);
  for (auto& [name, size] : before) {
    bool kept = false;
    for (auto& [n, s] : after) kept |= n.rfind(name, 0) == 0 && s == size;
    EXPECT_TRUE(kept) << name << " (" << size << " bytes) is gone";
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace strata::testing
