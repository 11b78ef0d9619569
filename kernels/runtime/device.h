// Where a buffer lives. One GPU per process (the rank's, chosen at start-up by
// cudaSetDevice), so a device is a kind, not a (kind, index) pair.
#pragma once
#include <cstdint>

namespace strata {

enum class Device : uint8_t { cpu, cuda };

inline const char* device_name(Device d) { return d == Device::cpu ? "cpu" : "cuda"; }

}  // namespace strata
