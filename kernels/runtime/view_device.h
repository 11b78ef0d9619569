// The one check that the views of a call share a device, used by every
// dispatcher (kernel_forward/kernel_backward, the device ops, the metric ops)
// to pick the device whose implementation runs. A call's views come grouped by
// their role in it: a single view ("x", "grad_output"), or an array of views
// ("input", an optimizer's "w"), named "input 1" in errors. Undefined views
// (null data) and absent arrays (a null pointer, e.g. sgd_step's buf without
// momentum) are passed over, so an optional view is a single view that may be
// undefined.
#pragma once
#include <cstddef>
#include <initializer_list>

#include "kernels/runtime/tensor_view.h"

namespace strata {

struct ViewRole {
  const char* name;
  const TensorView* views;  // null: the role is absent
  size_t count;
  bool indexed;  // an array: errors name the view "<name> <index>"

  ViewRole(const char* role, const TensorView& v) : name(role), views(&v), count(1), indexed(false) {}
  ViewRole(const char* role, const TensorView* vs, size_t n)
      : name(role), views(vs), count(vs ? n : 0), indexed(true) {}
};

// The device of the first defined view of the roles, in order; the CPU when no
// view is defined. A defined view on another device is an Error:
//   "<what>: <role> is on <device> but <first role> is on <device> (mixed
//   devices; move tensors with .to(Device))"
// where `what` names the call (an op's name, "device op axpy", "metric op ...").
Device common_device(const char* what, std::initializer_list<ViewRole> roles);

}  // namespace strata
