// Blocking collectives over MPI. Every op runs on a private duplicate of the
// parent communicator with MPI_ERRORS_RETURN, is registered with the collective
// watchdog while it runs, and turns a failed MPI call into a CommError naming the
// op, its element count and dtype, and MPI's error string. Counts above 2^30 are
// split into several calls (MPI counts are int).
#include "distributed/mpi_communicator.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "base/error.h"
#include "distributed/mpi_async.h"
#include "distributed/mpi_detail.h"

namespace strata {
using namespace mpi_detail;

namespace {
std::once_flag g_init_once;
int g_thread_level = MPI_THREAD_SINGLE;

void finalize_at_exit() {
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) MPI_Finalize();
}

bool env_flag(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  std::string s = v;
  if (s == "1" || s == "true" || s == "on" || s == "yes") return true;
  if (s == "0" || s == "false" || s == "off" || s == "no") return false;
  throw ConfigError(std::string(name) + " must be 0 or 1, got '" + s + "'");
}
}  // namespace

int mpi_ensure_initialized() {
  std::call_once(g_init_once, [] {
    int init = 0;
    MPI_Initialized(&init);
    if (init) {
      MPI_Query_thread(&g_thread_level);
      return;
    }
    int err = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &g_thread_level);
    if (err != MPI_SUCCESS) throw CommError("MPI_Init_thread failed: " + error_string(err));
    std::atexit(finalize_at_exit);
  });
  return g_thread_level;
}

MpiOptions MpiOptions::from_env() {
  MpiOptions o;
  o.timeout_s = comm_timeout_from_env(o.timeout_s);
  if (const char* v = std::getenv("STRATA_MPI_HALF_REDUCE"); v && *v) {
    std::string s = v;
    if (s != "op" && s != "convert" && s != "auto")
      throw ConfigError("STRATA_MPI_HALF_REDUCE must be 'auto', 'convert' or 'op', got '" + s + "'");
    if (s != "auto") o.half_reduce_op = s == "op";
  }
  if (const char* v = std::getenv("STRATA_MPI_PROGRESS_THREAD"); v && *v)
    o.progress_thread = env_flag("STRATA_MPI_PROGRESS_THREAD", false);
  return o;
}

MpiCommunicator::MpiCommunicator(MpiOptions options, MPI_Comm parent)
    : options_(options),
      owner_(std::this_thread::get_id()),
      pre_abort_(std::make_shared<std::function<void()>>()) {
  thread_level_ = mpi_ensure_initialized();
  if (options_.progress_thread.value_or(false) && thread_level_ < MPI_THREAD_MULTIPLE)
    throw CommError(
        "STRATA_MPI_PROGRESS_THREAD needs MPI_THREAD_MULTIPLE, which this MPI library does not provide");
  int err = MPI_Comm_dup(parent, &comm_);
  if (err != MPI_SUCCESS) throw CommError("MPI_Comm_dup failed: " + error_string(err));
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  MPI_Comm shm;
  MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &shm);
  MPI_Comm_rank(shm, &local_rank_);
  MPI_Comm_size(shm, &local_size_);
  MPI_Comm_free(&shm);
  auto pre = pre_abort_;
  watchdog_ = std::make_shared<CollectiveWatchdog>(rank_, options_.timeout_s, [pre](const std::string&) {
    if (*pre) (*pre)();
    MPI_Abort(MPI_COMM_WORLD, kWatchdogExitCode);
  });
  half_op_ = options_.half_reduce_op.value_or(size_ == 2);
  if (options_.progress_thread.value_or(thread_level_ >= MPI_THREAD_MULTIPLE))
    progress_ = std::make_shared<MpiProgressEngine>();
}

void MpiCommunicator::set_pre_abort(std::function<void()> fn) { *pre_abort_ = std::move(fn); }

void MpiCommunicator::check_thread(const char* op) const {
  if (thread_level_ < MPI_THREAD_MULTIPLE && std::this_thread::get_id() != owner_)
    throw CommError(
        std::string(op) +
        ": called from a thread other than the one that created the MPI communicator, and MPI was "
        "initialised without MPI_THREAD_MULTIPLE");
}

void MpiCommunicator::fail(const char* mpi_call, const std::string& what, int err) const {
  throw CommError(std::string(mpi_call) + " failed on rank " + std::to_string(rank_) + " (" + what +
                  "): " + error_string(err));
}

