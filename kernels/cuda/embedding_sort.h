// Keys of the sort-based CUDA embedding backward, plain C++ with STRATA_HD so the
// kernel and the host tests share them. Each id becomes a 32-bit radix-sort key;
// an id outside [0, V) becomes V, which sorts after every valid row and is
// skipped, so a bad id never writes out of bounds. Sorting only the bits that V
// needs makes the sort a couple of passes instead of eight.
#pragma once
#include <cstdint>

#include "kernels/scalar_math.h"

namespace strata::cuda {

STRATA_HD inline uint32_t embedding_sort_key(int64_t id, int64_t rows) {
  return static_cast<uint32_t>(id >= 0 && id < rows ? id : rows);
}

// Bits holding every key in [0, rows]: the radix sort's end_bit.
inline int embedding_sort_bits(int64_t rows) {
  int b = 1;
  while (b < 32 && (int64_t{1} << b) <= rows) ++b;
  return b;
}

}  // namespace strata::cuda
