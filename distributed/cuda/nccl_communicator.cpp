// NcclCommunicator (see nccl_communicator.h). Bootstraps over an MpiCommunicator,
// which also provides the watchdog, barrier and rank/local-rank facts.
#include "distributed/cuda/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include "base/error.h"
#include "distributed/cuda/half_convert.h"
#include "distributed/mpi_communicator.h"
#include "distributed/mpi_detail.h"

namespace strata {
namespace {

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::f32:
      return ncclFloat32;
    case DType::f16:
      return ncclFloat16;
    case DType::bf16:
      return ncclBfloat16;
    case DType::f64:
      return ncclFloat64;
    case DType::i32:
      return ncclInt32;
    case DType::i64:
      return ncclInt64;
    case DType::u8:
      return ncclUint8;
  }
  return ncclFloat32;
}

class NcclCommunicator;

class NcclHandle final : public CommHandle {
 public:
  NcclHandle(NcclCommunicator& c, cudaEvent_t ev, uint64_t ticket, std::string what)
      : c_(c), ev_(ev), ticket_(ticket), what_(std::move(what)) {}
  ~NcclHandle() override;
  bool test() override;
  void wait() override;

 private:
  void finish();
  NcclCommunicator& c_;
  cudaEvent_t ev_;
  uint64_t ticket_;
  std::string what_;
  bool finished_ = false;
  std::string error_;
};

class NcclCommunicator final : public Communicator {
 public:
  explicit NcclCommunicator(const LaunchEnv& env) : mpi_(std::make_unique<MpiCommunicator>()) {
    int n = 0;
    cudaError_t ce = cudaGetDeviceCount(&n);
    if (ce != cudaSuccess)
      throw CommError("backend 'nccl' on rank " + std::to_string(rank()) + ": no CUDA device (" +
                      cudaGetErrorString(ce) + ")");
    LaunchEnv e = env;
    e.rank = mpi_->rank();
    e.local_rank = mpi_->local_rank();
    device_ = select_device(e, n);
    cuda(cudaSetDevice(device_), "cudaSetDevice");
    ncclUniqueId id{};
    if (rank() == 0) nccl(ncclGetUniqueId(&id), "ncclGetUniqueId", "init");
    mpi_->broadcast(&id, sizeof id, DType::u8, 0);
    {
      CollectiveWatchdog::Scope g(mpi_->watchdog(), "ncclCommInitRank");
      nccl(ncclCommInitRank(&comm_, size(), id, rank()), "ncclCommInitRank", "init");
    }
    cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    cuda(cudaEventCreateWithFlags(&caller_ready_, cudaEventDisableTiming), "cudaEventCreate");
    ncclComm_t c = comm_;
    mpi_->set_pre_abort([c] { ncclCommAbort(c); });
  }

  ~NcclCommunicator() override {
    mpi_->set_pre_abort(nullptr);
    cudaStreamSynchronize(stream_);
    ncclCommDestroy(comm_);
    cudaEventDestroy(caller_ready_);
    cudaStreamDestroy(stream_);
  }

  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  int local_rank() const override { return mpi_->local_rank(); }
  int local_size() const override { return mpi_->local_size(); }
  std::string backend() const override { return "nccl"; }

  void allreduce(void* data, size_t count, DType dtype, ReduceOp op) override {
    if (count == 0) return;
    std::string what = mpi_detail::describe("allreduce", count, dtype, &op);
    CollectiveWatchdog::Scope g(mpi_->watchdog(), what);
    enqueue_allreduce(data, count, dtype, op, what);
    sync(what);
  }

  std::unique_ptr<CommHandle> allreduce_async(void* data, size_t count, DType dtype, ReduceOp op) override {
    std::string what = mpi_detail::describe("allreduce_async", count, dtype, &op);
    uint64_t ticket = mpi_->watchdog().begin(what);
    if (count) enqueue_allreduce(data, count, dtype, op, what);
    cudaEvent_t ev;
    cuda(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate");
    cuda(cudaEventRecord(ev, stream_), "cudaEventRecord");
    return std::make_unique<NcclHandle>(*this, ev, ticket, what);
  }

  void broadcast(void* data, size_t count, DType dtype, int root) override {
    if (count == 0) return;
    std::string what = mpi_detail::describe("broadcast", count, dtype) + " root=" + std::to_string(root);
    CollectiveWatchdog::Scope g(mpi_->watchdog(), what);
    after_caller();
    nccl(ncclBroadcast(data, data, count, nccl_type(dtype), root, comm_, stream_), "ncclBroadcast", what);
    sync(what);
  }

  void allgather(const void* send, void* recv, size_t count, DType dtype) override {
    if (count == 0) return;
    std::string what = mpi_detail::describe("allgather", count, dtype);
    CollectiveWatchdog::Scope g(mpi_->watchdog(), what);
    after_caller();
    nccl(ncclAllGather(send, recv, count, nccl_type(dtype), comm_, stream_), "ncclAllGather", what);
    sync(what);
  }

  void reduce_scatter(const void* send, void* recv, size_t count, DType dtype, ReduceOp op) override {
    if (count == 0) return;
    std::string what = mpi_detail::describe("reduce_scatter", count, dtype, &op);
    CollectiveWatchdog::Scope g(mpi_->watchdog(), what);
    after_caller();
    ncclRedOp_t rop = op == ReduceOp::sum ? ncclSum : ncclAvg;
    if (!is_half(dtype)) {
      nccl(ncclReduceScatter(send, recv, count, nccl_type(dtype), rop, comm_, stream_), "ncclReduceScatter",
           what);
      sync(what);
      return;
    }
    size_t total = count * static_cast<size_t>(size());
    float* tmp = nullptr;
    cuda(cudaMallocAsync(reinterpret_cast<void**>(&tmp), (total + count) * sizeof(float), stream_),
         "cudaMallocAsync");
    bool bf16 = dtype == DType::bf16;
    nccl_detail::half_to_f32_device(bf16, send, tmp, total, stream_);
    nccl(ncclReduceScatter(tmp, tmp + total, count, ncclFloat32, rop, comm_, stream_), "ncclReduceScatter",
         what);
    nccl_detail::f32_to_half_device(bf16, tmp + total, recv, count, 1.0f, stream_);
    cuda(cudaFreeAsync(tmp, stream_), "cudaFreeAsync");
    sync(what);
  }

  void barrier() override {
    cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    mpi_->barrier();
  }

  CollectiveWatchdog& watchdog() { return mpi_->watchdog(); }
  void check_async(const std::string& what) {
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm_, &async);
    if (async != ncclSuccess) nccl(async, "NCCL (asynchronous error)", what);
  }
  [[noreturn]] void fail_cuda(cudaError_t e, const char* call, const std::string& what) {
    throw CommError(std::string(call) + " failed on rank " + std::to_string(rank()) + " (" + what +
                    "): " + cudaGetErrorString(e));
  }

