// GradBucket (see grad_bucket.h).
#include "distributed/grad_bucket.h"

#include "base/error.h"
#include "core/storage.h"
#include "kernels/device_ops.h"
#include "kernels/runtime/allocator.h"

namespace strata {

GradBucket::GradBucket(const std::vector<size_t>& sizes, DType reduce_dtype, Device device,
                       bool comm_takes_device)
    : sizes_(sizes), dtype_(reduce_dtype) {
  if (!is_floating(reduce_dtype) || reduce_dtype == DType::f64)
    throw ConfigError(
        std::string("distributed.reduce_dtype: gradients are reduced in f32, bf16 or f16, not ") +
        dtype_name(reduce_dtype));
  for (size_t n : sizes_) {
    offsets_.push_back(count_);
    count_ += n;
  }
  const int64_t n = static_cast<int64_t>(count_);
  flat_ = Tensor::zeros({n}, dtype_, device);
  if (device != Device::cpu && !comm_takes_device)
    host_ = Tensor::from_storage(
        std::make_shared<Storage>(count_ * dtype_size(dtype_), pinned_host_allocator()), {n}, dtype_);
}

TensorView GradBucket::slot(size_t i) const {
  char* base = static_cast<char*>(flat_.device_data()) + offsets_[i] * dtype_size(dtype_);
  return TensorView{base, dtype_, {static_cast<int64_t>(sizes_[i])}, flat_.device()};
}

void GradBucket::gather(size_t i, const Tensor& param) {
  Tensor g = param.grad();
  if (!g.defined()) return dev::fill(slot(i), 0.0);  // joins the collective as zeros
  if (g.device() != flat_.device())
    throw Error("gradient sync: the gradient of a " + std::string(device_name(g.device())) +
                " parameter meets a bucket on " + device_name(flat_.device()) +
                " (all parameters must share a device)");
  dev::convert(g.contiguous().view(), slot(i));
}

void GradBucket::gathered() {
  if (host_.defined()) dev::copy(flat_.view(), host_.view());
}

void* GradBucket::comm_data() { return host_.defined() ? host_.device_data() : flat_.device_data(); }

void GradBucket::reduced() {
  if (host_.defined()) dev::copy(host_.view(), flat_.view());
}

void GradBucket::scatter(size_t i, Tensor& param) {
  Tensor g = param.grad();
  if (!g.defined() || !g.is_contiguous()) {
    g = Tensor::empty(param.shape(), g.defined() ? g.dtype() : param.dtype(), param.device());
    param.set_grad(g);
  }
  dev::convert(slot(i), g.view());
}

}  // namespace strata
