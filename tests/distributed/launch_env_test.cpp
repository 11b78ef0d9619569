// LaunchEnv parsing, device selection and the factory's refusals, without mpirun.
#include "distributed/launch_env.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "base/error.h"
#include "distributed/cuda/nccl_communicator.h"

namespace strata {
namespace {

struct ScopedEnv {
  ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> kv) {
    for (auto [k, v] : kv) {
      names.push_back(k);
      setenv(k, v, 1);
    }
  }
  ~ScopedEnv() {
    for (auto* k : names) unsetenv(k);
  }
  std::vector<const char*> names;
};

TEST(LaunchEnv, NotLaunchedIsSingleProcess) {
  LaunchEnv e = read_launch_env();
  EXPECT_EQ(e.source, "none");
  EXPECT_EQ(e.size, 1);
  EXPECT_EQ(make_communicator("auto")->backend(), "single");
}

TEST(LaunchEnv, ReadsOpenMpiVariables) {
  ScopedEnv env{{"OMPI_COMM_WORLD_RANK", "5"},
                {"OMPI_COMM_WORLD_SIZE", "8"},
                {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}};
  LaunchEnv e = read_launch_env();
  EXPECT_EQ(e.source, "ompi-env");
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.size, 8);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_size, 4);
}

TEST(LaunchEnv, MalformedOrInconsistentIsConfigError) {
  {
    ScopedEnv env{{"OMPI_COMM_WORLD_RANK", "x"}, {"OMPI_COMM_WORLD_SIZE", "2"}};
    EXPECT_THROW(read_launch_env(), ConfigError);
  }
  {
    ScopedEnv env{{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "2"}};
    EXPECT_THROW(read_launch_env(), ConfigError);
  }
}

TEST(LaunchEnv, DeviceIsLocalRankUnlessOverridden) {
  LaunchEnv e;
  e.local_rank = 1;
  e.local_size = 2;
  EXPECT_EQ(select_device(e, 2), 1);
  EXPECT_THROW(select_device(e, 1), CommError);  // two ranks, one GPU
  EXPECT_THROW(select_device(e, 0), CommError);
  ScopedEnv env{{"STRATA_DEVICE", "0"}};
  EXPECT_EQ(select_device(e, 1), 0);
}

TEST(LaunchEnv, UnknownBackendIsConfigError) { EXPECT_THROW(make_communicator("gloo"), ConfigError); }

TEST(LaunchEnv, NcclWithoutDeviceIsCommErrorWithReason) {
  NcclAvailability a = nccl_availability();
  if (a.ok)
    GTEST_SKIP() << "a CUDA device is present (" << a.device_count << "); this test covers its absence";
  try {
    make_communicator("nccl");
    FAIL() << "no throw";
  } catch (const CommError& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("nccl"), std::string::npos) << w;
    EXPECT_NE(w.find(a.reason), std::string::npos) << w;
  }
}

}  // namespace
}  // namespace strata
