// distributed.backend: the pure decision (a table of cases: world size, which
// ranks have a GPU, what was asked) and the two-argument factory in one
// process. Run without mpirun.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "base/error.h"
#include "distributed/launch_env.h"

namespace strata {
namespace {

struct Case {
  std::string requested;
  int world;
  std::vector<bool> gpus;
  std::string backend;  // expected; "" = ConfigError
  std::string note;     // expected substring of the note ("" = no note)
};

TEST(BackendChoice, DecisionTable) {
  const std::vector<Case> cases = {
      // auto: one process is single whatever its device
      {"auto", 1, {false}, "single", ""},
      {"auto", 1, {true}, "single", ""},
      // auto, several ranks: NCCL only when every rank has a GPU
      {"auto", 2, {true, true}, "nccl", ""},
      {"auto", 4, {true, true, true, true}, "nccl", ""},
      {"auto", 2, {false, false}, "mpi", ""},  // a CPU job: no note
      {"auto", 4, {true, true, true, false}, "mpi", "rank 3 has no GPU (device cpu), so all 4 ranks"},
      {"auto", 3, {false, true, true}, "mpi", "rank 0 has no GPU"},
      {"auto", 4, {true, false, true, false}, "mpi", "ranks 1, 3 have no GPU"},
      {"auto", 12, std::vector<bool>(12, false), "mpi", ""},
      {"auto",
       12,
       {true, false, false, false, false, false, false, false, false, false, false, false},
       "mpi",
       "ranks 1, 2, 3, 4, 5, 6, 7, 8, ... (11 in all) have no GPU"},
      // explicit choices are taken as they are ...
      {"mpi", 2, {true, true}, "mpi", ""},
      {"mpi", 1, {false}, "mpi", ""},
      {"single", 4, {true, true, true, true}, "single", ""},
      {"nccl", 1, {true}, "nccl", ""},
      {"nccl", 2, {true, true}, "nccl", ""},
      // ... except NCCL where a rank has no GPU, and unknown names
      {"nccl", 2, {true, false}, "", ""},
      {"nccl", 1, {false}, "", ""},
      {"gloo", 2, {true, true}, "", ""},
      {"", 1, {false}, "", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.requested + " world " + std::to_string(c.world));
    if (c.backend.empty()) {
      EXPECT_THROW(decide_backend(c.requested, c.world, c.gpus), ConfigError);
      continue;
    }
    BackendDecision d = decide_backend(c.requested, c.world, c.gpus);
    EXPECT_EQ(d.backend, c.backend);
    if (c.note.empty())
      EXPECT_EQ(d.note, "");
    else
      EXPECT_NE(d.note.find(c.note), std::string::npos) << d.note;
  }
}

TEST(BackendChoice, ErrorsNameTheKeyAndTheRank) {
  try {
    decide_backend("nccl", 4, {true, true, false, true});
    FAIL() << "no throw";
  } catch (const ConfigError& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("distributed.backend=nccl: rank 2 trains on the CPU"), std::string::npos) << w;
  }
  try {
    decide_backend("gloo", 1, {false});
    FAIL() << "no throw";
  } catch (const ConfigError& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("distributed.backend: unknown communicator backend 'gloo'"), std::string::npos) << w;
  }
}

TEST(BackendChoice, OneProcessFactory) {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "RANK", "WORLD_SIZE", "SLURM_PROCID",
                        "PMI_RANK", "PMI_SIZE", "PMIX_RANK"})
    unsetenv(v);
  EXPECT_EQ(make_communicator("auto", Device::cpu)->backend(), "single");
  EXPECT_EQ(make_communicator("auto", Device::cuda)->backend(), "single");  // nothing to reduce
  EXPECT_EQ(make_communicator("single", Device::cuda)->backend(), "single");
  EXPECT_THROW(make_communicator("nccl", Device::cpu), ConfigError);
  EXPECT_THROW(make_communicator("gloo", Device::cpu), ConfigError);
}

}  // namespace
}  // namespace strata
