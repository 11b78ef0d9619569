#include "train/trainer/device_feeder.h"

#include "base/destructor_error.h"
#include "base/error.h"
#include "kernels/runtime/trace_range.h"

namespace strata {

DeviceFeeder::DeviceFeeder(BatchSource& source, CopyEngine& engine) : source_(source), engine_(engine) {
  if (engine_.pass_through()) return;
  for (Slot& s : slots_) {
    s.copied = engine_.make_fence();
    s.computed = engine_.make_fence();
  }
}

DeviceFeeder::~DeviceFeeder() {
  if (engine_.pass_through()) return;
  for (Slot& s : slots_) try {
      engine_.wait(*s.copied);
    } catch (...) {
      // A destructor must not throw (base/destructor_error.h); a failed device
      // fails the next call anyway.
      report_destructor_error("waiting for a batch's host-to-device copy");
    }
}

std::optional<FedBatch> DeviceFeeder::next() {
  if (engine_.pass_through()) {
    // The source overwrites the batch it is given (the loader swaps its buffers
    // into a ring slot that its decode threads refill): only a batch that no
    // tensor wraps any more goes back to it.
    if (!host_ || host_.use_count() > 1) host_ = std::make_shared<HostBatch>();
    if (!source_.next(*host_)) return std::nullopt;
    return FedBatch(std::shared_ptr<const HostBatch>(host_));
  }
  if (ahead_ < 0) {  // the epoch's first batch, or nothing more
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    if (ended_) return std::nullopt;
    const int s = handed_ < 0 ? 0 : 1 - handed_;
    if (!fetch(s)) {
      ended_ = true;
      return std::nullopt;
    }
    ahead_ = s;
  }
  const int k = std::exchange(ahead_, -1);
  // Batch k+1's copy is queued before batch k's compute, so it runs meanwhile.
  ahead_position_ = source_.position();
  try {
    if (fetch(1 - k))
      ahead_ = 1 - k;
    else
      ended_ = true;
  } catch (...) {
    error_ = std::current_exception();
  }
  engine_.compute_waits(*slots_[k].copied);
  handed_ = k;
  return FedBatch(slots_[k].host, slots_[k].device);
}

bool DeviceFeeder::fetch(int s) {
  Slot& slot = slots_[s];
  // The source overwrites these bytes: the DMA must have read them.
  if (!engine_.passed(*slot.copied)) engine_.wait(*slot.copied);
  if (!source_.next(slot.host)) return false;
  ensure_device_fields(slot);
  // The compute that read this slot's device memory (the batch before last, or
  // the memory's previous owner) is queued: the copy waits for it, the host does not.
  engine_.record_after_compute(*slot.computed);
  engine_.copies_wait(*slot.computed);
  TraceRange h2d("h2d");  // where a GPU batch's copy is queued (the tasks' .to() is then a no-op)
  for (size_t f = 0; f < slot.host.fields.size(); ++f) {
    const HostArray& a = slot.host.fields[f];
    engine_.copy_to_device(a.bytes.data(), slot.device[f].device_data(), a.bytes.size());
  }
  engine_.record_after_copies(*slot.copied);
  return true;
}

void DeviceFeeder::ensure_device_fields(Slot& slot) {
  const auto& fields = slot.host.fields;
  slot.device.resize(fields.size());
  for (size_t f = 0; f < fields.size(); ++f) {
    const HostArray& a = fields[f];
    const DType dt = a.dtype;
    if (static_cast<size_t>(a.numel()) * dtype_size(dt) != a.bytes.size())
      throw ShapeError("batch field '" + a.name + "': " + std::to_string(a.bytes.size()) +
                       " bytes for shape " + shape_str(a.shape) + " of " + dtype_name(dt));
    Tensor& t = slot.device[f];
    if (!t.defined() || t.shape() != a.shape || t.dtype() != dt)
      t = Tensor::empty(a.shape, dt, engine_.device());
  }
}

SourcePosition DeviceFeeder::position() const {
  return ahead_ >= 0 || error_ ? ahead_position_ : source_.position();
}

}  // namespace strata
