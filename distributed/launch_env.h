// LaunchEnv: where this process sits in the job (rank, size, local rank/size),
// read from the launcher's environment, plus the device and communicator
// choices that follow from it. docs/launch.md lists the variables per launcher.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/communicator.h"
#include "kernels/runtime/device.h"

namespace strata {

struct LaunchEnv {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  // Which launcher's variables were read:
  //   "ompi-env"     Open MPI's mpirun / prterun (OMPI_COMM_WORLD_*)
  //   "torchrun-env" torchrun or a PyTorchJob (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE)
  //   "slurm-env"    a task of an srun step (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, ...)
  //   "mpi"          queried from MPI_COMM_WORLD after MPI_Init (PMI/PMIx without the above)
  //   "none"         not launched: a single process
  std::string source = "none";
  bool launched() const { return source != "none"; }
};

// Reads the variables of the launcher that started this process, first match wins:
//   1. OMPI_COMM_WORLD_RANK + _SIZE    (mpirun forked this rank itself; inside a Slurm
//      allocation its daemons run as an srun step, so the ranks also inherit that
//      step's SLURM_* variables, which describe the daemons, not the ranks)
//   2. RANK + WORLD_SIZE               (torchrun's workers; torchrun may itself run
//      under srun, one per node, with SLURM_* describing it)
//   3. SLURM_PROCID in an srun step    (SLURM_STEP_ID or SLURM_STEPID set and not one
//      of Slurm's special steps: a batch script has SLURM_PROCID=0 and SLURM_NTASKS=N
//      for one process, and is not believed)
//   4. PMI_RANK, PMI_SIZE, PMIX_RANK, or MPI already initialised: MPI is initialised
//      and MPI_COMM_WORLD (with a shared-memory split for the local figures) is asked
//   5. otherwise a single process (source "none").
// A missing local rank / local size is 0 / 1. A value that is not a non-negative
// integer, rank >= size or local rank >= local size is a ConfigError naming the
// variable and its value.
LaunchEnv read_launch_env();

// The variables say one thing, MPI another: throws ConfigError naming both (rank and
// size) and how to start the job so that they agree. Does nothing for source "none"
// (nothing was claimed) or when rank and size agree.
void check_launch_matches_mpi(const LaunchEnv& env, int mpi_rank, int mpi_size);

// The CUDA device for this process: STRATA_DEVICE when set, else the local rank
// modulo `device_count`, so that both one GPU per rank (8 ranks, 8 visible GPUs)
// and one visible GPU per task (CUDA_VISIBLE_DEVICES set per task by Slurm or
// Kubernetes) work. No device, or STRATA_DEVICE out of range, is a CommError that
// says which and why.
int select_device(const LaunchEnv& env, int device_count);

// Communicator factory. backend:
//   "auto"   MPI when launched with size > 1, else single process;
//   "single" SingleProcessCommunicator;
//   "mpi"    MpiCommunicator;
//   "nccl"   NcclCommunicator (one GPU per local rank); without CUDA/NCCL or a
//            device it throws CommError saying so (no fallback).
// For mpi and nccl (and auto with size > 1) the launch environment is checked
// against MPI_COMM_WORLD (check_launch_matches_mpi): torchrun's variables without
// mpirun or srun give a world of one per process, which is refused.
std::unique_ptr<Communicator> make_communicator(const std::string& backend = "auto");

// The backend a job uses, decided from facts every rank has (so every rank decides
// the same). `requested` is distributed.backend; `rank_has_gpu[r]` says whether rank
// r trains on a CUDA device (world_size entries; world_size is 1 when not launched).
//   auto   one process: single; several: nccl when every rank has a GPU, else mpi,
//          and when some ranks have one, `note` names the ranks without;
//   nccl   needs a GPU on every rank: ConfigError naming the first rank without;
//   single, mpi: as asked.
// An unknown name is a ConfigError listing the valid ones.
struct BackendDecision {
  std::string backend;  // "single", "mpi" or "nccl"
  std::string note;     // why auto did not pick NCCL; empty otherwise
};
BackendDecision decide_backend(const std::string& requested, int world_size,
                               const std::vector<bool>& rank_has_gpu);

// Communicator for a rank that trains on `device`. For auto and nccl on several
// ranks, each rank's device is allgathered over MPI first and decide_backend()
// applied; rank 0 prints its note (stderr). The NCCL communicator runs the
// collectives on device buffers over NCCL and those on host buffers (the trainer's
// metrics, model checks, broadcasts of host data) over its MPI communicator.
std::unique_ptr<Communicator> make_communicator(const std::string& backend, Device device);

}  // namespace strata
