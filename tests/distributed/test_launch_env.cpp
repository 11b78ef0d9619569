// LaunchEnv: each launcher's variables (Open MPI, torchrun, srun), their
// precedence, the sbatch batch script that is not a launch, malformed values,
// the check against MPI_COMM_WORLD, device selection and the factory's refusals.
// Run without mpirun: each test sets the variables a launcher would.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "distributed/cuda/nccl_communicator.h"
#include "distributed/launch_env.h"

namespace strata {
namespace {

// Every variable read_launch_env() looks at. The fixture clears them before a test
// and restores them after, so a test sees only what it sets.
const char* const kLaunchVars[] = {"OMPI_COMM_WORLD_RANK",
                                   "OMPI_COMM_WORLD_SIZE",
                                   "OMPI_COMM_WORLD_LOCAL_RANK",
                                   "OMPI_COMM_WORLD_LOCAL_SIZE",
                                   "RANK",
                                   "WORLD_SIZE",
                                   "LOCAL_RANK",
                                   "LOCAL_WORLD_SIZE",
                                   "SLURM_PROCID",
                                   "SLURM_NTASKS",
                                   "SLURM_STEP_NUM_TASKS",
                                   "SLURM_LOCALID",
                                   "SLURM_NODEID",
                                   "SLURM_STEP_TASKS_PER_NODE",
                                   "SLURM_TASKS_PER_NODE",
                                   "SLURM_STEP_ID",
                                   "SLURM_STEPID",
                                   "PMI_RANK",
                                   "PMI_SIZE",
                                   "PMIX_RANK",
                                   "STRATA_DEVICE"};

class LaunchEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* k : kLaunchVars) {
      const char* v = std::getenv(k);
      saved_.emplace_back(k, v ? std::optional<std::string>(v) : std::nullopt);
      unsetenv(k);
    }
  }
  void TearDown() override {
    for (auto& [k, v] : saved_) v ? setenv(k, v->c_str(), 1) : unsetenv(k);
  }
  static void set(std::initializer_list<std::pair<const char*, const char*>> kv) {
    for (auto [k, v] : kv) setenv(k, v, 1);
  }
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

void expect_env(const LaunchEnv& e, const char* source, int rank, int size, int local_rank, int local_size) {
  EXPECT_EQ(e.source, source);
  EXPECT_EQ(e.rank, rank);
  EXPECT_EQ(e.size, size);
  EXPECT_EQ(e.local_rank, local_rank);
  EXPECT_EQ(e.local_size, local_size);
}

// read_launch_env() must throw ConfigError whose message holds every fragment.
void expect_config_error(std::initializer_list<const char*> fragments) {
  try {
    read_launch_env();
    ADD_FAILURE() << "no ConfigError";
  } catch (const ConfigError& e) {
    std::string w = e.what();
    for (const char* f : fragments) EXPECT_NE(w.find(f), std::string::npos) << "'" << f << "' not in: " << w;
  }
}

TEST_F(LaunchEnvTest, NotLaunchedIsSingleProcess) {
  expect_env(read_launch_env(), "none", 0, 1, 0, 1);
  EXPECT_EQ(make_communicator("auto")->backend(), "single");
}

