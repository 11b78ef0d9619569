#include "train/trainer/task_sums.h"

#include <string>

#include "base/error.h"
#include "kernels/metric_ops.h"

namespace strata {

TaskSums::TaskSums(size_t n, Device device)
    : device_(device),
      host_(n, 0.0),
      on_device_(Tensor::zeros({static_cast<int64_t>(n)}, DType::f64, device)),
      last_read_(n, 0.0) {}

TensorView TaskSums::slot(size_t i) const {
  if (i >= host_.size())
    throw Error("TaskSums: sum " + std::to_string(i) + " of " + std::to_string(host_.size()));
  TensorView v = on_device_.view();
  v.data = static_cast<double*>(v.data) + i;
  v.shape = {};
  return v;
}

void TaskSums::add(size_t i, double value) {
  if (i >= host_.size())
    throw Error("TaskSums: sum " + std::to_string(i) + " of " + std::to_string(host_.size()));
  host_[i] += value;
}

void TaskSums::add_scaled(size_t i, const Tensor& x, double alpha) {
  dev::add_scaled(x.contiguous().view(), alpha, slot(i));
  dirty_ = true;
}

void TaskSums::add_hits(size_t top1, size_t top5, const Tensor& logits, const Tensor& labels) {
  dev::count_hits(logits.contiguous().view(), labels.contiguous().view(), slot(top1),
                  top5 == npos ? TensorView{} : slot(top5));
  dirty_ = true;
}

std::vector<double> TaskSums::read() const {
  if (host_.empty()) return {};
  if (dirty_) {
    const Tensor h = on_device_.to(Device::cpu);  // no copy on the host; one read from a device
    last_read_.assign(h.data<double>(), h.data<double>() + host_.size());
    dirty_ = false;
  }
  std::vector<double> out(host_.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = last_read_[i] + host_[i];
  return out;
}

void TaskSums::assign(const std::vector<double>& values) {
  if (values.empty()) return zero();  // saved before the epoch's first batch
  if (values.size() != host_.size())
    throw Error("TaskSums::assign: " + std::to_string(values.size()) + " values for " +
                std::to_string(host_.size()) + " sums");
  // into the device part, so that device adds continue from the saved value
  // (s0 + a1 + a2 ..., the uninterrupted order); host adds are exact integers
  Tensor v = Tensor::empty({static_cast<int64_t>(values.size())}, DType::f64);
  for (size_t i = 0; i < values.size(); ++i) v.data<double>()[i] = values[i];
  on_device_.copy_(v);
  host_.assign(host_.size(), 0.0);
  last_read_ = values;
  dirty_ = false;
}

void TaskSums::zero() {
  if (host_.empty()) return;
  on_device_.fill_(0.0);
  host_.assign(host_.size(), 0.0);
  last_read_.assign(host_.size(), 0.0);
  dirty_ = false;
}

}  // namespace strata
