// NcclCommunicator (see nccl_communicator.h). Two bootstraps, one implementation:
// over an MpiCommunicator, which also provides the watchdog, barrier and
// rank/local-rank facts and reduces every collective whose buffers are host
// memory; or, for one rank, with no MPI at all (a SingleProcessCommunicator for
// host buffers, a watchdog of its own), so that a GPU machine without an MPI
// runtime still runs NCCL's own kernels.
#include "distributed/cuda/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdio>
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
    case DType::u16:
      break;  // NCCL has no 16-bit integer type
  }
  throw CommError(std::string("no NCCL datatype for ") + dtype_name(t));
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

// How a NcclCommunicator comes up: who handles host buffers, who watches for
// stalls, and how the ranks share NCCL's unique id.
struct Bootstrap {
  std::unique_ptr<Communicator> host;  // host-memory collectives, rank and size facts
  CollectiveWatchdog* watchdog = nullptr;
  MpiCommunicator* mpi = nullptr;  // null for the one-rank bootstrap
  std::unique_ptr<CollectiveWatchdog> own_watchdog;
};

Bootstrap over_mpi() {
  Bootstrap b;
  auto mpi = std::make_unique<MpiCommunicator>();
  b.mpi = mpi.get();
  b.watchdog = &mpi->watchdog();
  b.host = std::move(mpi);
  return b;
}

// One rank, no MPI: the watchdog ends the process itself (there is no MPI_Abort).
Bootstrap single_rank(ncclComm_t* comm) {
  Bootstrap b;
  b.host = std::make_unique<SingleProcessCommunicator>();
  b.own_watchdog =
      std::make_unique<CollectiveWatchdog>(0, comm_timeout_from_env(), [comm](const std::string& m) {
        std::fprintf(stderr, "%s\n", m.c_str());
        if (*comm) ncclCommAbort(*comm);
        std::fflush(nullptr);
        _exit(kWatchdogExitCode);
      });
  b.watchdog = b.own_watchdog.get();
  return b;
}

class NcclCommunicator final : public Communicator, public StreamOrderedCommunicator {
 public:
  // over_mpi: every rank of MPI_COMM_WORLD, the unique id broadcast over MPI.
  // single: one rank, no MPI (make_single_rank_nccl_communicator).
  NcclCommunicator(const LaunchEnv& env, bool single)
      : boot_(single ? single_rank(&comm_) : over_mpi()), half_native_(half_native_from_env()) {
    int n = 0;
    cudaError_t ce = cudaGetDeviceCount(&n);
    if (ce != cudaSuccess)
      throw CommError("backend 'nccl' on rank " + std::to_string(rank()) + ": no CUDA device (" +
                      cudaGetErrorString(ce) + ")");
    LaunchEnv e = env;
    e.rank = host().rank();
    e.local_rank = host().local_rank();
    device_ = select_device(e, n);
    cuda(cudaSetDevice(device_), "cudaSetDevice");
    ncclUniqueId id{};
    if (rank() == 0) nccl(ncclGetUniqueId(&id), "ncclGetUniqueId", "init");
    host().broadcast(&id, sizeof id, DType::u8, 0);
    {
      CollectiveWatchdog::Scope g(watchdog(), "ncclCommInitRank");
      nccl(ncclCommInitRank(&comm_, size(), id, rank()), "ncclCommInitRank", "init");
    }
    cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    cuda(cudaEventCreateWithFlags(&caller_ready_, cudaEventDisableTiming), "cudaEventCreate");
    ncclComm_t c = comm_;
    if (boot_.mpi) boot_.mpi->set_pre_abort([c] { ncclCommAbort(c); });
  }

  ~NcclCommunicator() override {
    if (boot_.mpi) boot_.mpi->set_pre_abort(nullptr);
    cudaStreamSynchronize(stream_);
    ncclCommDestroy(comm_);
    cudaEventDestroy(caller_ready_);
    cudaStreamDestroy(stream_);
  }

