// DeviceFeeder: the trainer's input stage. It takes a BatchSource's host
// batches and copies each to the model's device on the copy stream of a
// CopyEngine, double-buffered: while the device computes on batch k, batch
// k+1's copy runs. Each copy is followed by a fence; the compute stream waits
// on it (the host does not), and a HostBatch goes back to the source (is passed
// to next() again) only once the fence of its copy has passed, since the DMA
// reads page-locked host memory after copy_to_device() returns. So at most two
// batches are in flight: the one handed out and the one being copied.
//
// With a pass-through engine (the CPU) the host batches are handed through as
// they are, one at a time: the path is what it was without a feeder. Such a
// batch has an owner (FedBatch::owner), so the task's tensors wrap its bytes
// instead of copying them. The next next() refills the same HostBatch only when
// nothing holds it any more (the step's tensors and autograd graph are gone, as
// they are by then in the trainer and the evaluator); a batch still held stays
// with its holders and the source fills a new one, so a wrapped tensor never
// sees its bytes overwritten or freed.
//
// The source runs one batch ahead of what next() handed out; position() is the
// position after the last batch handed out, what a checkpoint must record. An
// error of the source's next() while it prefetches is rethrown by the next()
// that would have handed that batch out.
#pragma once
#include <exception>
#include <memory>
#include <optional>
#include <vector>

#include "core/batch_source.h"
#include "core/tensor.h"
#include "kernels/runtime/copy_engine.h"
#include "train/trainer/fed_batch.h"

namespace strata {

class DeviceFeeder {
 public:
  // Starts with nothing in flight: call after the source's start_epoch() or
  // restore(). `engine` outlives the feeder.
  DeviceFeeder(BatchSource& source, CopyEngine& engine);
  // Waits for its copies (they read host buffers it owns).
  ~DeviceFeeder();
  DeviceFeeder(const DeviceFeeder&) = delete;
  DeviceFeeder& operator=(const DeviceFeeder&) = delete;

  // The next batch of the source's epoch, valid until the next call; nullopt at
  // its end. Its device fields may be read by compute work queued from now on.
  std::optional<FedBatch> next();
  SourcePosition position() const;
  const BatchSource& source() const { return source_; }

 private:
  struct Slot {
    HostBatch host;
    std::vector<Tensor> device;             // one per host field
    std::unique_ptr<StreamFence> copied;    // after the copies of `host` into `device`
    std::unique_ptr<StreamFence> computed;  // after the compute work that read `device`
  };
  // Takes the source's next batch into slots_[s] and queues its copy; false at the end.
  bool fetch(int s);
  void ensure_device_fields(Slot& slot);

  BatchSource& source_;
  CopyEngine& engine_;
  Slot slots_[2];
  std::shared_ptr<HostBatch> host_;  // the pass-through path's batch (see above)
  int handed_ = -1;                  // the slot handed out last
  int ahead_ = -1;                   // the slot whose batch is copied and not yet handed out
  bool ended_ = false;
  std::exception_ptr error_;       // of a prefetch, for the next next()
  SourcePosition ahead_position_;  // the source's position before the prefetch
};

}  // namespace strata
