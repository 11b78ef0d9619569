// The handle of NcclCommunicator::allreduce_async on device buffers: a CUDA event
// recorded on the NCCL stream behind the collective. The watchdog's ticket is not
// the handle's business: a host function queued behind the collective ends it
// when the device gets there (end_ticket_on_stream), so that a handle ordered
// before another stream (StreamOrderedHandle) needs no host wait at all, and a
// collective stuck on the device still trips the watchdog.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <string>

#include "core/communicator.h"
#include "distributed/collective_watchdog.h"
#include "distributed/cuda/stream_order.h"

namespace strata::nccl_detail {

class NcclHandle final : public CommHandle, public StreamOrderedHandle {
 public:
  // Takes `event`; `check_async` throws CommError when NCCL reported an error.
  NcclHandle(cudaEvent_t event, std::string what, std::function<void(const std::string&)> check_async);
  ~NcclHandle() override;  // waits on the host unless complete or ordered
  bool test() override;
  void wait() override;
  void order_before(StreamId stream) override;

 private:
  void check();
  cudaEvent_t ev_;
  std::string what_;
  std::function<void(const std::string&)> check_async_;
  bool complete_ = false;  // the event has fired, or a stream has been ordered after it
  std::string error_;
};

// Ends `ticket` of `w` once the device has finished the work queued on `stream`
// so far (cudaLaunchHostFunc). When the host function cannot be queued the ticket
// ends at once and CommError says why.
void end_ticket_on_stream(CollectiveWatchdog& w, uint64_t ticket, cudaStream_t stream,
                          const std::string& what);

}  // namespace strata::nccl_detail
