// Pieces shared by the data-parallel tests: the process's MPI communicator, the
// communicator and device the DataParallel suite runs on (MPI + CPU, or -- built
// with STRATA_DDP_NCCL -- NCCL + CUDA, SKIPPED with the reason without enough
// devices), a BatchSource that gives rank r its slice of each global batch, a
// communicator that counts the collectives it forwards, and parameter comparisons.
#pragma once
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "core/batch_source.h"
#include "core/communicator.h"
#include "core/module.h"
#include "distributed/cuda/nccl_communicator.h"
#include "distributed/launch_env.h"
#include "distributed/mpi_communicator.h"
#include "nccl_test_comm.h"

namespace strata::testing {

inline MpiCommunicator& world() {
  static MpiCommunicator c;  // one per process; MPI_Finalize runs at exit
  return c;
}

#ifdef STRATA_DDP_NCCL
inline constexpr Device kDevice = Device::cuda;
// NCCL (tests/support/nccl_test_comm.h: one GPU per local rank, or one rank
// without MPI in test_ddp_nccl_single_rank), or null with the reason.
inline Communicator* suite_comm(std::string& why) {
  return nccl_test_comm(why, [] { return make_communicator("nccl", kDevice); });
}
#else
inline constexpr Device kDevice = Device::cpu;
inline Communicator* suite_comm(std::string&) { return &world(); }
#endif

// Communicator& c for the suite, or the test is SKIPPED with the reason.
#define SUITE_COMM_OR_SKIP(c)                  \
  std::string c##_why;                         \
  Communicator* c##_ptr = suite_comm(c##_why); \
  if (!c##_ptr) GTEST_SKIP() << c##_why;       \
  Communicator& c = *c##_ptr

// Global batch g of size B * world is the samples [g*B*world, (g+1)*B*world) in
// order; rank r gets [g*B*world + r*B, g*B*world + (r+1)*B). No shuffle.
class SliceSource : public BatchSource {
 public:
  SliceSource(std::vector<float> x, std::vector<int64_t> y, int64_t dim, int64_t batch, int rank, int world)
      : x_(std::move(x)), y_(std::move(y)), dim_(dim), batch_(batch), rank_(rank), world_(world) {}
  void start_epoch(int64_t epoch) override {
    epoch_ = epoch;
    next_ = 0;
  }
  bool next(HostBatch& out) override {
    if (next_ >= batches_per_epoch()) return false;
    int64_t first = next_ * batch_ * world_ + rank_ * batch_;
    out.fields.resize(2);
    out.fields[0] = {"image", DType::f32, {batch_, dim_}, {}};
    out.fields[0].bytes.resize(static_cast<size_t>(batch_ * dim_) * 4);
    std::memcpy(out.fields[0].bytes.data(), x_.data() + first * dim_, static_cast<size_t>(batch_ * dim_) * 4);
    out.fields[1] = {"label", DType::i64, {batch_}, {}};
    out.fields[1].bytes.resize(static_cast<size_t>(batch_) * 8);
    std::memcpy(out.fields[1].bytes.data(), y_.data() + first, static_cast<size_t>(batch_) * 8);
    out.size = batch_;
    ++next_;
    return true;
  }
  int64_t batches_per_epoch() const override { return static_cast<int64_t>(y_.size()) / (batch_ * world_); }
  SourcePosition position() const override { return {{"epoch", epoch_}, {"batch", next_}}; }
  void restore(const SourcePosition& p) override {
    epoch_ = p.at("epoch");
    next_ = p.at("batch");
  }
  DataMetrics metrics() const override { return {}; }

 private:
  std::vector<float> x_;
  std::vector<int64_t> y_;
  int64_t dim_, batch_;
  int rank_, world_;
  int64_t epoch_ = 0, next_ = 0;
};

// Forwards to `inner`, counting the gradient-sized collectives.
class CountingCommunicator final : public Communicator {
 public:
  explicit CountingCommunicator(Communicator& inner) : inner_(inner) {}
  std::atomic<int> allreduces{0}, async_allreduces{0};
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string backend() const override { return "counting+" + inner_.backend(); }
  void allreduce(void* d, size_t n, DType t, ReduceOp op) override {
    ++allreduces;
    inner_.allreduce(d, n, t, op);
  }
  std::unique_ptr<CommHandle> allreduce_async(void* d, size_t n, DType t, ReduceOp op) override {
    ++async_allreduces;
    return inner_.allreduce_async(d, n, t, op);
  }
  void broadcast(void* d, size_t n, DType t, int root) override { inner_.broadcast(d, n, t, root); }
  void allgather(const void* s, void* r, size_t n, DType t) override { inner_.allgather(s, r, n, t); }
  void reduce_scatter(const void* s, void* r, size_t n, DType t, ReduceOp op) override {
    inner_.reduce_scatter(s, r, n, t, op);
  }
  void barrier() override { inner_.barrier(); }

 private:
  Communicator& inner_;
};

// max over parameters of max|a - b| / max|b|.
inline double max_rel_diff(const Module& a, const Module& b) {
  auto pa = a.named_parameters(), pb = b.named_parameters();
  double worst = 0;
  for (size_t i = 0; i < pa.size(); ++i) {
    auto va = pa[i].second.to_float_vector(), vb = pb[i].second.to_float_vector();
    double scale = 0, diff = 0;
    for (size_t k = 0; k < va.size(); ++k) {
      scale = std::max(scale, std::fabs(static_cast<double>(vb[k])));
      diff = std::max(diff, std::fabs(static_cast<double>(va[k]) - vb[k]));
    }
    worst = std::max(worst, diff / std::max(scale, 1e-12));
  }
  return worst;
}

// True on every rank when every rank's parameters equal rank 0's bit for bit.
inline bool same_on_every_rank(Communicator& comm, const Module& m) {
  int bad = 0;
  for (auto& [n, t] : m.named_parameters()) {
    auto mine = t.to_float_vector(), root = mine;
    comm.broadcast(root.data(), root.size(), DType::f32, 0);
    if (std::memcmp(mine.data(), root.data(), mine.size() * 4) != 0) bad = 1;
  }
  comm.allreduce(&bad, 1, DType::i32, ReduceOp::sum);
  return bad == 0;
}

}  // namespace strata::testing
