// The NVTX ranges of a training step, as Nsight Systems would see them: a
// test NVTX tool (nvtx_recorder.cpp, loaded through NVTX_INJECTION64_PATH the
// way nsys injects itself) records every push and pop of a real Trainer run on
// the CPU. Built in CUDA builds only (without CUDA there are no ranges;
// kernels/runtime/trace_range.h asserts TraceRange is empty then). No GPU needed.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/communicator.h"
#include "train/trainer/trainer.h"
#include "trainer_fixture.h"

namespace strata::testing {
namespace {

TEST(NvtxRanges, EveryStepShowsItsParts) {
  const std::string dir = temp_dir("nvtx");
  const std::string log = dir + "-nvtx.log";
  // before the process's first NVTX call: that is when NVTX looks for a tool
  setenv("NVTX_INJECTION64_PATH", STRATA_NVTX_RECORDER, 1);
  setenv("STRATA_NVTX_LOG", log.c_str(), 1);
  TrainConfig c = quiet_config();
  std::vector<float> x;
  std::vector<int64_t> y;
  synthetic_data(192, 16, 4, 7, x, y);
  MemoryBatchSource src(x, y, {16}, 64, 3, false);  // 3 steps
  SingleProcessCommunicator comm;
  Trainer t(c, dir, build(c, {16}), {16}, comm);
  t.fit(src, nullptr, nullptr);

  // each push as its nesting path ("forward/h2d"); pops must balance
  std::vector<std::string> pushes, open;
  std::ifstream f(log);
  ASSERT_TRUE(f) << "the NVTX tool was not loaded: no " << log;
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("push ", 0) == 0) {
      open.push_back(open.empty() ? line.substr(5) : open.back() + "/" + line.substr(5));
      pushes.push_back(open.back());
    } else {
      ASSERT_EQ(line, "pop");
      ASSERT_FALSE(open.empty()) << "a pop without its push";
      open.pop_back();
    }
  }
  EXPECT_TRUE(open.empty()) << "unclosed range " << open.back();
  std::vector<std::string> expected;
  for (int step = 0; step < 3; ++step)
    for (const char* r : {"data wait", "forward", "forward/h2d", "backward", "allreduce", "optimizer"})
      expected.push_back(r);
  expected.push_back("data wait");  // the epoch's end: the source has no batch left
  EXPECT_EQ(pushes, expected);
}

}  // namespace
}  // namespace strata::testing
