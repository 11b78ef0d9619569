#include "distributed/launch_env.h"

#include <mpi.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "base/error.h"
#include "distributed/cuda/nccl_communicator.h"
#include "distributed/mpi_communicator.h"

namespace strata {
namespace {

constexpr long long kMaxCount = 1 << 30;

const char* env_str(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// A non-negative integer up to `max`, or -1 when malformed.
long long parse_count(std::string_view s, long long max = kMaxCount) {
  long long x = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
  if (ec != std::errc() || end != s.data() + s.size() || x < 0 || x > max) return -1;
  return x;
}

// -1 when unset; ConfigError when set but not a non-negative integer.
int env_int(const char* name) {
  const char* v = env_str(name);
  if (!v) return -1;
  long long x = parse_count(v);
  if (x < 0) throw ConfigError(std::string(name) + " must be a non-negative integer, got '" + v + "'");
  return static_cast<int>(x);
}

std::string show(const std::string& name, int value) { return name + "=" + std::to_string(value); }

// Names of the variables each figure came from, for the messages.
struct VarNames {
  std::string rank, size, local_rank, local_size;
};

void check_consistent(const LaunchEnv& e, const VarNames& n) {
  std::string where = " (launch environment " + e.source + ")";
  if (e.size < 1) throw ConfigError(show(n.size, e.size) + ": a job has at least one process" + where);
  if (e.rank >= e.size)
    throw ConfigError(show(n.rank, e.rank) + " is not below " + show(n.size, e.size) + where);
  if (e.local_size < 1 || e.local_size > e.size)
    throw ConfigError(show(n.local_size, e.local_size) + " is not between 1 and " + show(n.size, e.size) +
                      where);
  if (e.local_rank >= e.local_size)
    throw ConfigError(show(n.local_rank, e.local_rank) + " is not below " + show(n.local_size, e.local_size) +
                      where);
}

// A launcher that names the four figures directly (Open MPI, torchrun).
LaunchEnv from_vars(const char* source, const VarNames& n) {
  LaunchEnv e;
  e.source = source;
  e.rank = env_int(n.rank.c_str());
  e.size = env_int(n.size.c_str());
  if (e.rank < 0 || e.size < 0)
    throw ConfigError(std::string(e.rank < 0 ? n.rank : n.size) + " is unset but " +
                      (e.rank < 0 ? n.size : n.rank) + " is set (launch environment " + source + ")");
  e.local_rank = std::max(env_int(n.local_rank.c_str()), 0);
  int local_size = env_int(n.local_size.c_str());
  e.local_size = local_size < 0 ? 1 : local_size;
  check_consistent(e, n);
  return e;
}

// The tasks on node `node_id` from Slurm's per-node task counts, run-length
// encoded: "4(x2),3" is 4, 4 and 3 tasks on nodes 0, 1 and 2.
int tasks_on_node(const char* var, const std::string& value, int node_id) {
  auto bad = [&](const std::string& why) {
    return ConfigError(std::string(var) + "='" + value + "': " + why + " (expected counts like '4(x2),3')");
  };
  long long first = 0;  // node id of the item's first node
  int tasks = -1;       // the answer, once found; the rest is still checked
  for (size_t pos = 0; pos <= value.size();) {
    size_t end = std::min(value.find(',', pos), value.size());
    std::string_view item(value.data() + pos, end - pos);
    long long repeat = 1;
    if (size_t paren = item.find("(x"); paren != std::string_view::npos) {
      if (item.back() != ')') throw bad("malformed item '" + std::string(item) + "'");
      repeat = parse_count(item.substr(paren + 2, item.size() - paren - 3));
      item = item.substr(0, paren);
    }
    long long count = parse_count(item);
    if (count < 1 || repeat < 1) throw bad("malformed item '" + std::string(value, pos, end - pos) + "'");
    if (tasks < 0 && node_id < first + repeat) tasks = static_cast<int>(count);
    first += repeat;
    pos = end + 1;
  }
  if (tasks < 0)
    throw bad("it lists " + std::to_string(first) + " node(s), but SLURM_NODEID=" + std::to_string(node_id));
  return tasks;
}

// Tasks started by srun run in a job step; a batch script (sbatch) runs in Slurm's
// batch step, which has no SLURM_STEP_ID, or one of the special step ids Slurm
// numbers from 0xfffffff0 up (batch, extern, interactive, pending).
bool in_srun_step() {
  const char* name = env_str("SLURM_STEP_ID") ? "SLURM_STEP_ID" : "SLURM_STEPID";
  const char* v = env_str(name);
  if (!v) return false;
  long long id = parse_count(v, 0xffffffffLL);
  if (id < 0) throw ConfigError(std::string(name) + " must be a non-negative integer, got '" + v + "'");
  return id < 0xfffffff0LL;
}

std::optional<LaunchEnv> from_slurm_step() {
  if (!env_str("SLURM_PROCID") || !in_srun_step()) return std::nullopt;
  LaunchEnv e;
  e.source = "slurm-env";
  VarNames n{"SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", "SLURM_STEP_TASKS_PER_NODE"};
  if (!env_str(n.size.c_str())) n.size = "SLURM_NTASKS";
  if (!env_str(n.local_size.c_str())) n.local_size = "SLURM_TASKS_PER_NODE";
  e.rank = env_int("SLURM_PROCID");
  e.size = env_int(n.size.c_str());
  if (e.size < 0)
    throw ConfigError(
        "srun step without SLURM_STEP_NUM_TASKS or SLURM_NTASKS (launch environment slurm-env)");
  e.local_rank = std::max(env_int("SLURM_LOCALID"), 0);
  if (const char* per_node = env_str(n.local_size.c_str())) {
    int node = std::max(env_int("SLURM_NODEID"), 0);
    e.local_size = tasks_on_node(n.local_size.c_str(), per_node, node);
    n.local_size += "[SLURM_NODEID=" + std::to_string(node) + "]";
  }
  check_consistent(e, n);
  return e;
}

bool mpi_is_initialized() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

LaunchEnv from_mpi_world() {
  LaunchEnv e;
  mpi_ensure_initialized();
  MPI_Comm_rank(MPI_COMM_WORLD, &e.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &e.size);
  MPI_Comm shm;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, e.rank, MPI_INFO_NULL, &shm);
  MPI_Comm_rank(shm, &e.local_rank);
  MPI_Comm_size(shm, &e.local_size);
  MPI_Comm_free(&shm);
  e.source = "mpi";
  return e;
}

// What to do about a mismatch, per launcher.
std::string launch_hint(const std::string& source) {
  if (source == "torchrun-env")
    return "torchrun starts its workers without MPI, so each one is a world of its own; strata's "
           "collectives run over MPI (NCCL is bootstrapped over it): start the job with mpirun -np N "
           "(scripts/strata-mpirun on one node) or srun --mpi=pmix instead";
  if (source == "slurm-env")
    return "srun started the tasks without a PMI that this MPI understands: use srun --mpi=pmix "
           "(srun --mpi=list shows what the cluster offers) or mpirun inside the allocation";
  return "the process was started by a different MPI than the one strata is linked with, or the "
         "variables were set by hand: start it with this MPI's mpirun or with srun --mpi=pmix";
}

std::unique_ptr<Communicator> checked(std::unique_ptr<Communicator> c, const LaunchEnv& e) {
  check_launch_matches_mpi(e, c->rank(), c->size());
  return c;
}

}  // namespace

LaunchEnv read_launch_env() {
  if (env_str("OMPI_COMM_WORLD_RANK") || env_str("OMPI_COMM_WORLD_SIZE"))
    return from_vars("ompi-env", {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                                  "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"});
  // RANK alone is too common a name to claim a launch; torchrun always sets both.
  if (env_str("RANK") && env_str("WORLD_SIZE"))
    return from_vars("torchrun-env", {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"});
  if (auto e = from_slurm_step()) return *e;
  bool pmi = env_str("PMI_SIZE") || env_str("PMI_RANK") || env_str("PMIX_RANK");
  if (pmi || mpi_is_initialized()) return from_mpi_world();
  return LaunchEnv{};
}

void check_launch_matches_mpi(const LaunchEnv& env, int mpi_rank, int mpi_size) {
  if (!env.launched() || (env.rank == mpi_rank && env.size == mpi_size)) return;
  throw ConfigError("the launch environment (" + env.source + ") says rank " + std::to_string(env.rank) +
                    " of " + std::to_string(env.size) + ", but MPI_COMM_WORLD after MPI_Init has rank " +
                    std::to_string(mpi_rank) + " of " + std::to_string(mpi_size) + ": " +
                    launch_hint(env.source) + " (docs/launch.md)");
}

int select_device(const LaunchEnv& env, int device_count) {
  if (device_count <= 0)
    throw CommError("rank " + std::to_string(env.rank) + ": no CUDA device visible (device count 0)");
  int dev = env_int("STRATA_DEVICE");
  if (dev < 0) return env.local_rank % device_count;
  if (dev >= device_count)
    throw CommError("rank " + std::to_string(env.rank) + ": STRATA_DEVICE=" + std::to_string(dev) +
                    " is out of range: " + std::to_string(device_count) +
                    " CUDA device(s) visible (CUDA_VISIBLE_DEVICES renumbers them from 0)");
  return dev;
}

std::unique_ptr<Communicator> make_communicator(const std::string& backend) {
  if (backend == "single") return std::make_unique<SingleProcessCommunicator>();
  if (backend == "mpi") {
    LaunchEnv e = read_launch_env();
    return checked(std::make_unique<MpiCommunicator>(), e);
  }
  if (backend == "nccl") {
    LaunchEnv e = read_launch_env();
    return checked(make_nccl_communicator(e), e);
  }
  if (backend == "auto") {
    LaunchEnv e = read_launch_env();
    if (e.launched() && e.size > 1) return checked(std::make_unique<MpiCommunicator>(), e);
    return std::make_unique<SingleProcessCommunicator>();
  }
  throw ConfigError("unknown communicator backend '" + backend + "' (expected auto, single, mpi or nccl)");
}

}  // namespace strata
