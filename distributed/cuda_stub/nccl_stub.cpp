// Built when strata is configured without CUDA: the NCCL backend says so.
#include "base/error.h"
#include "distributed/cuda/nccl_communicator.h"

namespace strata {

NcclAvailability nccl_availability() {
  NcclAvailability a;
  a.reason = "strata was built without CUDA/NCCL (STRATA_CUDA=OFF or no nvcc at configure time)";
  return a;
}

std::unique_ptr<Communicator> make_nccl_communicator(const LaunchEnv&) {
  throw CommError("backend 'nccl': " + nccl_availability().reason);
}

std::unique_ptr<Communicator> make_single_rank_nccl_communicator() {
  throw CommError("backend 'nccl' (one rank): " + nccl_availability().reason);
}

}  // namespace strata