  int rank() const override { return host().rank(); }
  int size() const override { return host().size(); }
  int local_rank() const override { return host().local_rank(); }
  int local_size() const override { return host().local_size(); }
  std::string backend() const override { return "nccl"; }
  StreamId collective_stream() const override { return reinterpret_cast<StreamId>(stream_); }

  void allreduce(void* data, size_t count, DType dtype, ReduceOp op) override {
    if (count == 0) return;
    if (!is_device_memory(data)) return host().allreduce(data, count, dtype, op);
    std::string what = mpi_detail::describe("allreduce", count, dtype, &op);
    CollectiveWatchdog::Scope g(watchdog(), what);
    enqueue_allreduce(data, count, dtype, op, what);
    sync(what);
  }

  std::unique_ptr<CommHandle> allreduce_async(void* data, size_t count, DType dtype, ReduceOp op) override {
    if (count && !is_device_memory(data)) return host().allreduce_async(data, count, dtype, op);
    std::string what = mpi_detail::describe("allreduce_async", count, dtype, &op);
    cudaEvent_t ev;
    cuda(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate");
    auto handle =
        std::make_unique<nccl_detail::NcclHandle>(ev, what, [this](const std::string& w) { check_async(w); });
    uint64_t ticket = watchdog().begin(what);
    try {
      if (count) enqueue_allreduce(data, count, dtype, op, what);
      cuda(cudaEventRecord(ev, stream_), "cudaEventRecord");
    } catch (...) {
      watchdog().end(ticket);
      throw;
    }
    nccl_detail::end_ticket_on_stream(watchdog(), ticket, stream_, what);
    return handle;
  }

  void broadcast(void* data, size_t count, DType dtype, int root) override {
    if (count == 0) return;
    if (!is_device_memory(data)) return host().broadcast(data, count, dtype, root);
    std::string what = mpi_detail::describe("broadcast", count, dtype) + " root=" + std::to_string(root);
    CollectiveWatchdog::Scope g(watchdog(), what);
    after_caller();
    nccl(ncclBroadcast(data, data, count, nccl_type(dtype), root, comm_, stream_), "ncclBroadcast", what);
    sync(what);
  }

  void allgather(const void* send, void* recv, size_t count, DType dtype) override {
    if (count == 0) return;
    std::string what = mpi_detail::describe("allgather", count, dtype);
    if (!on_device(send, recv, what)) return host().allgather(send, recv, count, dtype);
    CollectiveWatchdog::Scope g(watchdog(), what);
    after_caller();
    nccl(ncclAllGather(send, recv, count, nccl_type(dtype), comm_, stream_), "ncclAllGather", what);
    sync(what);
  }

  void reduce_scatter(const void* send, void* recv, size_t count, DType dtype, ReduceOp op) override {
    if (count == 0) return;
    std::string what = mpi_detail::describe("reduce_scatter", count, dtype, &op);
    if (!on_device(send, recv, what)) return host().reduce_scatter(send, recv, count, dtype, op);
    CollectiveWatchdog::Scope g(watchdog(), what);
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
    host().barrier();
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

  Communicator& host() const { return *boot_.host; }
  CollectiveWatchdog& watchdog() const { return *boot_.watchdog; }

  ncclComm_t comm_ = nullptr;  // before boot_: the one-rank watchdog's abort reads it
  Bootstrap boot_;
  bool half_native_;  // f16/bf16 reduced by NCCL as they are (else an FP32 copy)
  int device_ = 0;
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
  return std::make_unique<NcclCommunicator>(env, false);
}

std::unique_ptr<Communicator> make_single_rank_nccl_communicator() {
  NcclAvailability a = nccl_availability();
  if (!a.ok) throw CommError("backend 'nccl' (one rank): " + a.reason);
  LaunchEnv e;  // rank 0 of 1; STRATA_DEVICE still picks the device
  e.rank = 0;
  e.size = 1;
  e.local_rank = 0;
  e.local_size = 1;
  return std::make_unique<NcclCommunicator>(e, true);
}

}  // namespace strata
