// The stop signals (train/trainer/stop_signal.h): the first asks for a clean
// stop; a repeat within 2 s is the same request (Slurm sends the tasks of a job
// it preempts without a grace time SIGTERM twice, about 10 ms apart); a repeat
// after that kills. Each case runs in a child process (a death test).
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>

#include "train/trainer/stop_signal.h"

namespace strata {
namespace {

TEST(StopSignal, RepeatWithinTwoSecondsIsTheSameRequest) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        install_stop_handlers();
        std::raise(SIGTERM);
        std::raise(SIGTERM);
        std::_Exit(stop_requested() == SIGTERM ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(StopSignal, RepeatAfterTwoSecondsKills) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        install_stop_handlers();
        std::raise(SIGTERM);
        usleep(2'200'000);
        std::raise(SIGTERM);
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGTERM), "");
}

}  // namespace
}  // namespace strata
