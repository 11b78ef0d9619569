// LaunchEnv: where this process sits in the job (rank, size, local rank/size),
// read from the launcher's environment, plus the device and communicator
// choices that follow from it.
#pragma once
#include <memory>
#include <string>

#include "core/communicator.h"

namespace strata {

struct LaunchEnv {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  // "ompi-env" (OMPI_COMM_WORLD_*), "mpi" (queried after MPI_Init), "none" (not launched).
  std::string source = "none";
  bool launched() const { return source != "none"; }
};

// Open MPI's OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE} when set. Otherwise,
// when MPI is already initialised or another launcher's variables are present
// (PMI_SIZE, PMIX_RANK), initialises MPI and queries MPI_COMM_WORLD and a
// shared-memory split. Otherwise a single process (source "none").
// Malformed or inconsistent variables are a ConfigError.
LaunchEnv read_launch_env();

// The CUDA device for this process: STRATA_DEVICE when set, else the local rank.
// Checked against `device_count`; out of range (or no device) is a CommError that
// says which and why.
int select_device(const LaunchEnv& env, int device_count);

// Communicator factory. backend:
//   "auto"   MPI when launched (size > 1), else single process;
//   "single" SingleProcessCommunicator;
//   "mpi"    MpiCommunicator;
//   "nccl"   NcclCommunicator (one GPU per local rank); without CUDA/NCCL or a
//            device it throws CommError saying so (no fallback).
std::unique_ptr<Communicator> make_communicator(const std::string& backend = "auto");

}  // namespace strata
