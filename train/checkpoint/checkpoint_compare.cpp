#include "train/checkpoint/checkpoint_compare.h"

#include <cstring>

namespace strata {
namespace {

// The first difference between two tensor maps, "" when none; counts what it compared.
std::string compare_maps(const char* what, const std::map<std::string, Tensor>& a,
                         const std::map<std::string, Tensor>& b, CheckpointComparison& c) {
  for (auto& [name, t] : a)
    if (!b.count(name)) return std::string(what) + " tensor " + name + " is only in the first";
  for (auto& [name, t] : b)
    if (!a.count(name)) return std::string(what) + " tensor " + name + " is only in the second";
  for (auto& [name, ta] : a) {
    const Tensor ha = ta.to(Device::cpu).contiguous(), hb = b.at(name).to(Device::cpu).contiguous();
    const std::string where = std::string(what) + " tensor " + name + ": ";
    if (ha.dtype() != hb.dtype() || ha.shape() != hb.shape()) return where + ha.str() + " vs " + hb.str();
    const size_t bytes = static_cast<size_t>(ha.numel()) * dtype_size(ha.dtype());
    const auto* pa = static_cast<const unsigned char*>(ha.raw_data());
    const auto* pb = static_cast<const unsigned char*>(hb.raw_data());
    if (bytes && std::memcmp(pa, pb, bytes) != 0) {
      const size_t es = dtype_size(ha.dtype());
      size_t i = 0;
      while (std::memcmp(pa + i * es, pb + i * es, es) == 0) ++i;
      const std::vector<float> va = ha.to_float_vector(), vb = hb.to_float_vector();
      return where + "element " + std::to_string(i) + " is " + std::to_string(va[i]) + " vs " +
             std::to_string(vb[i]);
    }
    c.tensors++;
    c.values += ha.numel();
  }
  return "";
}

}  // namespace

CheckpointComparison compare_checkpoints(const Checkpoint& a, const Checkpoint& b) {
  CheckpointComparison c;
  c.first_difference = compare_maps("model", a.model, b.model, c);
  if (c.first_difference.empty()) c.first_difference = compare_maps("optimizer", a.optimizer, b.optimizer, c);
  if (c.first_difference.empty())
    for (auto& [k, v] : a.ints) {
      // the run's starts (world_sizes.*: when and on how many ranks) are its history, not its state:
      // a resumed run has one more than an uninterrupted one
      if (k.rfind("world_sizes.", 0) == 0) continue;
      if (!b.ints.count(k) || b.ints.at(k) != v) {
        c.first_difference = "trainer counter " + k + ": " + std::to_string(v) + " vs " +
                             (b.ints.count(k) ? std::to_string(b.ints.at(k)) : std::string("missing"));
        break;
      }
    }
  c.identical = c.first_difference.empty();
  return c;
}

}  // namespace strata
