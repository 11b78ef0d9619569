// NcclHandle and the stream-ordered end of watchdog tickets (see nccl_handle.h).
#include "distributed/cuda/nccl_handle.h"

#include "base/error.h"
#include "kernels/cuda/runtime.h"

namespace strata::nccl_detail {

NcclHandle::NcclHandle(cudaEvent_t event, std::string what,
                       std::function<void(const std::string&)> check_async)
    : ev_(event), what_(std::move(what)), check_async_(std::move(check_async)) {}

NcclHandle::~NcclHandle() {
  if (!complete_) cudaEventSynchronize(ev_);  // the caller may reuse the buffer once this returns
  cudaEventDestroy(ev_);                      // a pending event is released by CUDA when it fires
}

void NcclHandle::check() {
  if (!error_.empty()) return;
  try {
    check_async_(what_);
  } catch (const CommError& e) {
    error_ = e.what();
  }
}

bool NcclHandle::test() {
  if (complete_) return true;
  if (cudaEventQuery(ev_) == cudaErrorNotReady) return false;
  complete_ = true;
  check();
  return true;
}

void NcclHandle::wait() {
  if (!complete_) {
    cuda::note_host_sync();  // counted with the backend's own (kernels/cuda/runtime.h)
    cudaError_t e = cudaEventSynchronize(ev_);
    if (e != cudaSuccess)
      error_ = std::string("cudaEventSynchronize (") + what_ + "): " + cudaGetErrorString(e);
    complete_ = true;
    check();
  }
  if (!error_.empty()) throw CommError(error_);
}

void NcclHandle::order_before(StreamId stream) {
  if (!complete_) {
    cudaError_t e = cudaStreamWaitEvent(reinterpret_cast<cudaStream_t>(stream), ev_, 0);
    if (e != cudaSuccess)
      error_ = std::string("cudaStreamWaitEvent (") + what_ + "): " + cudaGetErrorString(e);
    complete_ = true;
    check();
  }
  if (!error_.empty()) throw CommError(error_);
}

namespace {

struct TicketEnd {
  CollectiveWatchdog* watchdog;
  uint64_t ticket;
};

// Runs on a CUDA driver thread: no CUDA calls here.
void CUDART_CB end_ticket(void* p) {
  auto* t = static_cast<TicketEnd*>(p);
  t->watchdog->end(t->ticket);
  delete t;
}

}  // namespace

void end_ticket_on_stream(CollectiveWatchdog& w, uint64_t ticket, cudaStream_t stream,
                          const std::string& what) {
  auto* t = new TicketEnd{&w, ticket};
  cudaError_t e = cudaLaunchHostFunc(stream, end_ticket, t);
  if (e == cudaSuccess) return;
  delete t;
  w.end(ticket);
  throw CommError("cudaLaunchHostFunc (" + what + "): " + cudaGetErrorString(e));
}

}  // namespace strata::nccl_detail
