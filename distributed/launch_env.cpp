#include "distributed/launch_env.h"

#include <mpi.h>

#include <cstdlib>

#include "base/error.h"
#include "distributed/cuda/nccl_communicator.h"
#include "distributed/mpi_communicator.h"

namespace strata {
namespace {

// -1 when unset; ConfigError when set but not a non-negative integer.
int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return -1;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > 1 << 30)
    throw ConfigError(std::string(name) + " must be a non-negative integer, got '" + v + "'");
  return static_cast<int>(x);
}

bool mpi_is_initialized() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

}  // namespace

LaunchEnv read_launch_env() {
  LaunchEnv e;
  int rank = env_int("OMPI_COMM_WORLD_RANK"), size = env_int("OMPI_COMM_WORLD_SIZE");
  if (rank >= 0 && size >= 0) {
    e.rank = rank;
    e.size = size;
    e.local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK");
    e.local_size = env_int("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (e.local_rank < 0) e.local_rank = 0;
    if (e.local_size < 0) e.local_size = 1;
    if (size < 1 || rank >= size || e.local_rank >= e.local_size || e.local_size > size)
      throw ConfigError("inconsistent Open MPI environment: OMPI_COMM_WORLD_RANK=" + std::to_string(rank) +
                        " SIZE=" + std::to_string(size) + " LOCAL_RANK=" + std::to_string(e.local_rank) +
                        " LOCAL_SIZE=" + std::to_string(e.local_size));
    e.source = "ompi-env";
    return e;
  }
  bool other_launcher = std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_RANK");
  if (mpi_is_initialized() || other_launcher) {
    mpi_ensure_initialized();
    MPI_Comm_rank(MPI_COMM_WORLD, &e.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &e.size);
    MPI_Comm shm;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, e.rank, MPI_INFO_NULL, &shm);
    MPI_Comm_rank(shm, &e.local_rank);
    MPI_Comm_size(shm, &e.local_size);
    MPI_Comm_free(&shm);
    e.source = "mpi";
  }
  return e;
}

int select_device(const LaunchEnv& env, int device_count) {
  int dev = env_int("STRATA_DEVICE");
  const char* why = "STRATA_DEVICE";
  if (dev < 0) {
    dev = env.local_rank;
    why = "local rank";
  }
  if (device_count <= 0)
    throw CommError("rank " + std::to_string(env.rank) + ": no CUDA device visible (device count 0)");
  if (dev >= device_count)
    throw CommError("rank " + std::to_string(env.rank) + ": device " + std::to_string(dev) + " (from " + why +
                    ") is out of range: " + std::to_string(device_count) +
                    " CUDA device(s) visible; run at most one rank per GPU per node or set STRATA_DEVICE");
  return dev;
}

std::unique_ptr<Communicator> make_communicator(const std::string& backend) {
  if (backend == "single") return std::make_unique<SingleProcessCommunicator>();
  if (backend == "mpi") return std::make_unique<MpiCommunicator>();
  if (backend == "nccl") return make_nccl_communicator(read_launch_env());
  if (backend == "auto") {
    LaunchEnv e = read_launch_env();
    if (e.launched() && e.size > 1) return std::make_unique<MpiCommunicator>();
    return std::make_unique<SingleProcessCommunicator>();
  }
  throw ConfigError("unknown communicator backend '" + backend + "' (expected auto, single, mpi or nccl)");
}

}  // namespace strata