 private:
  void cuda(cudaError_t e, const char* call) {
    if (e != cudaSuccess) fail_cuda(e, call, "device " + std::to_string(device_));
  }
  void nccl(ncclResult_t r, const char* call, const std::string& what) {
    if (r == ncclSuccess || r == ncclInProgress) return;
    std::string last = comm_ ? ncclGetLastError(comm_) : "";
    throw CommError(std::string(call) + " failed on rank " + std::to_string(rank()) + " (" + what +
                    "): " + ncclGetErrorString(r) + (last.empty() ? "" : ": " + last));
  }
  // The comm stream waits for work the caller queued on the legacy default stream.
  void after_caller() {
    cuda(cudaEventRecord(caller_ready_, cudaStreamLegacy), "cudaEventRecord");
    cuda(cudaStreamWaitEvent(stream_, caller_ready_, 0), "cudaStreamWaitEvent");
  }
  void sync(const std::string& what) {
    cudaError_t e = cudaStreamSynchronize(stream_);
    if (e != cudaSuccess) fail_cuda(e, "cudaStreamSynchronize", what);
    check_async(what);
  }
  // Half dtypes go through an FP32 staging buffer allocated and freed in stream order.
  void enqueue_allreduce(void* data, size_t count, DType dtype, ReduceOp op, const std::string& what) {
    after_caller();
    ncclRedOp_t rop = op == ReduceOp::sum ? ncclSum : ncclAvg;
    if (!is_half(dtype)) {
      nccl(ncclAllReduce(data, data, count, nccl_type(dtype), rop, comm_, stream_), "ncclAllReduce", what);
      return;
    }
    float* tmp = nullptr;
    cuda(cudaMallocAsync(reinterpret_cast<void**>(&tmp), count * sizeof(float), stream_), "cudaMallocAsync");
    bool bf16 = dtype == DType::bf16;
    nccl_detail::half_to_f32_device(bf16, data, tmp, count, stream_);
    nccl(ncclAllReduce(tmp, tmp, count, ncclFloat32, rop, comm_, stream_), "ncclAllReduce", what);
    nccl_detail::f32_to_half_device(bf16, tmp, data, count, 1.0f, stream_);
    cuda(cudaFreeAsync(tmp, stream_), "cudaFreeAsync");
  }

  std::unique_ptr<MpiCommunicator> mpi_;
  int device_ = 0;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t caller_ready_ = nullptr;
};

NcclHandle::~NcclHandle() {
  if (!finished_) {
    cudaEventSynchronize(ev_);
    finish();
  }
  cudaEventDestroy(ev_);
}

bool NcclHandle::test() {
  if (finished_) return true;
  if (cudaEventQuery(ev_) == cudaErrorNotReady) return false;
  finish();
  return true;
}

void NcclHandle::wait() {
  if (!finished_) {
    cudaError_t e = cudaEventSynchronize(ev_);
    if (e != cudaSuccess)
      error_ = std::string("cudaEventSynchronize (") + what_ + "): " + cudaGetErrorString(e);
    finish();
  }
  if (!error_.empty()) throw CommError(error_);
}

void NcclHandle::finish() {
  finished_ = true;
  c_.watchdog().end(ticket_);
  if (error_.empty()) {
    try {
      c_.check_async(what_);
    } catch (const CommError& e) {
      error_ = e.what();
    }
  }
}

}  // namespace

NcclAvailability nccl_availability() {
  NcclAvailability a;
  cudaError_t e = cudaGetDeviceCount(&a.device_count);
  if (e != cudaSuccess) {
    a.device_count = 0;
    a.reason = std::string("no CUDA device: ") + cudaGetErrorString(e);
  } else if (a.device_count == 0) {
    a.reason = "no CUDA device: cudaGetDeviceCount returned 0";
  } else {
    a.ok = true;
  }
  return a;
}

std::unique_ptr<Communicator> make_nccl_communicator(const LaunchEnv& env) {
  NcclAvailability a = nccl_availability();
  if (!a.ok) throw CommError("backend 'nccl': " + a.reason);
  return std::make_unique<NcclCommunicator>(env);
}

}  // namespace strata
