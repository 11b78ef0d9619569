// MpiCommunicator: the Communicator over MPI on host buffers.
//
// Threading: MPI is initialised with MPI_THREAD_MULTIPLE when the library offers
// it (Debian's Open MPI 4.1 does). Otherwise it runs FUNNELED: every call must
// come from the thread that built the communicator, which is checked (CommError),
// and the progress thread is unavailable. The watchdog thread only ever calls
// MPI_Abort, which Open MPI honours from any thread.
//
// f16/bf16 are reduced with FP32 accumulation: by default each rank converts to
// an FP32 scratch buffer, reduces that, and converts back ("convert": exact FP32
// sums, twice the bytes on the wire). "op" instead reduces the 16-bit data with a
// custom MPI_Op that adds in FP32 but rounds each partial sum to 16 bits (half
// the bytes, one rounding per reduction step). STRATA_MPI_HALF_REDUCE picks.
#pragma once
#include <mpi.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/communicator.h"
#include "distributed/collective_watchdog.h"

namespace strata {

// MPI_Init_thread(MPI_THREAD_MULTIPLE) once per process unless the application
// already initialised MPI; MPI_Finalize runs at exit when strata initialised it.
// Returns the thread level provided.
int mpi_ensure_initialized();

class MpiProgressEngine;

struct MpiOptions {
  double timeout_s = 60.0;  // collective watchdog; 0 disables (env STRATA_COMM_TIMEOUT)
  // f16/bf16: true = custom 16-bit MPI_Op, false = convert to FP32. Unset: the op on
  // 2 ranks (one add per element, so bitwise the same as FP32 accumulation, half the
  // bytes), convert otherwise. Env STRATA_MPI_HALF_REDUCE=auto|convert|op.
  std::optional<bool> half_reduce_op;
  // Drive async requests from a thread. Unset: on when MPI_THREAD_MULTIPLE is provided
  // (it hid the most in strata-bench allreduce_overlap). Env STRATA_MPI_PROGRESS_THREAD=0|1.
  std::optional<bool> progress_thread;
  static MpiOptions from_env();  // malformed values are a ConfigError
};

class MpiCommunicator final : public Communicator {
 public:
  // Duplicates `parent` so that strata's traffic never matches the application's.
  explicit MpiCommunicator(MpiOptions options = MpiOptions::from_env(), MPI_Comm parent = MPI_COMM_WORLD);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  std::string backend() const override { return "mpi"; }

  void allreduce(void* data, size_t count, DType dtype, ReduceOp op) override;
  // The handle must be waited on (or destroyed, which waits) before `data` is
  // reused and before the communicator is destroyed.
  std::unique_ptr<CommHandle> allreduce_async(void* data, size_t count, DType dtype, ReduceOp op) override;
  void broadcast(void* data, size_t count, DType dtype, int root) override;
  void allgather(const void* send, void* recv, size_t count, DType dtype) override;
  void reduce_scatter(const void* send, void* recv, size_t count, DType dtype, ReduceOp op) override;
  void barrier() override;

  MPI_Comm comm() const { return comm_; }
  const MpiOptions& options() const { return options_; }
  int thread_level() const { return thread_level_; }
  bool uses_half_op() const { return half_op_; }
  bool uses_progress_thread() const { return progress_ != nullptr; }
  CollectiveWatchdog& watchdog() { return *watchdog_; }
  // Runs on the watchdog thread before MPI_Abort (the NCCL backend aborts its communicator here).
  void set_pre_abort(std::function<void()> fn);

 private:
  void check_thread(const char* op) const;
  [[noreturn]] void fail(const char* mpi_call, const std::string& what, int err) const;

  MpiOptions options_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  int thread_level_ = MPI_THREAD_SINGLE;
  bool half_op_ = false;
  std::thread::id owner_;
  std::shared_ptr<std::function<void()>> pre_abort_;
  std::shared_ptr<CollectiveWatchdog> watchdog_;
  std::shared_ptr<MpiProgressEngine> progress_;
  std::vector<float> scratch_;  // FP32 staging for f16/bf16 (blocking ops)

  friend class MpiAllreduceHandle;
};

}  // namespace strata
