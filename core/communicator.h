// Communicator: the collective operations data-parallel training needs. core
// ships the single-process implementation; distributed/ provides MPI and NCCL.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/runtime/dtype.h"

namespace strata {

enum class ReduceOp { sum, avg };

// A non-blocking collective in flight; wait() completes it (and rethrows its error).
class CommHandle {
 public:
  virtual ~CommHandle() = default;
  virtual void wait() = 0;
  virtual bool test() = 0;  // true once complete (does not throw)
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const { return rank(); }
  virtual int local_size() const { return size(); }
  virtual std::string backend() const = 0;  // "single", "mpi", "nccl"

  // In place over `count` elements of `dtype` at `data` (host memory for single/MPI;
  // device memory, or host memory it hands to MPI, for NCCL). How f16/bf16 sums
  // accumulate is the backend's (FP32 for MPI's default; docs/distributed.md).
  virtual void allreduce(void* data, size_t count, DType dtype, ReduceOp op) = 0;
  virtual std::unique_ptr<CommHandle> allreduce_async(void* data, size_t count, DType dtype, ReduceOp op) = 0;
  virtual void broadcast(void* data, size_t count, DType dtype, int root) = 0;
  // recv holds size() * count elements, rank r's contribution at r * count.
  virtual void allgather(const void* send, void* recv, size_t count, DType dtype) = 0;
  // send holds size() * count elements; recv gets this rank's reduced block.
  virtual void reduce_scatter(const void* send, void* recv, size_t count, DType dtype, ReduceOp op) = 0;
  virtual void barrier() = 0;
};

// One process: every collective is the identity (avg over one rank).
class SingleProcessCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "single"; }
  void allreduce(void*, size_t, DType, ReduceOp) override {}
  std::unique_ptr<CommHandle> allreduce_async(void*, size_t, DType, ReduceOp) override;
  void broadcast(void*, size_t, DType, int) override {}
  void allgather(const void* send, void* recv, size_t count, DType dtype) override;
  void reduce_scatter(const void* send, void* recv, size_t count, DType dtype, ReduceOp) override;
  void barrier() override {}
};

}  // namespace strata
