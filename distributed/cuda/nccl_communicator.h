// The NCCL backend, declared without CUDA or NCCL headers so that plain C++ can
// ask for it. Implemented in distributed/cuda (CUDA builds) and in
// distributed/cuda_stub, whose factory says strata was built without CUDA/NCCL.
//
// NcclCommunicator: one GPU per local rank (STRATA_DEVICE overrides), the NCCL
// unique id broadcast over MPI, collectives on a private non-blocking stream that
// first waits for the caller's work on the legacy default stream. Buffers are
// device memory. f16/bf16 allreduce/reduce_scatter convert to an FP32 device
// buffer and reduce that (FP32 accumulation, as the Communicator promises).
// Blocking ops synchronise the stream; async allreduce records a CUDA event in
// its handle. The MPI collective watchdog covers every op and calls
// ncclCommAbort before MPI_Abort.
#pragma once
#include <memory>
#include <string>

#include "core/communicator.h"
#include "distributed/launch_env.h"

namespace strata {

struct NcclAvailability {
  bool ok = false;
  int device_count = 0;
  std::string reason;  // why NCCL cannot be used here (empty when ok)
};

// Built with CUDA/NCCL and at least one device visible?
NcclAvailability nccl_availability();

// Throws CommError with the reason when NCCL cannot be used (no silent fallback).
std::unique_ptr<Communicator> make_nccl_communicator(const LaunchEnv& env);

}  // namespace strata
