// Device dispatch, in the spirit of PyTorch's DispatchStub: one object per
// dispatched function holding one function pointer per Device, filled by the
// backends, and a call operator that takes the device. The op table (forward,
// backward), the device ops and the metric ops all dispatch through it; the
// device a call runs on comes from the one views-share-a-device check in
// kernels/runtime/view_device.h.
//
// A family's stubs sit in one struct (OpTableStubs, DeviceOpStubs,
// MetricOpStubs). Each backend fills its column from a registration function
// defined in its own translation unit (kernels/cpu/..., kernels/cuda/..., or
// kernels/cuda_stub/... in a build without CUDA), which names every function
// it registers: a backend missing one fails to link, as kernels/backends.cpp's
// tables do. The registration runs once, on the family's first call
// (registered_stubs below), not from a static initializer: strata_kernels is a
// static library by default and the linker would drop a backend's object file
// that nothing references, static initializer and all.
#pragma once
#include <array>
#include <cstddef>
#include <string>
#include <utility>

#include "base/error.h"
#include "kernels/runtime/device.h"

namespace strata {

inline constexpr size_t kDeviceCount = static_cast<size_t>(Device::cuda) + 1;

template <typename Signature>
class DispatchStub;

template <typename R, typename... Args>
class DispatchStub<R(Args...)> {
 public:
  using Fn = R (*)(Args...);

  // `name` is how errors name the function, e.g. "device op fill".
  explicit constexpr DispatchStub(const char* name) : name_(name) {}

  // Called by a backend's registration function.
  void set(Device d, Fn fn) { table_.at(static_cast<size_t>(d)) = fn; }

  // The implementation for device d; Error naming the function and the device
  // when no backend registered one.
  Fn get(Device d) const {
    const size_t i = static_cast<size_t>(d);
    if (i >= kDeviceCount || !table_[i])
      throw Error(std::string(name_) + ": no implementation registered for device " +
                  (i < kDeviceCount ? device_name(d) : std::to_string(i)));
    return table_[i];
  }

  R operator()(Device d, Args... args) const { return get(d)(std::forward<Args>(args)...); }

  const char* name() const { return name_; }

 private:
  const char* name_;
  std::array<Fn, kDeviceCount> table_{};
};

// A family's stubs, filled by each backend's registration function on the first
// call (thread-safe: a function-local static) and read-only afterwards.
template <typename Stubs, void (*... Register)(Stubs&)>
const Stubs& registered_stubs() {
  static const Stubs stubs = [] {
    Stubs s;
    (Register(s), ...);
    return s;
  }();
  return stubs;
}

}  // namespace strata
