// decide_backend() and make_communicator(backend, device) (see launch_env.h):
// which communicator a job uses, from every rank's device.
#include <cstdint>
#include <cstdio>

#include "base/error.h"
#include "distributed/cuda/nccl_communicator.h"
#include "distributed/launch_env.h"
#include "distributed/mpi_communicator.h"

namespace strata {
namespace {

std::unique_ptr<Communicator> checked_against_mpi(std::unique_ptr<Communicator> c, const LaunchEnv& e) {
  check_launch_matches_mpi(e, c->rank(), c->size());
  return c;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size() && i < 8; ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > 8) s += ", ... (" + std::to_string(ranks.size()) + " in all)";
  return s;
}

}  // namespace

BackendDecision decide_backend(const std::string& requested, int world_size,
                               const std::vector<bool>& rank_has_gpu) {
  if (requested != "auto" && requested != "single" && requested != "mpi" && requested != "nccl")
    throw ConfigError("distributed.backend: unknown communicator backend '" + requested +
                      "' (expected auto, single, mpi or nccl)");
  if (requested == "single" || requested == "mpi") return {requested, ""};
  std::vector<int> without;
  for (int r = 0; r < world_size; ++r)
    if (static_cast<size_t>(r) >= rank_has_gpu.size() || !rank_has_gpu[static_cast<size_t>(r)])
      without.push_back(r);
  if (requested == "nccl") {
    if (!without.empty())
      throw ConfigError("distributed.backend=nccl: rank " + std::to_string(without[0]) +
                        " trains on the CPU (device cpu), and NCCL reduces device memory: use device: cuda "
                        "on every rank, or distributed.backend=mpi");
    return {"nccl", ""};
  }
  if (world_size <= 1) return {"single", ""};
  if (without.empty()) return {"nccl", ""};
  if (without.size() == static_cast<size_t>(world_size)) return {"mpi", ""};  // a CPU job: nothing to explain
  return {"mpi", "distributed.backend=auto: rank" + std::string(without.size() > 1 ? "s " : " ") +
                     rank_list(without) + (without.size() > 1 ? " have" : " has") +
                     " no GPU (device cpu), so all " + std::to_string(world_size) +
                     " ranks reduce gradients over MPI instead of NCCL"};
}

std::unique_ptr<Communicator> make_communicator(const std::string& backend, Device device) {
  if (backend != "auto" && backend != "nccl") {
    decide_backend(backend, 1, {});  // an unknown name is refused here, with the key's name
    return make_communicator(backend);
  }
  LaunchEnv e = read_launch_env();
  const int world = e.launched() ? e.size : 1;
  const bool mine = device == Device::cuda;
  if (world == 1) {
    BackendDecision d = decide_backend(backend, 1, {mine});
    if (d.backend == "single") return std::make_unique<SingleProcessCommunicator>();
    return checked_against_mpi(make_nccl_communicator(e), e);
  }
  // Every rank learns every rank's device over MPI, so all of them decide alike.
  auto mpi = checked_against_mpi(std::make_unique<MpiCommunicator>(), e);
  int32_t has = mine ? 1 : 0;
  std::vector<int32_t> all(static_cast<size_t>(mpi->size()));
  mpi->allgather(&has, all.data(), 1, DType::i32);
  std::vector<bool> gpus(all.begin(), all.end());
  BackendDecision d = decide_backend(backend, mpi->size(), gpus);
  if (!d.note.empty() && mpi->rank() == 0) std::fprintf(stderr, "strata: %s\n", d.note.c_str());
  if (d.backend == "mpi") return mpi;
  mpi.reset();  // the NCCL communicator bootstraps over an MPI communicator of its own
  return checked_against_mpi(make_nccl_communicator(e), e);
}

}  // namespace strata
