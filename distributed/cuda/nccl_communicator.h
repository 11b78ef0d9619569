// The NCCL backend, declared without CUDA or NCCL headers so that plain C++ can
// ask for it. Implemented in distributed/cuda (CUDA builds) and in
// distributed/cuda_stub, whose factory says strata was built without CUDA/NCCL.
//
// NcclCommunicator: one GPU per local rank (STRATA_DEVICE overrides), the NCCL
// unique id broadcast over MPI. Collectives on device (or managed) memory run on
// NCCL, on a private non-blocking stream that first waits by event for the
// caller's work on the compute stream (kernels/cuda/context.h) and on the legacy
// default stream; it is a StreamOrderedCommunicator (stream_order.h).
// Collectives on host memory -- the trainer's metric sums, model checks,
// broadcasts of host data -- go to the MPI communicator it bootstraps over, so
// every rank must give the same kind of memory to the same collective.
// f16/bf16: NCCL reduces them as they are by default (half the bytes; NCCL's own
// kernels round each partial sum to 16 bits), or, with
// STRATA_NCCL_HALF_REDUCE=convert, through an FP32 device copy (FP32
// accumulation). Blocking ops synchronise the stream; async allreduce records a
// CUDA event in its handle (a StreamOrderedHandle). The MPI collective watchdog
// covers every op (an async one until the device has finished it) and calls
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

// One rank on one GPU with no MPI at all: NCCL's unique id stays in the process,
// host buffers go to a SingleProcessCommunicator, a watchdog of its own ends a
// stalled collective (ncclCommAbort, then exit 70). The same collectives, on
// NCCL's own kernels, as the MPI-bootstrapped communicator: what a GPU machine
// without an MPI runtime can run (test_nccl_single_rank, tests/distributed/test_nccl_communicator.cpp).
std::unique_ptr<Communicator> make_single_rank_nccl_communicator();

}  // namespace strata
