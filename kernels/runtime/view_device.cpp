#include "kernels/runtime/view_device.h"

#include <string>

#include "base/error.h"

namespace strata {
namespace {

std::string role_of(const ViewRole& r, size_t i) {
  return r.indexed ? std::string(r.name) + " " + std::to_string(i) : std::string(r.name);
}

}  // namespace

Device common_device(const char* what, std::initializer_list<ViewRole> roles) {
  const ViewRole* first_role = nullptr;
  size_t first_index = 0;
  Device d = Device::cpu;
  for (const ViewRole& r : roles) {
    for (size_t i = 0; i < r.count; ++i) {
      const TensorView& v = r.views[i];
      if (!v.defined()) continue;
      if (!first_role) {
        first_role = &r;
        first_index = i;
        d = v.device;
      } else if (v.device != d) {
        throw Error(std::string(what) + ": " + role_of(r, i) + " is on " + device_name(v.device) + " but " +
                    role_of(*first_role, first_index) + " is on " + device_name(d) +
                    " (mixed devices; move tensors with .to(Device))");
      }
    }
  }
  return d;
}

}  // namespace strata
