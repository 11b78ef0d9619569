// The NCCL communicator a gpu test binary runs its suite on, made once per
// process, or null with the reason to skip. Built with STRATA_NCCL_SINGLE_RANK:
// one rank bootstrapped without MPI (make_single_rank_nccl_communicator), what
// a GPU machine without an MPI runtime can run. Otherwise make() on every rank,
// given a device per local rank: every rank of a node sees the same devices, so
// all ranks skip alike.
#pragma once
#include <memory>
#include <string>

#include "core/communicator.h"
#include "distributed/cuda/nccl_communicator.h"
#include "distributed/launch_env.h"

namespace strata::testing {

template <typename Make>
Communicator* nccl_test_comm(std::string& why, Make&& make) {
  static std::unique_ptr<Communicator> c;
  static std::string reason;
  static bool tried = false;
  if (!tried) {
    tried = true;
    NcclAvailability a = nccl_availability();
    if (!a.ok) {
      reason = a.reason;
    } else {
#ifdef STRATA_NCCL_SINGLE_RANK
      c = make_single_rank_nccl_communicator();
#else
      LaunchEnv e = read_launch_env();
      if (a.device_count < e.local_size)
        reason = std::to_string(e.local_size) + " local ranks need as many CUDA devices; " +
                 std::to_string(a.device_count) + " visible";
      else
        c = make();
#endif
    }
  }
  why = reason;
  return c.get();
}

}  // namespace strata::testing
