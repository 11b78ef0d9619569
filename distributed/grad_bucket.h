// GradBucket: one bucket's flat buffer for BucketedGradientSync -- the gradients
// of a few parameters side by side, in the reduce dtype, on the parameters'
// device (allocator_for(device)). Gradients are copied in and the averages back
// out with device ops (kernels/device_ops.h: convert on views at offsets of the
// buffer), so a CUDA step makes no host round trip when the communicator takes
// device memory (NCCL). When it does not (MPI with CUDA parameters) a pinned host
// copy of the buffer is what the communicator reduces: one device-to-host copy
// after the gather, one host-to-device copy before the scatter.
#pragma once
#include <cstddef>
#include <vector>

#include "core/module.h"
#include "core/tensor.h"

namespace strata {

class GradBucket {
 public:
  // `sizes[i]`: elements of the bucket's i-th parameter, laid out in that order.
  GradBucket(const std::vector<size_t>& sizes, DType reduce_dtype, Device device, bool comm_takes_device);

  // Parameter i's gradient (any float dtype; absent = zeros) into its slot.
  // Device ops queued on the compute stream; with a host copy, returns when the
  // copy has reached the host.
  void gather(size_t i, const Tensor& param);
  // After the last gather: the host copy, where there is one, is filled.
  void gathered();
  // The buffer the communicator reduces, its element count and dtype.
  void* comm_data();
  size_t count() const { return count_; }
  DType dtype() const { return dtype_; }
  // The device buffer (for Allocator::record_stream).
  void* device_data() { return flat_.device_data(); }

  // Before the scatters: the host copy, where there is one, back onto the device.
  void reduced();
  // Slot i into parameter i's gradient (converted to its dtype; created as zeros
  // of the parameter's dtype where absent; replaced where not contiguous).
  void scatter(size_t i, Tensor& param);

 private:
  TensorView slot(size_t i) const;
  std::vector<size_t> offsets_, sizes_;
  size_t count_ = 0;
  DType dtype_;
  Tensor flat_;  // on the parameters' device
  Tensor host_;  // pinned host copy; undefined unless device flat + host communicator
};

}  // namespace strata
