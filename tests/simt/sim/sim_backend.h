// The emulated CUDA backend's op table (sim_backend_table.cpp).
#pragma once
#include "kernels/backends.h"

namespace strata {
const Backend& cuda_sim_backend();
}
