// NcclCommunicator (see nccl_communicator.h). Bootstraps over an MpiCommunicator,
// which also provides the watchdog, barrier and rank/local-rank facts, and
// reduces every collective whose buffers are host memory.
#include "distributed/cuda/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdlib>

#include "base/error.h"
#include "distributed/cuda/half_convert.h"
#include "distributed/cuda/nccl_handle.h"
#include "distributed/cuda/stream_order.h"
#include "distributed/mpi_communicator.h"
#include "distributed/mpi_detail.h"
#include "kernels/cuda/runtime.h"

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

// Device (or managed) memory goes to NCCL; host memory, pinned or not, to MPI.
bool is_device_memory(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();  // clear the (non-sticky) error, so that no later call reports it
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

// STRATA_NCCL_HALF_REDUCE: native (default) hands f16/bf16 to NCCL as they are;
// convert reduces an FP32 copy.
bool half_native_from_env() {
  const char* v = std::getenv("STRATA_NCCL_HALF_REDUCE");
  if (!v || !*v || std::string(v) == "native") return true;
  if (std::string(v) == "convert") return false;
  throw ConfigError(std::string("STRATA_NCCL_HALF_REDUCE must be native or convert, got '") + v + "'");
}

class NcclCommunicator final : public Communicator, public StreamOrderedCommunicator {
 public:
  explicit NcclCommunicator(const LaunchEnv& env)
      : mpi_(std::make_unique<MpiCommunicator>()), half_native_(half_native_from_env()) {
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
  StreamId collective_stream() const override { return reinterpret_cast<StreamId>(stream_); }

  void allreduce(void* data, size_t count, DType dtype, ReduceOp op) override {
    if (count == 0) return;
    if (!is_device_memory(data)) return mpi_->allreduce(data, count, dtype, op);
    std::string what = mpi_detail::describe("allreduce", count, dtype, &op);
    CollectiveWatchdog::Scope g(mpi_->watchdog(), what);
    enqueue_allreduce(data, count, dtype, op, what);
    sync(what);
  }

  std::unique_ptr<CommHandle> allreduce_async(void* data, size_t count, DType dtype, ReduceOp op) override {
    if (count && !is_device_memory(data)) return mpi_->allreduce_async(data, count, dtype, op);
    std::string what = mpi_detail::describe("allreduce_async", count, dtype, &op);
    cudaEvent_t ev;
    cuda(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate");
    auto handle =
        std::make_unique<nccl_detail::NcclHandle>(ev, what, [this](const std::string& w) { check_async(w); });
    uint64_t ticket = mpi_->watchdog().begin(what);
    try {
      if (count) enqueue_allreduce(data, count, dtype, op, what);
      cuda(cudaEventRecord(ev, stream_), "cudaEventRecord");
    } catch (...) {
      mpi_->watchdog().end(ticket);
      throw;
    }
    nccl_detail::end_ticket_on_stream(mpi_->watchdog(), ticket, stream_, what);
    return handle;
  }

  void broadcast(void* data, size_t count, DType dtype, int root) override {
    if (count == 0) return;
    if (!is_device_memory(data)) return mpi_->broadcast(data, count, dtype, root);
    std::string what = mpi_detail::describe("broadcast", count, dtype) + " root=" + std::to_string(root);
    CollectiveWatchdog::Scope g(mpi_->watchdog(), what);
    after_caller();
    nccl(ncclBroadcast(data, data, count, nccl_type(dtype), root, comm_, stream_), "ncclBroadcast", what);
    sync(what);
  }

  void allgather(const void* send, void* recv, size_t count, DType dtype) override {
    if (count == 0) return;
    std::string what = mpi_detail::describe("allgather", count, dtype);
    if (!on_device(send, recv, what)) return mpi_->allgather(send, recv, count, dtype);
    CollectiveWatchdog::Scope g(mpi_->watchdog(), what);
    after_caller();
    nccl(ncclAllGather(send, recv, count, nccl_type(dtype), comm_, stream_), "ncclAllGather", what);
    sync(what);
  }

  void reduce_scatter(const void* send, void* recv, size_t count, DType dtype, ReduceOp op) override {
    if (count == 0) return;
    std::string what = mpi_detail::describe("reduce_scatter", count, dtype, &op);
    if (!on_device(send, recv, what)) return mpi_->reduce_scatter(send, recv, count, dtype, op);
    CollectiveWatchdog::Scope g(mpi_->watchdog(), what);
    after_caller();
    ncclRedOp_t rop = op == ReduceOp::sum ? ncclSum : ncclAvg;
    if (!is_half(dtype) || half_native_) {
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
    cuda::note_host_sync();
    cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    mpi_->barrier();
  }

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
  // Both buffers on the device (NCCL) or both on the host (MPI); mixed is an error.
  bool on_device(const void* send, const void* recv, const std::string& what) {
    bool s = is_device_memory(send), r = is_device_memory(recv);
    if (s != r)
      throw CommError("backend 'nccl' on rank " + std::to_string(rank()) + " (" + what +
                      "): the send buffer is " + (s ? "device" : "host") + " memory and the receive buffer " +
                      (r ? "device" : "host") + " memory; both must be on the same side");
    return s;
  }
  // The comm stream waits (by event, on the device) for the work the caller queued
  // on the compute stream, where strata's kernels and device ops run, and on the
  // legacy default stream (synchronous cudaMemcpy and friends).
  void after_caller() {
    for (cudaStream_t s : {reinterpret_cast<cudaStream_t>(compute_stream()), cudaStreamLegacy}) {
      cuda(cudaEventRecord(caller_ready_, s), "cudaEventRecord");
      cuda(cudaStreamWaitEvent(stream_, caller_ready_, 0), "cudaStreamWaitEvent");
    }
  }
  void sync(const std::string& what) {
    cuda::note_host_sync();  // counted with the backend's own (kernels/cuda/runtime.h)
    cudaError_t e = cudaStreamSynchronize(stream_);
    if (e != cudaSuccess) fail_cuda(e, "cudaStreamSynchronize", what);
    check_async(what);
  }
  // Half dtypes natively, or (convert) through an FP32 staging buffer allocated
  // and freed in stream order.
  void enqueue_allreduce(void* data, size_t count, DType dtype, ReduceOp op, const std::string& what) {
    after_caller();
    ncclRedOp_t rop = op == ReduceOp::sum ? ncclSum : ncclAvg;
    if (!is_half(dtype) || half_native_) {
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
  bool half_native_;  // f16/bf16 reduced by NCCL as they are (else an FP32 copy)
  int device_ = 0;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t caller_ready_ = nullptr;
};

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
