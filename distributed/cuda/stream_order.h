// Stream order between the compute stream and a communicator's own stream, on
// the device (an event recorded on one stream, waited on by the other; the host
// never waits). Declared without CUDA headers so that data_parallel.cpp builds in
// every configuration; implemented in distributed/cuda/stream_order.cpp (CUDA
// builds) and in distributed/cuda_stub, where no tensor can be on a device.
#pragma once
#include "core/communicator.h"
#include "kernels/runtime/allocator.h"

namespace strata {

// The stream every kernel and device op of this process runs on
// (kernels/cuda/context.h), as a StreamId. Throws strata::Error without CUDA.
StreamId compute_stream();

// A communicator whose collectives on device buffers run on a stream of its own,
// each after the work queued on the compute stream before the call (it waits by
// event). Host buffers are still accepted (and reduced elsewhere, see
// nccl_communicator.h). NcclCommunicator is one.
class StreamOrderedCommunicator {
 public:
  virtual ~StreamOrderedCommunicator() = default;
  virtual StreamId collective_stream() const = 0;
};

// The handle of an asynchronous collective on device buffers of a
// StreamOrderedCommunicator.
class StreamOrderedHandle {
 public:
  virtual ~StreamOrderedHandle() = default;
  // Work queued on `stream` from now on runs after the collective has finished on
  // the device; the host does not wait, and the handle is complete for its owner
  // (destroying it waits for nothing). Rethrows an error NCCL has already reported.
  virtual void order_before(StreamId stream) = 0;
};

// Whether `comm` takes device pointers (else device data goes through host copies).
inline StreamOrderedCommunicator* stream_ordered(Communicator& comm) {
  return dynamic_cast<StreamOrderedCommunicator*>(&comm);
}

}  // namespace strata
