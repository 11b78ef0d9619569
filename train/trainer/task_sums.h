// TaskSums: a task's running sums (loss x items, hits, items) kept where the
// model runs. The figures a batch produces on the device (its loss, its top-1
// and top-5 hits) are added there by tiny device ops, the ones the host knows
// (items, rows) on the host, and read() brings the device part back in one
// copy: a GPU step then never waits for its own loss, and the host reads the
// sums at logging, evaluation and checkpoint points only (docs/gpu.md). On the
// CPU the same code adds in the same order as the host loop it replaced, so
// every figure is bit-identical to before.
#pragma once
#include <cstddef>
#include <vector>

#include "core/tensor.h"

namespace strata {

class TaskSums {
 public:
  TaskSums() = default;
  // n sums, all zero, the device part on `device`.
  TaskSums(size_t n, Device device);

  size_t size() const { return host_.size(); }
  bool empty() const { return host_.empty(); }
  Device device() const { return device_; }

  // sums[i] += value: a figure the host knows (items, rows).
  void add(size_t i, double value);
  // sums[i] += alpha * x, x a floating scalar on the sums' device (a mean loss).
  void add_scaled(size_t i, const Tensor& x, double alpha);
  // sums[top1] += rows whose label is the top class of `logits` (B, C);
  // sums[top5] += rows whose label is in the top five, unless top5 == npos.
  void add_hits(size_t top1, size_t top5, const Tensor& logits, const Tensor& labels);
  static constexpr size_t npos = static_cast<size_t>(-1);

  // The sums: host part + device part, one device-to-host read when anything
  // was added on the device since the last read.
  std::vector<double> read() const;
  // Starts from `values` (a resumed epoch's sums); later adds continue from them
  // in the order they would have.
  void assign(const std::vector<double>& values);
  void zero();

 private:
  TensorView slot(size_t i) const;

  Device device_ = Device::cpu;
  std::vector<double> host_;
  Tensor on_device_;  // f64 [n]
  mutable std::vector<double> last_read_;
  mutable bool dirty_ = false;
};

}  // namespace strata
