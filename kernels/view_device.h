// The device a call's views share: the dispatchers of kernels/device_ops.cpp
// and kernels/metric_ops.cpp pick an implementation by it. Undefined (or null)
// views are passed over; views on two devices are an Error naming `what` (e.g.
// "device op axpy") and both devices. No defined view: the CPU.
#pragma once
#include <initializer_list>

#include "kernels/tensor_view.h"

namespace strata {

Device common_device(const char* what, std::initializer_list<const TensorView*> views);

}  // namespace strata