TEST_F(LaunchEnvTest, ReadsOpenMpiVariables) {
  set({{"OMPI_COMM_WORLD_RANK", "5"},
       {"OMPI_COMM_WORLD_SIZE", "8"},
       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
  expect_env(read_launch_env(), "ompi-env", 5, 8, 1, 4);
}

TEST_F(LaunchEnvTest, ReadsTorchrunVariables) {
  set({{"RANK", "6"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "4"}});
  expect_env(read_launch_env(), "torchrun-env", 6, 8, 2, 4);
}

TEST_F(LaunchEnvTest, RankAloneIsNotALaunch) {
  set({{"RANK", "3"}});  // too common a name: torchrun always sets WORLD_SIZE beside it
  EXPECT_EQ(read_launch_env().source, "none");
}

// srun -n 11 over three nodes, block distribution: tasks 0-3, 4-7, 8-10.
TEST_F(LaunchEnvTest, ReadsSrunStepVariables) {
  set({{"SLURM_STEP_ID", "0"},
       {"SLURM_PROCID", "9"},
       {"SLURM_NTASKS", "11"},
       {"SLURM_LOCALID", "1"},
       {"SLURM_NODEID", "2"},
       {"SLURM_STEP_TASKS_PER_NODE", "4(x2),3"},
       {"SLURM_TASKS_PER_NODE", "8(x2)"}});  // the allocation's, not this step's
  expect_env(read_launch_env(), "slurm-env", 9, 11, 1, 3);
  set({{"SLURM_PROCID", "5"}, {"SLURM_NODEID", "1"}});
  expect_env(read_launch_env(), "slurm-env", 5, 11, 1, 4);
}

TEST_F(LaunchEnvTest, SrunStepFallsBackToOlderNames) {
  // SLURM_STEPID (older Slurm) and the job's SLURM_TASKS_PER_NODE; SLURM_STEP_NUM_TASKS wins over
  // SLURM_NTASKS
  set({{"SLURM_STEPID", "3"},
       {"SLURM_PROCID", "2"},
       {"SLURM_STEP_NUM_TASKS", "4"},
       {"SLURM_NTASKS", "16"},
       {"SLURM_LOCALID", "0"},
       {"SLURM_NODEID", "1"},
       {"SLURM_TASKS_PER_NODE", "2,2"}});
  expect_env(read_launch_env(), "slurm-env", 2, 4, 0, 2);
}

TEST_F(LaunchEnvTest, SbatchBatchScriptIsNotBelieved) {
  // the batch script of sbatch -N2 --ntasks-per-node=4: one process, yet SLURM_NTASKS=8
  set({{"SLURM_PROCID", "0"},
       {"SLURM_NTASKS", "8"},
       {"SLURM_LOCALID", "0"},
       {"SLURM_NODEID", "0"},
       {"SLURM_TASKS_PER_NODE", "4(x2)"}});
  expect_env(read_launch_env(), "none", 0, 1, 0, 1);
  EXPECT_EQ(make_communicator("auto")->backend(), "single");
  set({{"SLURM_STEP_ID", "4294967291"}});  // Slurm's batch step id (SLURM_BATCH_SCRIPT)
  EXPECT_EQ(read_launch_env().source, "none");
}

TEST_F(LaunchEnvTest, TheLauncherThatForkedTheProcessWins) {
  // mpirun inside an allocation starts its daemons as an srun step (one task per node):
  // the ranks inherit that step's SLURM_* and must not be read from them
  set({{"SLURM_STEP_ID", "1"},
       {"SLURM_PROCID", "1"},
       {"SLURM_NTASKS", "2"},
       {"SLURM_LOCALID", "0"},
       {"SLURM_NODEID", "1"},
       {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"}});
  set({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "4"}});
  expect_env(read_launch_env(), "torchrun-env", 5, 8, 1, 4);  // torchrun under srun, one per node
  set({{"OMPI_COMM_WORLD_RANK", "7"},
       {"OMPI_COMM_WORLD_SIZE", "8"},
       {"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
  expect_env(read_launch_env(), "ompi-env", 7, 8, 3, 4);
}

TEST_F(LaunchEnvTest, MalformedOpenMpiValues) {
  set({{"OMPI_COMM_WORLD_RANK", "x"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
  expect_config_error({"OMPI_COMM_WORLD_RANK", "'x'", "non-negative integer"});
  set({{"OMPI_COMM_WORLD_RANK", "2"}});
  expect_config_error({"OMPI_COMM_WORLD_RANK=2 is not below OMPI_COMM_WORLD_SIZE=2"});
  unsetenv("OMPI_COMM_WORLD_SIZE");
  expect_config_error({"OMPI_COMM_WORLD_SIZE is unset", "OMPI_COMM_WORLD_RANK is set"});
}

TEST_F(LaunchEnvTest, MalformedTorchrunValues) {
  set({{"RANK", "1"}, {"WORLD_SIZE", "two"}});
  expect_config_error({"WORLD_SIZE", "'two'"});
  set({{"WORLD_SIZE", "2"}, {"LOCAL_RANK", "-1"}});
  expect_config_error({"LOCAL_RANK", "'-1'"});
  set({{"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}});
  expect_config_error({"LOCAL_RANK=2 is not below LOCAL_WORLD_SIZE=2", "torchrun-env"});
  set({{"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "3"}});
  expect_config_error({"LOCAL_WORLD_SIZE=3 is not between 1 and WORLD_SIZE=2"});
  set({{"LOCAL_WORLD_SIZE", "1"}, {"WORLD_SIZE", "0"}, {"RANK", "0"}});
  expect_config_error({"WORLD_SIZE=0", "at least one process"});
}

TEST_F(LaunchEnvTest, MalformedSlurmValues) {
  set({{"SLURM_STEP_ID", "0"},
       {"SLURM_PROCID", "4"},
       {"SLURM_NTASKS", "4"},
       {"SLURM_LOCALID", "0"},
       {"SLURM_NODEID", "1"},
       {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"}});
  expect_config_error({"SLURM_PROCID=4 is not below SLURM_NTASKS=4", "slurm-env"});
  set({{"SLURM_PROCID", "3"}, {"SLURM_LOCALID", "2"}});
  expect_config_error({"SLURM_LOCALID=2 is not below SLURM_STEP_TASKS_PER_NODE[SLURM_NODEID=1]=2"});
  set({{"SLURM_LOCALID", "1"}, {"SLURM_NODEID", "2"}});
  expect_config_error({"SLURM_STEP_TASKS_PER_NODE='2(x2)'", "lists 2 node(s)", "SLURM_NODEID=2"});
  for (const char* bad : {"2(x2", "2(x)", "(x2)", "2,", "2;2", "0(x2)"}) {
    set({{"SLURM_NODEID", "0"}, {"SLURM_STEP_TASKS_PER_NODE", bad}});
    expect_config_error({"SLURM_STEP_TASKS_PER_NODE='", bad, "expected counts like"});
  }
  set({{"SLURM_STEP_TASKS_PER_NODE", "2(x2)"}, {"SLURM_STEP_ID", "zero"}});
  expect_config_error({"SLURM_STEP_ID", "'zero'"});
  set({{"SLURM_STEP_ID", "0"}});
  unsetenv("SLURM_NTASKS");
  expect_config_error({"srun step without SLURM_STEP_NUM_TASKS or SLURM_NTASKS"});
}

TEST_F(LaunchEnvTest, LaunchThatMpiDoesNotConfirmIsRefused) {
  LaunchEnv torchrun{.rank = 1, .size = 2, .local_rank = 1, .local_size = 2, .source = "torchrun-env"};
  try {
    check_launch_matches_mpi(torchrun, 0, 1);
    ADD_FAILURE() << "no ConfigError";
  } catch (const ConfigError& e) {
    std::string w = e.what();
    for (const char* f : {"torchrun-env", "rank 1 of 2", "rank 0 of 1", "mpirun -np N", "srun --mpi=pmix"})
      EXPECT_NE(w.find(f), std::string::npos) << "'" << f << "' not in: " << w;
  }
  EXPECT_NO_THROW(check_launch_matches_mpi(torchrun, 1, 2));
  EXPECT_NO_THROW(check_launch_matches_mpi(LaunchEnv{}, 3, 4));  // nothing claimed
  LaunchEnv slurm = torchrun;
  slurm.source = "slurm-env";
  EXPECT_THROW(check_launch_matches_mpi(slurm, 0, 2), ConfigError);  // same size, another rank
}

// The real thing: torchrun's variables, MPI_Init without mpirun (a singleton world
// of one). In a child process, so that this process never initialises MPI.
TEST_F(LaunchEnvTest, TorchrunWithoutMpiFailsAtCommunicatorCreation) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the child re-runs this test alone
  set({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"}});
  EXPECT_EXIT(
      {
        try {
          make_communicator("auto");
        } catch (const ConfigError& e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::_Exit(3);
        }
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(3), "torchrun-env. says rank 1 of 2, but MPI_COMM_WORLD .* rank 0 of 1");
}

TEST_F(LaunchEnvTest, DeviceIsLocalRankModuloVisibleDevices) {
  LaunchEnv e;
  e.local_size = 8;
  for (int r = 0; r < 8; ++r) {
    e.local_rank = r;
    EXPECT_EQ(select_device(e, 8), r);  // one GPU per rank
    EXPECT_EQ(select_device(e, 1), 0);  // one visible GPU per task (CUDA_VISIBLE_DEVICES)
    EXPECT_EQ(select_device(e, 4), r % 4);
  }
  try {
    select_device(e, 0);
    ADD_FAILURE() << "no CommError";
  } catch (const CommError& err) {
    EXPECT_NE(std::string(err.what()).find("no CUDA device visible"), std::string::npos) << err.what();
  }
}

TEST_F(LaunchEnvTest, StrataDeviceOverridesAndIsChecked) {
  LaunchEnv e;
  e.local_rank = 3;
  e.local_size = 4;
  set({{"STRATA_DEVICE", "1"}});
  EXPECT_EQ(select_device(e, 2), 1);
  set({{"STRATA_DEVICE", "2"}});
  try {
    select_device(e, 2);
    ADD_FAILURE() << "no CommError";
  } catch (const CommError& err) {
    std::string w = err.what();
    EXPECT_NE(w.find("STRATA_DEVICE=2 is out of range: 2 CUDA device(s) visible"), std::string::npos) << w;
  }
  set({{"STRATA_DEVICE", "gpu1"}});
  EXPECT_THROW(select_device(e, 2), ConfigError);
}

TEST_F(LaunchEnvTest, UnknownBackendIsConfigError) { EXPECT_THROW(make_communicator("gloo"), ConfigError); }

TEST_F(LaunchEnvTest, NcclWithoutDeviceIsCommErrorWithReason) {
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
