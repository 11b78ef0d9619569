// The host's copy engine: nothing runs behind the caller's back, so a copy is a
// memcpy that has finished when it returns and every fence has passed.
#include "kernels/runtime/copy_engine.h"

#include <cstring>

namespace strata {
namespace {

class HostFence final : public StreamFence {};

class CpuCopyEngine final : public CopyEngine {
 public:
  Device device() const override { return Device::cpu; }
  bool pass_through() const override { return true; }
  std::unique_ptr<StreamFence> make_fence() override { return std::make_unique<HostFence>(); }
  void copy_to_device(const void* src, void* dst, size_t bytes) override {
    if (bytes && src != dst) std::memcpy(dst, src, bytes);
  }
  void record_after_copies(StreamFence&) override {}
  void record_after_compute(StreamFence&) override {}
  void copies_wait(StreamFence&) override {}
  void compute_waits(StreamFence&) override {}
  bool passed(StreamFence&) override { return true; }
  void wait(StreamFence&) override {}
};

}  // namespace

std::unique_ptr<CopyEngine> make_cpu_copy_engine() { return std::make_unique<CpuCopyEngine>(); }

std::unique_ptr<CopyEngine> make_copy_engine(Device device) {
  return device == Device::cpu ? make_cpu_copy_engine() : make_cuda_copy_engine();
}

}  // namespace strata