void MpiCommunicator::allreduce(void* data, size_t count, DType dtype, ReduceOp op) {
  check_thread("allreduce");
  if (count == 0) return;
  if (op == ReduceOp::avg && !is_floating(dtype)) scale_by_inverse(data, 0, dtype, size_);  // throws
  std::string what = describe("allreduce", count, dtype, &op);
  CollectiveWatchdog::Scope guard(*watchdog_, what);
  bool half = is_half(dtype);
  bool convert = half && !half_op_;
  void* buf = data;
  MPI_Datatype type;
  MPI_Op mop = MPI_SUM;
  size_t esz = dtype_size(dtype);
  if (convert) {
    scratch_.resize(count);
    half_to_f32(dtype, data, scratch_.data(), count);
    buf = scratch_.data();
    type = MPI_FLOAT;
    esz = 4;
  } else if (half) {
    type = MPI_UINT16_T;
    mop = half_sum_op(dtype);
  } else {
    type = mpi_type(dtype);
  }
  for (size_t off = 0; off < count; off += kMaxCount) {
    int n = static_cast<int>(std::min(kMaxCount, count - off));
    int err = MPI_Allreduce(MPI_IN_PLACE, static_cast<char*>(buf) + off * esz, n, type, mop, comm_);
    if (err != MPI_SUCCESS) fail("MPI_Allreduce", what, err);
  }
  if (op == ReduceOp::avg && size_ > 1) scale_by_inverse(buf, count, convert ? DType::f32 : dtype, size_);
  if (convert) f32_to_half(dtype, scratch_.data(), data, count);
}

void MpiCommunicator::broadcast(void* data, size_t count, DType dtype, int root) {
  check_thread("broadcast");
  if (root < 0 || root >= size_)
    throw CommError("broadcast: root " + std::to_string(root) + " out of range for " + std::to_string(size_) +
                    " ranks");
  if (count == 0) return;
  std::string what = describe("broadcast", count, dtype) + " root=" + std::to_string(root);
  CollectiveWatchdog::Scope guard(*watchdog_, what);
  size_t bytes = count * dtype_size(dtype);
  for (size_t off = 0; off < bytes; off += kMaxCount) {
    int n = static_cast<int>(std::min(kMaxCount, bytes - off));
    int err = MPI_Bcast(static_cast<char*>(data) + off, n, MPI_BYTE, root, comm_);
    if (err != MPI_SUCCESS) fail("MPI_Bcast", what, err);
  }
}

void MpiCommunicator::allgather(const void* send, void* recv, size_t count, DType dtype) {
  check_thread("allgather");
  if (count == 0) return;
  std::string what = describe("allgather", count, dtype);
  size_t bytes = count * dtype_size(dtype);
  if (bytes > kMaxCount)
    throw CommError("allgather: " + what + " exceeds the per-rank limit of 2^30 bytes of one MPI call");
  CollectiveWatchdog::Scope guard(*watchdog_, what);
  char* mine = static_cast<char*>(recv) + static_cast<size_t>(rank_) * bytes;
  const void* src = send == mine ? MPI_IN_PLACE : send;
  int err =
      MPI_Allgather(src, static_cast<int>(bytes), MPI_BYTE, recv, static_cast<int>(bytes), MPI_BYTE, comm_);
  if (err != MPI_SUCCESS) fail("MPI_Allgather", what, err);
}

void MpiCommunicator::reduce_scatter(const void* send, void* recv, size_t count, DType dtype, ReduceOp op) {
  check_thread("reduce_scatter");
  if (count == 0) return;
  if (op == ReduceOp::avg && !is_floating(dtype)) scale_by_inverse(recv, 0, dtype, size_);  // throws
  std::string what = describe("reduce_scatter", count, dtype, &op);
  if (count * static_cast<size_t>(size_) > kMaxCount)
    throw CommError("reduce_scatter: " + what + " exceeds the limit of 2^30 elements per MPI call");
  CollectiveWatchdog::Scope guard(*watchdog_, what);
  bool half = is_half(dtype);
  bool convert = half && !half_op_;
  int err;
  if (convert) {
    size_t total = count * static_cast<size_t>(size_);
    scratch_.resize(total + count);
    half_to_f32(dtype, send, scratch_.data(), total);
    err = MPI_Reduce_scatter_block(scratch_.data(), scratch_.data() + total, static_cast<int>(count),
                                   MPI_FLOAT, MPI_SUM, comm_);
    if (err != MPI_SUCCESS) fail("MPI_Reduce_scatter_block", what, err);
    if (op == ReduceOp::avg) scale_by_inverse(scratch_.data() + total, count, DType::f32, size_);
    f32_to_half(dtype, scratch_.data() + total, recv, count);
    return;
  }
  MPI_Datatype type = half ? MPI_UINT16_T : mpi_type(dtype);
  MPI_Op mop = half ? half_sum_op(dtype) : MPI_SUM;
  err = MPI_Reduce_scatter_block(send, recv, static_cast<int>(count), type, mop, comm_);
  if (err != MPI_SUCCESS) fail("MPI_Reduce_scatter_block", what, err);
  if (op == ReduceOp::avg && size_ > 1) scale_by_inverse(recv, count, dtype, size_);
}

void MpiCommunicator::barrier() {
  check_thread("barrier");
  CollectiveWatchdog::Scope guard(*watchdog_, "barrier");
  int err = MPI_Barrier(comm_);
  if (err != MPI_SUCCESS) fail("MPI_Barrier", "barrier", err);
}

MpiCommunicator::~MpiCommunicator() {
  progress_.reset();  // joins the progress thread (handles keep their own reference)
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

}  // namespace strata
