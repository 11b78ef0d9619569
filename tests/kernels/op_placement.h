// Where a test run's buffers live. The harness keeps every buffer on the host
// (tests/kernels/op_harness.h Buffer: data, then a sentinel guard); a run on a
// device backend works on device copies of those bytes, guard included, and
// copies them back afterwards, so the same sentinel and NaN checks see what the
// device kernel wrote. Device memory comes from kernels/runtime/allocator.h and moves
// through the device ops (kernels/device_ops_backends.h), so test code needs no
// CUDA headers.
#pragma once
#include <map>
#include <memory>

#include "kernels/runtime/tensor_view.h"

namespace strata {
class Allocator;
}

namespace strata::testing {

struct Buffer;

class Placement {
 public:
  // Copies bytes between a host view and a device view (both u8, same numel).
  using CopyFn = void (*)(const TensorView& src, const TensorView& dst);
  // allocator_for(d) and the CUDA device ops' copy.
  explicit Placement(Device d);
  // Any memory and copy (the harness test places into a fake device this way).
  Placement(Device d, Allocator& alloc, CopyFn copy);
  ~Placement();
  Placement(const Placement&) = delete;
  Placement& operator=(const Placement&) = delete;

  // A view of `b` on this placement's device: b.view itself on the cpu (and for
  // an undefined view); else a device copy of all of b.bytes, guard included.
  TensorView place(const Buffer& b);
  // Copies the device copy of `b` (data and guard) back into b.bytes; no-op on the cpu.
  void fetch(Buffer& b);

 private:
  struct Block;
  Device device_;
  Allocator* alloc_ = nullptr;  // null on the cpu
  CopyFn copy_ = nullptr;
  std::map<const Buffer*, std::unique_ptr<Block>> blocks_;
};

}  // namespace strata::testing
