#include "kernels/view_device.h"

#include <string>

#include "base/error.h"

namespace strata {

Device common_device(const char* what, std::initializer_list<const TensorView*> views) {
  const TensorView* first = nullptr;
  for (const TensorView* v : views) {
    if (!v || !v->defined()) continue;
    if (!first)
      first = v;
    else if (v->device != first->device)
      throw Error(std::string(what) + ": views on " + device_name(first->device) + " and " +
                  device_name(v->device));
  }
  return first ? first->device : Device::cpu;
}

}  // namespace strata
